import Foundation
import Synchronization
import ODataCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Who may use a cache directory, between processes and inside one.
///
/// - In this process, a directory is held by at most one ``DirectoryLock`` (a registry of canonical
///   paths): a second `ResponseCache` on the same directory is refused, so one process has one LMDB
///   environment per file, as LMDB requires.
/// - Between processes, POSIX record locks on the lock file (`fcntl`, released by the kernel when a
///   process dies):
///   - byte 0, the **use** lock: *shared* by every process that has the cache open, *exclusive* for
///     the operations that need the cache to themselves — `reset` (deletes the files) and `rekey`
///     (changes the keys the other processes hold in memory). An exclusive request that finds another
///     holder fails at once with `CacheError.inUseElsewhere` (naming one holder's process ID), and so
///     does an open while another process holds the lock exclusively;
///   - byte 1, the **setup** lock: exclusive, waited for, held while an open reads or creates the key
///     file and the key-check record, so that two processes opening a new cache at the same moment do
///     not create two different keys.
/// - The whole file also carries a shared `flock`: an earlier version of this package takes
///   `flock(LOCK_EX)` and assumes it is alone, so the two refuse each other instead of sharing unaware.
///
/// A POSIX record lock belongs to the process and goes away when any descriptor of the file is closed;
/// only this class opens the lock file, and the registry keeps it to one descriptor per process.
final class DirectoryLock: Sendable {
    private static let registry = LockedValue<Set<String>>([])

    /// The byte ranges of the record locks.
    private enum Region: Int {
        case use = 0
        case setup = 1
    }

    let path: String
    private let descriptor: Int32
    private let released = Atomic<Bool>(false)

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    /// Creates the directory (0700) if needed and takes the use lock: shared for an open, exclusive for
    /// an operation that needs the cache to itself (reset).
    static func acquire(directory: String, lockFileName: String, exclusive: Bool = false) throws(CacheError) -> DirectoryLock {
        try makeOwnerOnlyDirectory(directory)
        guard let resolved = realpath(directory, nil) else {
            throw CacheError.fileSystem.with(detail: "cannot resolve \(directory): errno \(errno)")
        }
        let canonical = String(cString: resolved)
        free(resolved)
        let inserted = registry.withLock { $0.insert(canonical).inserted }
        guard inserted else {
            throw CacheError.alreadyOpen.with(detail: "\(canonical) is already open in this process")
        }
        let lockPath = canonical + "/" + lockFileName
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            _ = registry.withLock { $0.remove(canonical) }
            throw CacheError.fileSystem.with(detail: "cannot open the lock file \(lockPath): errno \(code)")
        }
        let lock = DirectoryLock(path: canonical, descriptor: fd)
        do throws(CacheError) {
            guard flock(fd, LOCK_SH | LOCK_NB) == 0 else {
                let code = errno
                if code == EWOULDBLOCK {
                    throw CacheError.inUseElsewhere.with(detail: "\(canonical) is held exclusively by a process of an earlier version")
                }
                throw CacheError.fileSystem.with(detail: "cannot lock \(lockPath): errno \(code)")
            }
            try lock.lock(.use, exclusive: exclusive)
        } catch {
            lock.release()
            throw error
        }
        return lock
    }

    /// Makes the use lock exclusive (for `rekey`): fails with `CacheError.inUseElsewhere` while another
    /// process has the cache open, and then keeps the shared lock (the change is atomic).
    func makeExclusive() throws(CacheError) {
        try lock(.use, exclusive: true)
    }

    /// Makes the use lock shared again after ``makeExclusive()``.
    func makeShared() {
        // Going from exclusive to shared never conflicts; a failure would leave the lock exclusive,
        // which only refuses others until close.
        try? lock(.use, exclusive: false)
    }

    /// Runs `body` holding the setup lock, waiting for another process's open to finish its setup.
    func duringSetup<R>(_ body: () throws -> R) throws -> R {
        var region = Self.region(.setup, type: F_WRLCK)
        while fcntl(descriptor, F_SETLKW, &region) != 0 {
            let code = errno
            guard code == EINTR else {
                throw CacheError.fileSystem.with(detail: "cannot take the setup lock of \(path): errno \(code)")
            }
        }
        defer {
            var unlock = Self.region(.setup, type: F_UNLCK)
            _ = fcntl(descriptor, F_SETLK, &unlock)
        }
        return try body()
    }

    private func lock(_ which: Region, exclusive: Bool) throws(CacheError) {
        var region = Self.region(which, type: exclusive ? F_WRLCK : F_RDLCK)
        if fcntl(descriptor, F_SETLK, &region) == 0 { return }
        let code = errno
        guard code == EAGAIN || code == EACCES else {
            throw CacheError.fileSystem.with(detail: "cannot lock \(path)/\(ResponseCache.lockFileName): errno \(code)")
        }
        var probe = Self.region(which, type: exclusive ? F_WRLCK : F_RDLCK)
        let holder = fcntl(descriptor, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK ? " (process \(probe.l_pid))" : ""
        if exclusive {
            throw CacheError.inUseElsewhere.with(detail: "\(path) is open in another process\(holder)")
        }
        throw CacheError.inUseElsewhere.with(detail: "\(path) is being reset or rekeyed by another process\(holder)")
    }

    private static func region(_ which: Region, type: Int32) -> flock {
        var region = flock()
        region.l_type = numericCast(type)
        region.l_whence = numericCast(SEEK_SET)
        region.l_start = off_t(which.rawValue)
        region.l_len = 1
        return region
    }

    func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // Closing the only descriptor of the file releases the record locks and the flock.
        close(descriptor)
        _ = Self.registry.withLock { $0.remove(path) }
    }

    deinit {
        release()
    }

    static func makeOwnerOnlyDirectory(_ directory: String) throws(CacheError) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw CacheError.fileSystem.with(detail: "\(directory) is not a directory") }
            return
        }
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw CacheError.fileSystem.with(detail: "cannot create \(directory): \(error)")
        }
    }
}
