#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a `pthread_mutex_t`; every module of the package uses it for shared state.
///
/// It plays the part of `Synchronization.Mutex` (the NIOLockedValueBox idea), but over a pthread mutex,
/// because ThreadSanitizer intercepts `pthread_mutex_lock`, whereas `Mutex` on Linux takes its contended
/// path through futex calls inside the uninstrumented standard library, which ThreadSanitizer cannot see —
/// a correct program then reports false "Swift access races" (reproduced with a four-thread `Mutex`
/// probe). Sendable by construction: every access to `value` happens between lock and unlock.
package final class LockedValue<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Not checked for exclusive access at run time (`swift_beginAccess` on every `withLock`, a third of an
    /// uncontended lock's cost): the mutex makes every access exclusive.
    @exclusivity(unchecked) private var value: Value

    /// Creates the box around a value.
    /// - Parameter value: the initial value.
    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    ///
    /// - Parameter body: The critical section; it must not block or call back into this lock.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Runs `body` with exclusive access to the value if no one holds the lock now; otherwise returns `nil`
    /// at once (`pthread_mutex_trylock`).
    ///
    /// - Parameter body: The critical section.
    /// - Returns: What `body` returns, or `nil` when the lock was held.
    /// - Throws: What `body` throws.
    package func withLockIfAvailable<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
