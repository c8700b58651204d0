import Crypto
import Foundation
import ODataKeys
#if canImport(Glibc)
import Glibc
#endif

/// The key-check record of a store: a `KeyEnvelope` (KDF, salt, and the store's 64-byte secret sealed under
/// the passphrase's key), or a marker for a plaintext store. It is the one part of a store that must be read
/// before the key is known, so it sits in a file of its own (`keycheck`, mode 0600) beside the SQLCipher
/// database, which is keyed with ``databaseKey(secret:)``. The LMDB format kept the same bytes in its `meta`
/// database; a migration carries them over unchanged, so the same passphrase opens the migrated store.
enum StoreKeyCheck {
    static let plaintextMarker = Array("plaintext-store-v1".utf8)

    /// The SQLCipher key of a store: HKDF-SHA256 of its secret, 32 bytes (SQLCipher's own KDF is not used).
    static func databaseKey(secret: Data) -> [UInt8] {
        let key = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: secret), info: Data("ODataStores offline store SQLCipher key v1".utf8),
                                         outputByteCount: 32)
        return key.withUnsafeBytes { Array($0) }
    }

    /// Opens a stored record with the parameters' key: the store's secret, or `nil` for a plaintext store.
    ///
    /// - Throws: `KeyError` (`.wrongKey`: the key does not open it; ``storeError(_:)`` makes it the store's error),
    ///   `OfflineODataError.wrongKey` (the default key is lost),
    ///   `.encryptionMismatch` (a key for a plaintext store, or none for an encrypted one), `.storage` (corrupt).
    static func open(_ stored: [UInt8], parameters: OfflineODataParameters, directory: String) throws -> Data? {
        if stored == plaintextMarker {
            guard parameters.storeEncryptionKey == nil else {
                throw OfflineODataError(.encryptionMismatch, "the store is not encrypted but an encryption key was given")
            }
            return nil
        }
        let envelope: KeyEnvelope
        do { envelope = try KeyEnvelope(serialized: stored) } catch {
            throw OfflineODataError(.storage, "the store's key-check record is corrupt")
        }
        let passphrase: String
        if let key = parameters.storeEncryptionKey {
            passphrase = key
        } else if parameters.disableDefaultEncryptionKey {
            throw OfflineODataError(.encryptionMismatch, "the store is encrypted; give its storeEncryptionKey")
        } else if let key = try keyStore(parameters, directory).passphrase(creatingIfMissing: false) {
            passphrase = key
        } else {
            throw OfflineODataError(.wrongKey, "the store is encrypted with a default key but the key store holds none")
        }
        let secret = try envelope.open(passphrase: passphrase)
        guard secret.count == 64 else { throw OfflineODataError(.storage, "the store's key material has \(secret.count) bytes, expected 64") }
        return secret
    }

    /// A record for a new store: its bytes and the secret it holds (`nil`: plaintext). A default key is made and
    /// saved in the key store when it holds none.
    static func create(parameters: OfflineODataParameters, directory: String) throws -> (record: [UInt8], secret: Data?) {
        let passphrase: String?
        if let key = parameters.storeEncryptionKey {
            passphrase = key
        } else if parameters.disableDefaultEncryptionKey {
            passphrase = nil
        } else {
            passphrase = try keyStore(parameters, directory).passphrase(creatingIfMissing: true)
        }
        guard let passphrase else { return (plaintextMarker, nil) }
        let secret = randomSecret()
        return (Array(try KeyEnvelope.seal(secret: secret, passphrase: passphrase, derivation: parameters.keyDerivation).serialized), secret)
    }

    /// A new store's secret, wrapped in its key-check record: 64 random bytes (the width every store has had;
    /// the database key is derived from all of them by ``databaseKey(secret:)``).
    private static func randomSecret() -> Data {
        var secret = Data()
        SealingKey.random().withUnsafeBytes { secret.append(contentsOf: $0) }
        SealingKey.random().withUnsafeBytes { secret.append(contentsOf: $0) }
        return secret
    }

    /// The offline store's error for a failure of the key kit (``open(_:parameters:directory:)`` and
    /// ``create(parameters:directory:)`` throw nothing else of it): the kit's detail, which names no key material.
    static func storeError(_ error: KeyError) -> OfflineODataError {
        switch error.kind {
        case .wrongKey: return OfflineODataError(.wrongKey, "the encryption key does not open this store; nothing was changed")
        case .keyUnavailable: return OfflineODataError(.wrongKey, "the store is encrypted with a default key but the key store holds none")
        case .invalidKey, .invalidDerivation: return OfflineODataError(.invalidParameters, error.detail)
        case .keyStore: return OfflineODataError(.storage, "the store's key store failed: \(error.detail)")
        case .corruptEnvelope: return OfflineODataError(.storage, "the store's key-check record is corrupt")
        }
    }

    private static func keyStore(_ parameters: OfflineODataParameters, _ directory: String) -> any KeyStore {
        parameters.keyStore ?? FileKeyStore(path: defaultKeyPath(of: directory))
    }

    /// Where the random default key of the store at `directory` is kept when the parameters give no key store.
    static func defaultKeyPath(of directory: String) -> String { directory + ".key" }

    // MARK: The file

    static func path(in directory: String) -> String { directory + "/keycheck" }

    /// The record in `directory`, or `nil` when there is none.
    static func read(in directory: String) throws -> [UInt8]? {
        let path = path(in: directory)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw OfflineODataError(.storage, "cannot read the store's key-check record \(path)")
        }
        return Array(data)
    }

    /// Writes the record (owner-only) and makes it durable: a temporary file, `fsync`, `rename`.
    static func write(_ record: [UInt8], in directory: String) throws {
        let path = path(in: directory)
        let temporary = path + ".new"
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw OfflineODataError(.storage, "cannot write \(temporary): errno \(errno)") }
        let written = record.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        Glibc.close(fd)
        guard written == record.count, synced == 0, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw OfflineODataError(.storage, "cannot write the store's key-check record \(path): errno \(errno)")
        }
    }
}
