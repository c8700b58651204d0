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
    /// - Throws: `CacheError.keyStore` when the key cannot be read.
    func loadKey() throws -> String?

    /// Stores `key`, replacing any previous one.
    ///
    /// - Parameter key: The key to keep.
    /// - Throws: `CacheError.keyStore` when the key cannot be written.
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
    /// - Throws: `CacheError.keyStore` when the file exists but cannot be read or is empty.
    public func loadKey() throws -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CacheError.keyStore.with(detail: "cannot read the key file \(path)")
        }
        let key = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !key.isEmpty else { throw CacheError.keyStore.with(detail: "the key file \(path) is empty") }
        return key
    }

    /// Writes the key file atomically with mode 0600.
    ///
    /// - Parameter key: The key to keep.
    /// - Throws: `CacheError.keyStore` when the file cannot be written.
    public func saveKey(_ key: String) throws {
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CacheError.keyStore.with(detail: "cannot create \(temporary): errno \(errno)") }
        let bytes = Array(key.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == bytes.count, synced == 0, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw CacheError.keyStore.with(detail: "cannot write the key file \(path): errno \(errno)")
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

/// How a cache (or an offline store) is encrypted.
public enum CacheEncryption: Sendable {
    /// Derive the key from this passphrase.
    case key(String)
    /// Use the key kept by this key store; a random key is generated and saved on first use.
    case keyStore(any KeyStore)
    /// Store plaintext. Only when asked for explicitly; the URL key is then an unkeyed hash.
    case disabled

    /// The passphrase to use, generating and saving a random one in a key store that holds none.
    ///
    /// - Parameter existing: Whether the store already exists (a missing key is then an error).
    /// - Returns: The passphrase, or `nil` for ``disabled``.
    /// - Throws: `CacheError.keyUnavailable` when `existing` and the key store is empty;
    ///   `CacheError.keyStore` when it fails; `.invalidKey` for an empty passphrase.
    func passphrase(existing: Bool) throws -> String? {
        switch self {
        case .key(let key):
            guard !key.isEmpty else { throw CacheError.invalidKey.with(detail: "the encryption key is empty") }
            return key
        case .keyStore(let store):
            if let key = try store.loadKey() { return key }
            if existing { throw CacheError.keyUnavailable }
            let key = FileKeyStore.generateKey()
            try store.saveKey(key)
            return key
        case .disabled:
            return nil
        }
    }
}
