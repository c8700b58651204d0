import Logging
import ODataCore

/// A storage operation of a ``ResponseCache`` whose failure is counted in ``CacheStatistics/storageFailures``
/// (by kind in ``CacheStatistics/storageFailuresByOperation``) and logged once per kind.
///
/// A failed write never loses more than that write: the entry stays as it was (or absent), and a request that
/// went through a ``CachingTransport`` still gets the server's answer.
public enum CacheStorageOperation: String, Sendable, Hashable, CaseIterable {
    /// Storing a server's answer (``ResponseCache/store(_:for:keepingNewer:)``, or a Redis hit copied locally).
    case write
    /// Writing a 304 refresh at once (``ResponseCache/refresh(for:with304Headers:revalidating:at:)`` of an
    /// answer marked `no-store`).
    case refresh
    /// Removing an entry (``ResponseCache/removeEntry(for:)``, after a 404 or 410).
    case removal
    /// Writing the 304 refreshes held in memory: the background flush, or the one at ``ResponseCache/close()``.
    case refreshFlush
    /// Writing the lookups' recency (LRU) updates held in memory.
    case recencyFlush
    /// Removing an entry that failed authentication or decoding (the lookup is a miss either way).
    case damagedRemoval
    /// Flushing commits to the disk (`fsync`) with ``CacheDurability/periodic(interval:)``, and on close.
    case sync
    /// Clearing the reader slots of killed processes when the cache opens.
    case readerCleanup
}

extension ResponseCache {
    /// Counts a storage failure and logs the first one of its kind. Nothing about the request (no URL, no key)
    /// is logged: the operation and the storage's error only.
    func storageFailed(_ operation: CacheStorageOperation, _ error: any Error) {
        let failure = Self.storageError(error)
        // A cache closed while the operation ran is not a failure of the storage.
        guard failure != .notOpen else { return }
        counters.withLock {
            $0.storageFailures += 1
            $0.storageFailuresByOperation[operation, default: 0] += 1
        }
        let first = loggedFailures.withLock { $0.insert(operation).inserted }
        guard first else { return }
        logger.warning("technical cache storage failed; the cache goes on without this change (logged once per kind, counted in CacheStatistics.storageFailures)", metadata: [
            "operation": .string(operation.rawValue), "error": .string(failure.description),
        ])
    }

    /// The error a failed storage operation throws, counted and logged as `operation`.
    func failure(_ operation: CacheStorageOperation, _ error: any Error) -> CacheError {
        let failure = Self.storageError(error)
        if failure == .storage { storageFailed(operation, failure) }
        return failure
    }
}
