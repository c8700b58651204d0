import ODataCore

/// The offline store's use of ``StorageLock``: the use lock, exclusive, on `storePath/storeName.lock`
/// (beside the store's directory, where earlier versions take `flock(LOCK_EX)` on the same file). It
/// refuses a second open of the same store in this process and in any other; two stores in one
/// `storePath` have two lock files and do not block each other; the kernel drops the lock when the
/// process dies, so a killed process never leaves the store locked.
extension StorageLock {
    /// Takes the lock of the store at `storeDirectory` (whose parent directory must exist).
    ///
    /// - Throws: `OfflineODataError` — `.storeLocked` when the store is open in this process or
    ///   another (of this version or an earlier one), `.storage` when the lock file cannot be used.
    static func store(_ storeDirectory: String) throws(OfflineODataError) -> StorageLock {
        do {
            return try acquire(lockPath(of: storeDirectory), exclusive: true)
        } catch {
            throw OfflineODataError(lockFailure: error, store: storeDirectory)
        }
    }
}

extension StorageLock {
    /// The lock file of the store at `storeDirectory`: `storePath/storeName.lock`.
    static func lockPath(of storeDirectory: String) -> String { storeDirectory + ".lock" }
}

extension OfflineODataError {
    /// The offline store's error for a failure of its lock (the one place where one becomes the
    /// other): held in this process or by another process → `.storeLocked`; anything else → `.storage`.
    init(lockFailure failure: StorageLock.Failure, store storeDirectory: String) {
        switch failure.kind {
        case .heldInThisProcess:
            self.init(.storeLocked, "the store \(storeDirectory) is already open in this process")
        case .heldByAnotherProcess:
            self.init(.storeLocked, "the store \(storeDirectory) is already open in another process: \(failure.message)")
        case .fileSystem:
            self.init(.storage, failure.message, underlying: failure)
        }
    }
}
