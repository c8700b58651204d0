import Crypto
import Foundation
import LMDB
import ODataCore
import Synchronization

extension ResponseCache {
    /// Changes the encryption key without losing entries: a new data key re-seals every entry and the
    /// keys are wrapped under the new passphrase, in one transaction.
    ///
    /// - Parameter encryption: The new passphrase or key store (a key store without a key gets a new
    ///   random one).
    /// Rekeying needs the cache to itself: the other processes that have it open hold the old keys.
    ///
    /// - Throws: ``CacheError/notOpen``; ``CacheError/inUseElsewhere`` while another process has the
    ///   cache open (nothing changed); ``CacheError/encryptionMismatch`` when asked to switch
    ///   encryption on or off; ``CacheError/storage`` when the transaction fails (nothing changed).
    public func rekey(to encryption: CacheEncryption) throws {
        let cache = try openCache()
        try cache.lock.makeCacheExclusive()
        defer { cache.lock.makeShared() }
        let old = cache.crypto.withLock { $0 }
        guard old.sealer != nil else {
            throw CacheError.encryptionMismatch.with(detail: "the cache was created without encryption; reset it to encrypt")
        }
        guard let passphrase = try encryption.passphrase(existing: false) else {
            throw CacheError.encryptionMismatch.with(detail: "rekey cannot switch encryption off")
        }
        let newKey = SealingKey.random()
        let secret = newKey.withUnsafeBytes { Data($0) } + old.indexKey.withUnsafeBytes { Data($0) }
        let envelope: KeyEnvelope
        do { envelope = try KeyEnvelope.seal(secret: secret, passphrase: passphrase, derivation: configuration.keyDerivation) } catch { throw CacheError(error) }
        let newSealer = Sealer(key: newKey)
        var failures = 0
        var refreshes = OpenCache.RefreshFlush()
        do {
            try cache.environment.write { txn in
                refreshes = try cache.flushRefreshes(configuration: self.configuration, txn)
                try cache.flushTouches(txn)
                var keys: [[UInt8]] = []
                try txn.withCursor(in: cache.entries) { cursor in
                    while let entry = try cursor.next() { keys.append(entry.key) }
                }
                var total = try cache.readBytes(txn)
                failures = 0
                let oldCrypto = old
                let newCrypto = old.rekeyed(to: newSealer, in: txn.id)
                for key in keys {
                    let opened = try cache.withStoredValue(forKey: key, txn) { buffer in buffer.flatMap { oldCrypto.open($0, key: key) } }
                    guard let entry = opened else {
                        total -= try cache.removeEntry(key, txn)
                        failures += 1
                        continue
                    }
                    let sealed = try newCrypto.seal(entry, key: key)
                    try cache.writeValue(sealed, forKey: key, txn)
                }
                try cache.writeBytes(total, txn)
                try txn.setValue(Array(envelope.serialized), forKey: OpenCache.envelopeKey, in: cache.meta)
                // Swap before the commit: every write after this transaction seals with the new key. A read
                // transaction that began before the commit still opens its values with the old key, which
                // the new keys keep for snapshots older than this transaction (`OpenCache.keys(for:)`).
                cache.crypto.withLock { $0 = newCrypto }
            }
        } catch {
            // Nothing was re-sealed: the old keys again, under a new generation (a write prepared with the
            // new key seals again).
            var restored = old
            restored.generation = old.generation + 2
            cache.crypto.withLock { $0 = restored }
            throw Self.storageError(error)
        }
        cache.hot.removeAll()  // held under the old generation: never answered again
        count(refreshes, cache: cache)
        if failures > 0 { counters.withLock { $0.integrityFailures += failures } }
    }
}
