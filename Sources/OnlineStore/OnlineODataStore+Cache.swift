import TechnicalCache
import Foundation
import ODataCore

/// The technical cache's lifecycle while the store stays open: close, reopen, rekey, reset.
extension OnlineODataStore {
    /// Whether the store was created with a technical cache.
    public var isCacheEnabled: Bool { cache != nil }

    /// Whether the technical cache is open.
    public var isCacheOpen: Bool { cache?.isOpen ?? false }

    /// Closes the cache while the store stays open (for example while the process is idle).
    /// Running requests that use it finish without it.
    public func closeCache() {
        cache?.close()
    }

    /// Reopens the cache with its key.
    /// - Parameter encryptionKey: the passphrase; `nil` uses the options' key (or the generated one).
    /// - Throws: `ODataError` `.invalidState` without a cache; a cache error for a wrong key.
    public func reopenCache(encryptionKey: String? = nil) throws {
        guard let cache else { throw ODataError(.invalidState, "this store has no technical cache") }
        if cache.isOpen { return }
        try cache.open(encryption: encryptionKey.map { .key($0) } ?? initialEncryption)
    }

    /// Changes the cache's encryption key without losing entries (every entry is re-sealed in one
    /// transaction). Afterwards open the cache with the new passphrase (``reopenCache(encryptionKey:)``,
    /// or ``OnlineStoreOptions/cacheEncryptionKey`` for the next store).
    /// - Parameter newKey: the new passphrase.
    /// - Throws: `ODataError` `.invalidState` without a cache; a cache error when the cache is closed,
    ///   not encrypted, or cannot be written (then nothing changed).
    public func rekeyCache(to newKey: String) throws {
        guard let cache else { throw ODataError(.invalidState, "this store has no technical cache") }
        try cache.rekey(to: .key(newKey))
    }

    /// Wipes the cache. Allowed only while the cache is closed.
    /// - Throws: `ODataError` `.invalidState` without a cache; a cache error while it is open.
    public func resetCache() throws {
        guard let cache else { throw ODataError(.invalidState, "this store has no technical cache") }
        try cache.reset()
    }

    /// Waits until the cache entries of the reads answered so far are committed. A read's answer reaches its caller
    /// before its entry commits (the cache's writer commits in groups; until then the entry answers from memory), so
    /// ``statistics`` may not count it yet: call this first where that matters (tests, a graceful shutdown). Returns
    /// at once without a cache. ``close()`` writes them too.
    public func waitForCacheWrites() async {
        await cache?.flushPendingWrites()
    }

    /// The encryption the cache opens with: none when switched off, the options' key or key store, else the key file.
    var initialEncryption: CacheEncryption {
        if options.disableCacheEncryption { return .disabled }
        if let key = options.cacheEncryptionKey { return .key(key) }
        if let keyStore = options.cacheKeyStore { return .keyStore(keyStore) }
        return .keyStore(cache?.defaultKeyStore ?? FileKeyStore(path: options.storeDirectory.appendingPathComponent(options.storeName + ".key").path))
    }
}
