internal import CLMDB
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Getting committed data to the disk.
extension LMDBEnvironment {
    /// Flushes committed data to disk; needed with ``Durability/noSync`` or ``Durability/noMetaSync``.
    ///
    /// The corresponding C function is `mdb_env_sync`.
    ///
    /// - Parameter force: Flush even when the environment was opened without sync (the default is `true`).
    /// - Throws: `LMDBError` when the flush fails or the environment is closed.
    public func sync(force: Bool = true) throws(LMDBError) {
        lock.lockShared()
        defer { lock.unlock() }
        guard !closed.load(ordering: .acquiring) else { throw .environmentClosed }
        try check(mdb_env_sync(env, force ? 1 : 0))
    }

    /// Starts writing the data file's dirty pages to the disk and returns without waiting for them (Linux:
    /// `sync_file_range` with `SYNC_FILE_RANGE_WRITE`; elsewhere nothing).
    ///
    /// It promises nothing about durability (``sync(force:)`` does): with ``Durability/noSync`` it keeps the
    /// pages written since the last flush few, so that the kernel never has gigabytes of this file to write
    /// back at once while a writer is changing it. Pages it writes are committed ones or free ones LMDB may
    /// be filling for the next commit — what the kernel's own writeback may write at any time too.
    ///
    /// - Throws: `LMDBError` when the environment is closed or the system call fails.
    public func startWriteback() throws(LMDBError) {
        lock.lockShared()
        defer { lock.unlock() }
        guard !closed.load(ordering: .acquiring) else { throw .environmentClosed }
        var fd: mdb_filehandle_t = -1
        try check(mdb_env_get_fd(env, &fd))
        guard clmdb_start_writeback(fd) == 0 else { throw LMDBError(code: errno) }
    }
}
