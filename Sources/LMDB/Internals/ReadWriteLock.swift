#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `pthread_rwlock_t`: transactions hold it shared, closing and resizing the map hold it exclusively.
///
/// > `mdb_env_set_mapsize`: This function may only be called if no transactions are active in the
/// > current process. (lmdb.h)
final class ReadWriteLock: @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    @inline(__always) func lockShared() { pthread_rwlock_rdlock(lock) }
    @inline(__always) func lockExclusive() { pthread_rwlock_wrlock(lock) }
    @inline(__always) func unlock() { pthread_rwlock_unlock(lock) }
}
