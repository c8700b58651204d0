import Foundation
import ODataCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock` on `storeDirectory.lock`: refuses a second open of the same store in this
/// process (a new open file description conflicts too) and in other processes. The kernel drops
/// the lock when the process dies, so a killed process never leaves the store locked.
final class StoreLock: Sendable {
    let path: String
    private let descriptor: LockedValue<Int32>

    init(path: String) throws(OfflineODataError) {
        self.path = path
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw OfflineODataError(.storage, "cannot open the lock file \(path): errno \(errno)") }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let error = errno
            Glibc.close(fd)
            if error == EWOULDBLOCK {
                throw OfflineODataError(.storeLocked, "the store \(path.dropLast(5)) is already open (in this process or another one)")
            }
            throw OfflineODataError(.storage, "cannot lock \(path): errno \(error)")
        }
        descriptor = LockedValue(fd)
    }

    func release() {
        descriptor.withLock { fd in
            guard fd >= 0 else { return }
            flock(fd, LOCK_UN)
            Glibc.close(fd)
            fd = -1
        }
    }
}
