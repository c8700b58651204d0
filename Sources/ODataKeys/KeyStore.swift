import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps the random encryption key of a store that was opened without an explicit key.
///
/// Replace the default ``FileKeyStore`` with a platform secret store when one exists.
public protocol KeyStore: Sendable {
    /// Returns the stored key, or `nil` when none was stored yet.
    ///
    /// - Returns: The key, or `nil`.
    /// - Throws: `KeyError.keyStore` when the key cannot be read.
    func loadKey() throws -> String?

    /// Stores `key`, replacing any previous one.
    ///
    /// - Parameter key: The key to keep.
    /// - Throws: `KeyError.keyStore` when the key cannot be written.
    func saveKey(_ key: String) throws
}

/// A ``KeyStore`` that keeps the key in a file readable and writable by the owner only (0600).
public struct FileKeyStore: KeyStore {
    /// The key file's path.
    public let path: String

    /// Creates a key store backed by the file at `path` (created on the first save).
    ///
    /// - Parameter path: The key file's path.
    public init(path: String) {
        self.path = path
    }

    /// Reads the key file.
    ///
    /// - Returns: The key, or `nil` when the file does not exist.
    /// - Throws: `KeyError.keyStore` when the file exists but cannot be read or is empty.
    public func loadKey() throws(KeyError) -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw KeyError.keyStore.with(detail: "cannot read the key file \(path)")
        }
        let key = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !key.isEmpty else { throw KeyError.keyStore.with(detail: "the key file \(path) is empty") }
        return key
    }

    /// Writes the key file atomically with mode 0600.
    ///
    /// - Parameter key: The key to keep.
    /// - Throws: `KeyError.keyStore` when the file cannot be written.
    public func saveKey(_ key: String) throws(KeyError) {
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw KeyError.keyStore.with(detail: "cannot create \(temporary): errno \(errno)") }
        let bytes = Array(key.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == bytes.count, synced == 0, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw KeyError.keyStore.with(detail: "cannot write the key file \(path): errno \(errno)")
        }
    }

    /// A new random key: 32 bytes from the system's secure generator, base64-encoded.
    ///
    /// - Returns: The key text.
    public static func generateKey() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64EncodedString()
    }
}


extension KeyStore {
    /// The passphrase this key store keeps — the one way from a key store to a passphrase, for the caches and the
    /// offline store alike.
    ///
    /// - Parameter create: Whether to generate a random one (``FileKeyStore/generateKey()``) and save it when the
    ///   store holds none.
    /// - Returns: The passphrase, or `nil` when the store holds none and `create` is false.
    /// - Throws: `KeyError.keyStore` when loading or saving fails (a custom store's own error is its `underlying`).
    public func passphrase(creatingIfMissing create: Bool) throws(KeyError) -> String? {
        let stored: String?
        do { stored = try loadKey() } catch let error as KeyError { throw error } catch {
            throw KeyError.keyStore.with(detail: "the key store cannot load its key: \(type(of: error))", underlying: error)
        }
        if let stored { return stored }
        guard create else { return nil }
        let key = FileKeyStore.generateKey()
        do { try saveKey(key) } catch let error as KeyError { throw error } catch {
            throw KeyError.keyStore.with(detail: "the key store cannot save a new key: \(type(of: error))", underlying: error)
        }
        return key
    }
}
