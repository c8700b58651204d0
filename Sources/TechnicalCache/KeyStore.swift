import Foundation
@_exported public import ODataKeys

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
    func passphrase(existing: Bool) throws(CacheError) -> String? {
        switch self {
        case .key(let key):
            guard !key.isEmpty else { throw CacheError.invalidKey.with(detail: "the encryption key is empty") }
            return key
        case .keyStore(let store):
            let key: String?
            do { key = try store.passphrase(creatingIfMissing: !existing) } catch { throw CacheError(error) }
            guard let key else { throw CacheError.keyUnavailable }
            return key
        case .disabled:
            return nil
        }
    }
}
