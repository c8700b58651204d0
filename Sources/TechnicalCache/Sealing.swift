import Crypto
import Foundation

public import ODataKeys

/// Seals and opens data with AES-256-GCM: a random 96-bit nonce, the ciphertext and a 128-bit tag.
///
/// The authenticated data binds a sealed value to its place (the cache uses the LMDB key), so a
/// ciphertext copied under another key fails to open. Shared by the technical cache and the offline store.
public struct Sealer: Sendable {
    /// The key this sealer uses.
    public let key: SealingKey

    /// Bytes a sealed value adds to its plaintext: a 12-byte nonce and a 16-byte tag.
    public static let overhead = 28

    /// Creates a sealer.
    ///
    /// - Parameter key: The AES-256 key.
    public init(key: SealingKey) {
        self.key = key
    }

    /// Encrypts and authenticates `plaintext`, also authenticating `authenticatedData`.
    ///
    /// - Parameters:
    ///   - plaintext: The bytes to protect.
    ///   - authenticatedData: Bytes that are not stored but must match when opening.
    /// - Returns: `nonce ‖ ciphertext ‖ tag`, ``overhead`` bytes longer than `plaintext`.
    /// - Throws: `CacheError.authenticationFailed` if the cipher refuses the input (not expected).
    public func seal(_ plaintext: some DataProtocol, authenticating authenticatedData: some DataProtocol) throws(CacheError) -> Data {
        do {
            guard let combined = try AES.GCM.seal(plaintext, using: key.symmetricKey, authenticating: authenticatedData).combined else {
                throw CacheError.authenticationFailed.with(detail: "AES-GCM produced no combined box")
            }
            return combined
        } catch let error as CacheError {
            throw error
        } catch {
            throw CacheError.authenticationFailed.with(detail: "AES-GCM seal failed: \(error)", underlying: error)
        }
    }

    /// Checks and decrypts a value made by ``seal(_:authenticating:)``.
    ///
    /// - Parameters:
    ///   - sealed: `nonce ‖ ciphertext ‖ tag`.
    ///   - authenticatedData: The same authenticated data that was given to `seal`.
    /// - Returns: The plaintext.
    /// - Throws: `CacheError.authenticationFailed` when the value is too short, was changed, was sealed
    ///   with another key, or `authenticatedData` differs.
    public func open(_ sealed: some DataProtocol, authenticating authenticatedData: some DataProtocol) throws(CacheError) -> Data {
        guard sealed.count >= Self.overhead else {
            throw CacheError.authenticationFailed.with(detail: "sealed value of \(sealed.count) bytes is shorter than nonce and tag")
        }
        do {
            let box = try AES.GCM.SealedBox(combined: sealed)
            return try AES.GCM.open(box, using: key.symmetricKey, authenticating: authenticatedData)
        } catch {
            throw CacheError.authenticationFailed
        }
    }
}

