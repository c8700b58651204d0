import Foundation
import ODataCore

/// The cache's use of ``StorageLock``: `cache.lock` inside the cache directory — shared while a
/// `ResponseCache` has the cache open, exclusive for `reset` and `rekey`, the setup lock while an open
/// reads or creates the key file and the key-check record (docs/notes/fleet.md).
extension StorageLock {
    /// Creates the cache directory (0700) if needed and takes the use lock on its `cache.lock`: shared
    /// for an open, exclusive for an operation that needs the cache to itself (reset).
    ///
    /// The lock's ``StorageLock/directory`` is the canonical cache directory.
    static func cache(directory: String, exclusive: Bool = false) throws(CacheError) -> StorageLock {
        try makeOwnerOnlyDirectory(directory)
        do {
            return try acquire(directory + "/" + ResponseCache.lockFileName, exclusive: exclusive)
        } catch {
            throw CacheError(lockFailure: error)
        }
    }

    /// Makes the use lock exclusive for a rekey: `CacheError.inUseElsewhere` while another process has
    /// the cache open (the lock stays shared).
    func makeCacheExclusive() throws(CacheError) {
        do { try makeExclusive() } catch { throw CacheError(lockFailure: error) }
    }

    private static func makeOwnerOnlyDirectory(_ directory: String) throws(CacheError) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw CacheError.fileSystem.with(detail: "\(directory) is not a directory") }
            return
        }
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw CacheError.fileSystem.with(detail: "cannot create \(directory): \(error)", underlying: error)
        }
    }
}

extension CacheError {
    /// The cache's error for a failure of its lock (the one place where one becomes the other):
    /// held in this process → `alreadyOpen`; held by another process, or by an earlier version's
    /// `flock` → `inUseElsewhere` (the detail names the holder's process ID when the kernel gives it);
    /// anything else → `fileSystem`.
    init(lockFailure failure: StorageLock.Failure) {
        switch failure.kind {
        case .heldInThisProcess: self = .alreadyOpen.with(detail: failure.message, underlying: failure)
        case .heldByAnotherProcess: self = .inUseElsewhere.with(detail: failure.message, underlying: failure)
        case .fileSystem: self = .fileSystem.with(detail: failure.message, underlying: failure)
        }
    }
}
