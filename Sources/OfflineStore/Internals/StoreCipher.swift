import Crypto
import ODataCore
import Foundation
import Synchronization
import TechnicalCache

/// Seals every stored value with the TechnicalCache's `Sealer` (AES-256-GCM, the LMDB key as
/// authenticated data) and turns names into keyed hashes, so no entity value, key or URL is
/// stored in plaintext. With encryption disabled it stores plaintext and plain hashes.
struct StoreCipher: Sendable {
    private let sealer: Sealer?
    private let hashKey: HashKey?
    private let prefixes = PrefixCache()

    /// An immutable HMAC key; `SymmetricKey` is not `Sendable`, but nothing mutates it after creation.
    private final class HashKey: @unchecked Sendable {
        let key: SymmetricKey
        init(_ bytes: [UInt8]) { key = SymmetricKey(data: bytes) }
    }

    /// Entity set prefixes computed once per set name.
    private final class PrefixCache: Sendable {
        let values = LockedValue<[String: [UInt8]]>([:])
    }

    /// The material wrapped in the key-check record: 32 bytes sealing key, 32 bytes hash key.
    static func randomSecret() -> Data {
        var secret = Data()
        SealingKey.random().withUnsafeBytes { secret.append(contentsOf: $0) }
        SealingKey.random().withUnsafeBytes { secret.append(contentsOf: $0) }
        return secret
    }

    init(secret: Data?) throws {
        guard let secret else {
            sealer = nil
            hashKey = nil
            return
        }
        guard secret.count == 64 else { throw OfflineODataError(.storage, "the store's key material has \(secret.count) bytes, expected 64") }
        sealer = Sealer(key: try SealingKey(bytes: secret.prefix(32)))
        hashKey = HashKey(Array(secret.suffix(32)))
    }

    var isEncrypted: Bool { sealer != nil }

    func seal(_ plaintext: [UInt8], key: [UInt8]) throws -> [UInt8] {
        guard let sealer else { return plaintext }
        return Array(try sealer.seal(plaintext, authenticating: key))
    }

    func open(_ sealed: [UInt8], key: [UInt8]) throws(OfflineODataError) -> [UInt8] {
        guard let sealer else { return sealed }
        do {
            return Array(try sealer.open(sealed, authenticating: key))
        } catch {
            throw OfflineODataError(.storage, "a stored record failed authentication (tampered, corrupt or under another key)")
        }
    }

    /// The 8-byte keyed hash that starts the LMDB keys of an entity set, cached per set.
    func setPrefix(_ set: String) -> [UInt8] {
        if let cached = prefixes.values.withLock({ $0[set] }) { return cached }
        let prefix = hash("set:" + set, count: 8)
        prefixes.values.withLock { $0[set] = prefix }
        return prefix
    }

    /// A keyed hash of `text`, truncated to `count` bytes.
    func hash(_ text: String, count: Int = 16) -> [UInt8] {
        let data = Data(text.utf8)
        if let hashKey {
            return Array(HMAC<SHA256>.authenticationCode(for: data, using: hashKey.key)).prefix(count).map { $0 }
        }
        return Array(SHA256.hash(data: data)).prefix(count).map { $0 }
    }
}
