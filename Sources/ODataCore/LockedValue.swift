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
/// probe). Sendable by construction: every access to the value happens between lock and unlock.
///
/// The value and its mutex live in one allocation (a `ManagedBuffer`: the value its header, the mutex its one
/// element, at a stable address), as NIO's `LockStorage` does. Copies of a `LockedValue` share that storage,
/// like copies of a class reference. `withLock` is inlinable: each caller gets it specialized, with the closure
/// over the buffer's pointers inlined, rather than a generic call through a closure per lock.
///
/// `@usableFromInline` on the type itself is what makes that so in other modules: Swift 6.3 neither inlines nor
/// specializes an `@inlinable` member of a `package` type across modules unless the type is `@usableFromInline`
/// (without it every caller, concrete or not, called the unspecialized `withLock` and its closure).
@usableFromInline
package struct LockedValue<Value>: @unchecked Sendable {
    @usableFromInline let storage: Storage

    /// The one allocation: the value as the header, the mutex as the only element. The header and element
    /// pointers bypass the run-time exclusivity check (`swift_beginAccess` on every access, a third of an
    /// uncontended lock's cost): the mutex makes every access exclusive.
    @usableFromInline final class Storage: ManagedBuffer<Value, pthread_mutex_t> {
        deinit {
            withUnsafeMutablePointerToElements { mutex in
                pthread_mutex_destroy(mutex)
                mutex.deinitialize(count: 1)
            }
        }
    }

    /// Creates the box around a value.
    /// - Parameter value: the initial value.
    package init(_ value: Value) {
        let buffer = Storage.create(minimumCapacity: 1) { _ in value }
        storage = unsafeDowncast(buffer, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
        }
    }

    /// Runs `body` with exclusive access to the value.
    ///
    /// - Parameter body: The critical section; it must not block or call back into this lock.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    @inlinable
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        try storage.withUnsafeMutablePointers { (value: UnsafeMutablePointer<Value>, mutex: UnsafeMutablePointer<pthread_mutex_t>) throws(Failure) -> Result in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }

    /// Runs `body` with exclusive access to the value if no one holds the lock now; otherwise returns `nil`
    /// at once (`pthread_mutex_trylock`).
    ///
    /// - Parameter body: The critical section.
    /// - Returns: What `body` returns, or `nil` when the lock was held.
    /// - Throws: What `body` throws.
    @inlinable
    package func withLockIfAvailable<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result? {
        try storage.withUnsafeMutablePointers { (value: UnsafeMutablePointer<Value>, mutex: UnsafeMutablePointer<pthread_mutex_t>) throws(Failure) -> Result? in
            guard pthread_mutex_trylock(mutex) == 0 else { return nil }
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }
}
