#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The environment's directory and data file, outside LMDB.
extension LMDBEnvironment {
    /// Creates `path` and its missing parents with mode `0o700`.
    static func makeDirectory(_ path: String) throws(LMDBError) {
        if mkdir(path, 0o700) == 0 || errno == EEXIST { return }
        guard errno == ENOENT else { throw LMDBError(code: errno) }
        var parent = path
        while parent.hasSuffix("/") { parent.removeLast() }
        guard let slash = parent.lastIndex(of: "/"), slash != parent.startIndex else { throw LMDBError(code: ENOENT) }
        try makeDirectory(String(parent[..<slash]))
        if mkdir(path, 0o700) != 0 && errno != EEXIST { throw LMDBError(code: errno) }
    }

    /// The size of `data.mdb` in `directory`, 0 when it does not exist. With a writable map it is the largest map
    /// any process set (LMDB truncates the file to its map's size when it maps it).
    static func dataFileSize(_ directory: String) -> Int {
        var status = stat()
        guard stat(directory + "/data.mdb", &status) == 0 else { return 0 }
        return Int(status.st_size)
    }

    /// Takes an exclusive `flock` on the directory, across processes, around a change of a writable map's size:
    /// LMDB sets the file's size to the map's (`ftruncate`), so a process that read the size and maps a smaller
    /// map after another process grew it would cut off pages the other is writing. Returns the descriptor to
    /// pass to ``unlockMapSize(_:)``, or -1 when the directory cannot be opened (then nothing is locked: the
    /// open or growth that follows fails on its own if the directory is gone).
    static func lockMapSize(_ directory: String) -> Int32 {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return -1 }
        while flock(descriptor, LOCK_EX) != 0 && errno == EINTR {}
        return descriptor
    }

    /// Releases the lock of ``lockMapSize(_:)``.
    static func unlockMapSize(_ descriptor: Int32) {
        guard descriptor >= 0 else { return }
        _ = flock(descriptor, LOCK_UN)
        #if canImport(Glibc)
        _ = Glibc.close(descriptor)
        #elseif canImport(Darwin)
        _ = Darwin.close(descriptor)
        #endif
    }
}
