import Foundation
import Synchronization
import ODataCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Exclusive ownership of a store directory: an in-process registry plus `flock(LOCK_EX | LOCK_NB)` on a
/// lock file, so a second open in this process or in another one is refused.
final class DirectoryLock: Sendable {
    private static let registry = LockedValue<Set<String>>([])

    let path: String
    private let descriptor: Int32
    private let released = Atomic<Bool>(false)

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    /// Creates the directory (0700) if needed and takes the lock.
    static func acquire(directory: String, lockFileName: String) throws(CacheError) -> DirectoryLock {
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
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            _ = registry.withLock { $0.remove(canonical) }
            if code == EWOULDBLOCK {
                throw CacheError.alreadyOpen.with(detail: "\(canonical) is open in another process")
            }
            throw CacheError.fileSystem.with(detail: "cannot lock \(lockPath): errno \(code)")
        }
        return DirectoryLock(path: canonical, descriptor: fd)
    }

    func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        flock(descriptor, LOCK_UN)
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
