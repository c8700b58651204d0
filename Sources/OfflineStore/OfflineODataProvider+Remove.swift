import Foundation
import ODataCore

extension OfflineODataProvider {
    /// Removes the store that `parameters` name (``OfflineODataParameters/storePath`` and
    /// ``OfflineODataParameters/storeName``), for example before another user opens a store on the same device.
    ///
    /// It takes the store's lock first, so it refuses a store that is open — by a provider in this process or in any
    /// other — and nothing opens the store while it is being removed. Then it removes, in this order:
    /// - the store's directory: the SQLCipher database with its write-ahead log, and the key envelope (`keycheck`);
    /// - the random default key (`<storeName>.key`), only when the parameters give no
    ///   ``OfflineODataParameters/keyStore``: that file belongs to the store and is useless without it, while a key
    ///   store of the caller's (a secret store, a file it chose) is theirs to keep or delete;
    /// - the lock file (`<storeName>.lock`).
    ///
    /// Whatever the store held is gone, including requests not uploaded and the ErrorArchive: upload (or read
    /// ``OfflineODataProvider/pendingRequests()``) first if they matter. A store that does not exist is not an
    /// error: nothing is removed.
    ///
    /// - Parameter parameters: The store's name and path (other parameters are not used).
    /// - Throws: `OfflineODataError.storeLocked` when the store is open in this process or another (nothing is
    ///   removed); `.storage` when a file cannot be removed (its `underlying` error says why).
    public static func removeStore(parameters: OfflineODataParameters) throws(OfflineODataError) {
        let directory = parameters.storeDirectory
        let files = FileManager.default
        var isDirectory: ObjCBool = false
        guard files.fileExists(atPath: parameters.storePath, isDirectory: &isDirectory), isDirectory.boolValue else { return }
        let lock = try StorageLock.store(directory)
        defer { lock.release() }
        var doomed = [directory]
        if parameters.keyStore == nil { doomed.append(StoreKeyCheck.defaultKeyPath(of: directory)) }
        // The lock file last: removed while held, so an open that starts meanwhile makes a lock file of its own and
        // finds no store.
        doomed.append(StorageLock.lockPath(of: directory))
        for path in doomed where files.fileExists(atPath: path) {
            do {
                try files.removeItem(atPath: path)
            } catch {
                throw OfflineODataError(.storage, "cannot remove \(path) of the store: \(error.localizedDescription)", underlying: error)
            }
        }
    }
}
