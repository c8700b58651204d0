#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Who may use a store's files, between processes and inside one: the one lock of both stores (the
/// technical cache's directory, `cache.lock` inside it; an offline store, `storeName.lock` beside its
/// directory).
///
/// - In this process, a lock file is held by at most one ``StorageLock`` (a registry of canonical
///   lock-file paths): a second open of the same files is refused with ``Failure/Kind-swift.enum/heldInThisProcess``.
///   Two lock files in one directory are two locks.
/// - Between processes, POSIX record locks on the lock file (`fcntl`, released by the kernel when a
///   process dies, even by `SIGKILL`):
///   - byte 0, the **use** lock: *shared* by every process that uses the files together (the cache's
///     opens), *exclusive* for a user that needs them to itself (the cache's reset and rekey, an open
///     offline store). A request that conflicts with another process's holder fails at once with
///     ``Failure/Kind-swift.enum/heldByAnotherProcess``, naming one holder's process ID;
///   - byte 1, the **setup** lock: exclusive, waited for (``duringSetup(_:)``), so that two processes
///     creating the same files at the same moment take turns.
/// - The whole file also carries a shared `flock`: earlier versions of this package take
///   `flock(LOCK_EX)` on the same file and assume they are alone, so the two refuse each other instead
///   of sharing unaware.
///
/// A POSIX record lock belongs to the process and goes away when *any* descriptor of the file is
/// closed; only this class opens the lock file, and the registry keeps it to one descriptor per process.
///
/// Failures are a ``Failure`` of their own, not a public error: each store maps it to its own error
/// type in one place.
package final class StorageLock: Sendable {
    /// Why a lock could not be taken.
    package struct Failure: Error, Sendable, CustomStringConvertible {
        /// The kinds of ``Failure``.
        package enum Kind: Sendable, Equatable {
            /// The lock file is held by another ``StorageLock`` of this process.
            case heldInThisProcess
            /// Another process holds a conflicting lock (or an earlier version holds its `flock`).
            case heldByAnotherProcess
            /// The lock file or its directory cannot be opened, resolved or locked.
            case fileSystem
        }

        /// The kind of failure.
        package let kind: Kind
        /// What happened, naming the lock file (and the holder when known), for a person.
        package let message: String
        /// The process ID of one holder, for ``Kind-swift.enum/heldByAnotherProcess`` when the kernel names it
        /// (not for an earlier version's `flock`).
        package let holder: Int32?

        /// Creates a failure.
        /// - Parameters:
        ///   - kind: the kind of failure.
        ///   - message: what happened.
        ///   - holder: the process ID of one holder, when known.
        package init(_ kind: Kind, _ message: String, holder: Int32? = nil) {
            self.kind = kind
            self.message = message
            self.holder = holder
        }

        /// The kind and the message.
        package var description: String { "\(kind): \(message)" }
    }

    private static let registry = LockedValue<Set<String>>([])

    /// The byte ranges of the record locks.
    private enum Region: Int {
        case use = 0
        case setup = 1
    }

    /// The canonical path of the lock file (its directory resolved with `realpath`).
    package let lockFile: String
    /// The canonical path of the directory that holds the lock file.
    package let directory: String
    private let descriptor: Int32
    private let released = LockedValue(false)

    private init(lockFile: String, directory: String, descriptor: Int32) {
        self.lockFile = lockFile
        self.directory = directory
        self.descriptor = descriptor
    }

    /// Opens (creating it, 0600) the lock file and takes the use lock.
    ///
    /// - Parameters:
    ///   - path: The lock file; its directory must exist.
    ///   - exclusive: `true` for the use lock to oneself, `false` to share it with other processes that
    ///     ask for it shared.
    /// - Returns: The lock, held until ``release()`` (or until it is deallocated, or the process ends).
    /// - Throws: ``Failure``: ``Failure/Kind-swift.enum/heldInThisProcess`` when this process holds the lock
    ///   file already; ``Failure/Kind-swift.enum/heldByAnotherProcess`` when another process holds the use lock in
    ///   a conflicting way, or an earlier version holds its exclusive `flock`;
    ///   ``Failure/Kind-swift.enum/fileSystem`` otherwise.
    package static func acquire(_ path: String, exclusive: Bool) throws(Failure) -> StorageLock {
        let (parent, name) = split(path)
        guard !name.isEmpty, let resolved = realpath(parent, nil) else {
            throw Failure(.fileSystem, "cannot resolve the directory of the lock file \(path): errno \(errno)")
        }
        let directory = String(cString: resolved)
        free(resolved)
        let lockFile = (directory == "/" ? "" : directory) + "/" + name
        let inserted = registry.withLock { $0.insert(lockFile).inserted }
        guard inserted else {
            throw Failure(.heldInThisProcess, "\(lockFile) is held in this process")
        }
        let fd = open(lockFile, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            _ = registry.withLock { $0.remove(lockFile) }
            throw Failure(.fileSystem, "cannot open the lock file \(lockFile): errno \(code)")
        }
        let lock = StorageLock(lockFile: lockFile, directory: directory, descriptor: fd)
        do throws(Failure) {
            guard flock(fd, LOCK_SH | LOCK_NB) == 0 else {
                let code = errno
                if code == EWOULDBLOCK {
                    throw Failure(.heldByAnotherProcess, "\(lockFile) is held exclusively by a process of an earlier version")
                }
                throw Failure(.fileSystem, "cannot lock \(lockFile): errno \(code)")
            }
            try lock.lock(.use, exclusive: exclusive)
        } catch {
            lock.release()
            throw error
        }
        return lock
    }

    /// Makes the use lock exclusive (the cache's rekey); when another process holds it, fails with
    /// ``Failure/Kind-swift.enum/heldByAnotherProcess`` and keeps the shared lock (the change is atomic).
    ///
    /// - Throws: ``Failure``.
    package func makeExclusive() throws(Failure) {
        try lock(.use, exclusive: true)
    }

    /// Makes the use lock shared again after ``makeExclusive()``.
    package func makeShared() {
        // Going from exclusive to shared never conflicts; a failure would leave the lock exclusive,
        // which only refuses others until release.
        try? lock(.use, exclusive: false)
    }

    /// Runs `body` holding the setup lock, waiting for another process's setup to finish first.
    ///
    /// - Parameter body: The setup.
    /// - Returns: What `body` returns.
    /// - Throws: A ``Failure`` (``Failure/Kind-swift.enum/fileSystem``) when the setup lock cannot be taken;
    ///   what `body` throws.
    package func duringSetup<R>(_ body: () throws -> R) throws -> R {
        var region = Self.region(.setup, type: F_WRLCK)
        while fcntl(descriptor, F_SETLKW, &region) != 0 {
            let code = errno
            guard code == EINTR else {
                throw Failure(.fileSystem, "cannot take the setup lock of \(lockFile): errno \(code)")
            }
        }
        defer {
            var unlock = Self.region(.setup, type: F_UNLCK)
            _ = fcntl(descriptor, F_SETLK, &unlock)
        }
        return try body()
    }

    private func lock(_ which: Region, exclusive: Bool) throws(Failure) {
        var region = Self.region(which, type: exclusive ? F_WRLCK : F_RDLCK)
        if fcntl(descriptor, F_SETLK, &region) == 0 { return }
        let code = errno
        guard code == EAGAIN || code == EACCES else {
            throw Failure(.fileSystem, "cannot lock \(lockFile): errno \(code)")
        }
        var probe = Self.region(which, type: exclusive ? F_WRLCK : F_RDLCK)
        let holder: Int32? = fcntl(descriptor, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK ? Int32(probe.l_pid) : nil
        let named = holder.map { " (process \($0))" } ?? ""
        if exclusive {
            throw Failure(.heldByAnotherProcess, "\(lockFile) is held by another process\(named)", holder: holder)
        }
        throw Failure(.heldByAnotherProcess, "\(lockFile) is held exclusively by another process\(named)", holder: holder)
    }

    private static func region(_ which: Region, type: Int32) -> flock {
        var region = flock()
        region.l_type = numericCast(type)
        region.l_whence = numericCast(SEEK_SET)
        region.l_start = off_t(which.rawValue)
        region.l_len = 1
        return region
    }

    /// The directory and the last component of `path` (the directory is `.` for a bare name).
    private static func split(_ path: String) -> (String, String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let parent = String(path[..<slash])
        return (parent.isEmpty ? "/" : parent, String(path[path.index(after: slash)...]))
    }

    /// Releases the locks (closing the only descriptor of the file releases the record locks and the
    /// `flock`) and the registry's entry; releasing twice does nothing.
    package func release() {
        let first = released.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        close(descriptor)
        _ = Self.registry.withLock { $0.remove(lockFile) }
    }

    deinit {
        release()
    }
}
