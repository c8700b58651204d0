internal import CLMDB
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An open LMDB environment: one directory holding `data.mdb` and `lock.mdb`.
///
/// The environment is opened with `MDB_NOTLS`, so read transactions may run on any thread, and it is
/// safe to share across tasks. Transactions are scoped closures: ``read(_:)`` and ``write(_:)`` commit
/// when the closure returns and abort when it throws. Write transactions are serialized on a dedicated
/// serial queue; ``write(_:)-(@Sendable (LMDBTransaction) throws -> R)`` (the `async` variant) suspends
/// the calling task instead of blocking a thread of Swift's cooperative pool while it waits for the
/// writer. When a write fails with `MDB_MAP_FULL`, the map grows (doubling, up to
/// ``Options/maxMapSize``) and the closure runs again, so a write closure must not have side effects
/// outside the transaction that cannot be repeated.
///
/// Avoid long-lived transactions: a read transaction keeps the pages it sees from being reused.
/// Do not start a transaction inside another one of the same environment.
///
/// ## Topics
/// - ``init(path:options:)``
/// - ``read(_:)``
/// - ``write(_:)-(LMDBTransaction)->R``
/// - ``openDatabase(named:create:)``
/// - ``close()``
public final class LMDBEnvironment: Sendable {
    /// How much of a commit reaches the disk before `write` returns.
    public enum Durability: Sendable, Hashable {
        /// Data and meta pages are flushed (`fsync`) on every commit: nothing committed is lost, even on
        /// a power failure. The slowest choice and the default.
        case full
        /// Data pages are flushed but the meta page is not (`MDB_NOMETASYNC`): a system crash may undo
        /// the last committed transaction, but the database stays intact. A process crash loses nothing.
        case noMetaSync
        /// Nothing is flushed on commit (`MDB_NOSYNC`); call ``LMDBEnvironment/sync(force:)``
        /// periodically. A process crash loses nothing (the data is in the page cache), but a system
        /// crash may undo recent transactions, and on a file system that does not keep write order it
        /// may corrupt the database.
        case noSync
    }

    /// The settings an environment is opened with.
    public struct Options: Sendable, Hashable {
        /// The initial size of the memory map in bytes, rounded up to a page multiple.
        /// The default is 16 MiB.
        public var mapSize: Int
        /// The largest size the map may grow to when a write finds it full. The default is 1 TiB (the
        /// map is virtual address space; the file only grows as pages are used).
        public var maxMapSize: Int
        /// The number of named databases the environment may hold. The default is 8.
        public var maxDatabases: Int
        /// The number of concurrent read transactions. The default is 126 (LMDB's default).
        public var maxReaders: Int
        /// What a commit flushes to disk. The default is ``Durability/full``.
        public var durability: Durability
        /// Permissions of the files LMDB creates. The default is `0o600`.
        public var fileMode: UInt32
        /// Whether to create the directory (with mode `0o700`) when it does not exist. The default is `true`.
        public var createDirectory: Bool

        /// Creates options; every parameter has the default documented on its property.
        ///
        /// - Parameters:
        ///   - mapSize: The initial map size in bytes.
        ///   - maxMapSize: The largest map size in bytes.
        ///   - maxDatabases: The number of named databases.
        ///   - maxReaders: The number of concurrent readers.
        ///   - durability: What a commit flushes to disk.
        ///   - fileMode: The permissions of created files.
        ///   - createDirectory: Whether to create a missing directory.
        public init(
            mapSize: Int = 16 << 20,
            maxMapSize: Int = 1 << 40,
            maxDatabases: Int = 8,
            maxReaders: Int = 126,
            durability: Durability = .full,
            fileMode: UInt32 = 0o600,
            createDirectory: Bool = true
        ) {
            self.mapSize = mapSize
            self.maxMapSize = maxMapSize
            self.maxDatabases = maxDatabases
            self.maxReaders = maxReaders
            self.durability = durability
            self.fileMode = fileMode
            self.createDirectory = createDirectory
        }
    }

    /// The directory of the environment.
    public let path: String
    /// The options the environment was opened with (the current map size may be larger).
    public let options: Options

    nonisolated(unsafe) private let env: OpaquePointer
    private let lock = ReadWriteLock()
    private let closed = Atomic<Bool>(false)
    private let writer: DispatchQueue
    private let writerKey = DispatchSpecificKey<UInt8>()
    /// Writes handed to the writer queue that have not finished; 0 means the queue is idle, and an
    /// `async` write then runs on the calling thread (no thread hop).
    private let queuedWrites = Atomic<Int>(0)
    private let commits = Atomic<UInt64>(0)

    /// The number of write transactions this environment object has committed. A reader that notes it
    /// before a read transaction and finds it unchanged later knows that this object wrote nothing in
    /// between; other processes that share the files are not counted (see ``lastTransactionID``).
    public var commitCount: UInt64 { commits.load(ordering: .acquiring) }

    private let ownLastTransaction = Atomic<UInt64>(0)
    /// See ``observeCommits(in:_:)``.
    let commitObserver = Mutex<CommitObserver?>(nil)

    /// The ID of the last transaction committed to the files by any process (`me_last_txnid` of
    /// `mdb_env_info`), 0 when the environment is closed.
    ///
    /// It reads the shared meta pages, with no system call: cheap enough to note before every read and
    /// compare later. When it is unchanged, nobody (in this process or another) committed in between.
    public var lastTransactionID: UInt64 {
        lock.lockShared()
        defer { lock.unlock() }
        guard !closed.load(ordering: .acquiring) else { return 0 }
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        return UInt64(info.me_last_txnid)
    }

    /// The ID of the last write transaction this environment object committed that changed something (0 before
    /// its first): while ``lastTransactionID`` equals it, no other process has written since.
    public var lastOwnTransactionID: UInt64 { ownLastTransaction.load(ordering: .acquiring) }

    /// Clears the reader slots of processes that ended without closing the environment (killed, for
    /// example), so that the pages their snapshots held can be reused.
    ///
    /// The corresponding C function is `mdb_reader_check`.
    ///
    /// - Returns: The number of slots cleared.
    /// - Throws: `LMDBError` when the check fails or the environment is closed.
    @discardableResult
    public func clearStaleReaders() throws(LMDBError) -> Int {
        lock.lockShared()
        defer { lock.unlock() }
        guard !closed.load(ordering: .acquiring) else { throw .environmentClosed }
        var dead: Int32 = 0
        try check(mdb_reader_check(env, &dead))
        return Int(dead)
    }

    /// Opens (and creates, if needed) the environment in the directory `path`.
    ///
    /// The corresponding C functions are `mdb_env_create`, `mdb_env_set_mapsize`,
    /// `mdb_env_set_maxdbs`, `mdb_env_set_maxreaders` and `mdb_env_open`.
    ///
    /// - Parameters:
    ///   - path: The directory that holds (or will hold) `data.mdb` and `lock.mdb`.
    ///   - options: Map size, limits and durability.
    /// - Throws: `LMDBError` when the directory cannot be created or LMDB refuses to open, for example
    ///   `.invalid` for a file that is not an LMDB file, or `.invalidArgument` for bad options.
    public init(path: String, options: Options = Options()) throws(LMDBError) {
        guard options.mapSize > 0, options.maxMapSize >= options.mapSize, options.maxDatabases >= 0,
              options.maxReaders > 0, !path.isEmpty
        else { throw .invalidArgument }
        if options.createDirectory { try Self.makeDirectory(path) }
        var handle: OpaquePointer?
        try check(mdb_env_create(&handle))
        guard let handle else { throw .invalidArgument }
        do {
            try check(mdb_env_set_mapsize(handle, options.mapSize))
            try check(mdb_env_set_maxdbs(handle, MDB_dbi(options.maxDatabases)))
            try check(mdb_env_set_maxreaders(handle, UInt32(options.maxReaders)))
            var flags = UInt32(MDB_NOTLS)
            switch options.durability {
            case .full: break
            case .noMetaSync: flags |= UInt32(MDB_NOMETASYNC)
            case .noSync: flags |= UInt32(MDB_NOSYNC)
            }
            try check(mdb_env_open(handle, path, flags, mode_t(options.fileMode)))
        } catch {
            mdb_env_close(handle)
            throw error
        }
        self.env = handle
        self.path = path
        self.options = options
        self.writer = DispatchQueue(label: "LMDB writer \(path)")
        writer.setSpecific(key: writerKey, value: 1)
    }

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

    deinit {
        if !closed.load(ordering: .acquiring) { mdb_env_close(env) }
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { closed.load(ordering: .acquiring) }

    /// Closes the environment after the running transactions end; later calls throw `.environmentClosed`.
    ///
    /// The corresponding C function is `mdb_env_close`. Closing twice is harmless.
    public func close() {
        lock.lockExclusive()
        defer { lock.unlock() }
        if closed.load(ordering: .acquiring) { return }
        closed.store(true, ordering: .releasing)
        mdb_env_close(env)
    }

    /// The current size of the memory map in bytes.
    public var mapSize: Int {
        lock.lockShared()
        defer { lock.unlock() }
        guard !closed.load(ordering: .acquiring) else { return 0 }
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        return info.me_mapsize
    }

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

    /// Opens a named database (or the unnamed main database), creating it if asked to.
    ///
    /// The handle stays valid for the lifetime of the environment. The corresponding C function is
    /// `mdb_dbi_open`; it runs inside a write transaction so that handles are never opened concurrently.
    ///
    /// - Parameters:
    ///   - name: The database's name, or `nil` for the main database.
    ///   - create: Whether to create the database when it does not exist. The default is `true`.
    /// - Returns: The database handle, or `nil` when it does not exist and `create` is `false`.
    /// - Throws: `LMDBError`, for example `.databasesFull` when `maxDatabases` is reached.
    public func openDatabase(named name: String?, create: Bool = true) throws -> LMDBDatabase? {
        try write { txn in try txn.openDatabase(named: name, create: create) }
    }

    // MARK: Transactions

    /// Runs `body` in a read-only transaction; values read must be copied out before it returns.
    ///
    /// The corresponding C function is `mdb_txn_begin` with `MDB_RDONLY`. Many readers run at once,
    /// on any thread, and never wait for the writer.
    ///
    /// - Parameter body: The work to do; its transaction is valid only until it returns.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or `LMDBError` when the transaction cannot begin
    ///   (for example `.readersFull` or `.environmentClosed`).
    public func read<R>(_ body: (LMDBTransaction) throws -> R) throws -> R {
        lock.lockShared()
        defer { lock.unlock() }
        guard !closed.load(ordering: .acquiring) else { throw LMDBError.environmentClosed }
        var handle: OpaquePointer?
        var code = mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &handle)
        if code == MDB_MAP_RESIZED {
            lock.unlock()
            adoptResizedMap()
            lock.lockShared()
            guard !closed.load(ordering: .acquiring) else { throw LMDBError.environmentClosed }
            code = mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &handle)
        }
        try check(code)
        guard let handle else { throw LMDBError.badTransaction }
        let txn = LMDBTransaction(handle: handle, readOnly: true)
        defer { txn.abort() }
        return try body(txn)
    }

    /// Runs `body` in the write transaction, waiting on the calling thread for earlier writers.
    ///
    /// Writers are serialized on the environment's dedicated serial queue. The transaction commits when
    /// `body` returns and aborts when it throws. On `MDB_MAP_FULL` the map grows and `body` runs again.
    /// From `async` code prefer the `async` overload, which does not block a cooperative thread.
    ///
    /// - Parameter body: The work to do; its transaction is valid only until it returns.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or `LMDBError` (`.environmentClosed`, `.nestedWriteTransaction`,
    ///   `.mapFull` when the map cannot grow further, or an I/O error from the commit).
    public func write<R>(_ body: (LMDBTransaction) throws -> R) throws -> R {
        if DispatchQueue.getSpecific(key: writerKey) != nil { throw LMDBError.nestedWriteTransaction }
        queuedWrites.add(1, ordering: .acquiring)
        defer { queuedWrites.subtract(1, ordering: .releasing) }
        return try writer.sync { () throws -> R in try performWrite(body) }
    }

    /// Runs `body` in the write transaction on the environment's writer queue, suspending the calling
    /// task (never blocking a cooperative thread) while earlier writers finish.
    ///
    /// - Parameter body: The work to do; it must be synchronous and its transaction is valid only until
    ///   it returns. It may run more than once when the map has to grow.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or `LMDBError` as for the synchronous ``write(_:)-(LMDBTransaction)->R``.
    public func write<R: Sendable>(_ body: @escaping @Sendable (LMDBTransaction) throws -> R) async throws -> R {
        if DispatchQueue.getSpecific(key: writerKey) != nil { throw LMDBError.nestedWriteTransaction }
        // An idle queue: run here, on the calling thread (a sync block on an idle serial queue runs
        // inline), and save the two thread hops of a hand-over. Nobody waits for the queue, so no
        // cooperative thread is blocked beyond the write itself.
        if queuedWrites.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged {
            defer { queuedWrites.subtract(1, ordering: .releasing) }
            return try writer.sync { () throws -> R in try performWrite(body) }
        }
        queuedWrites.add(1, ordering: .acquiring)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<R, any Error>) in
            writer.async {
                let result = Result { try self.performWrite(body) }
                self.queuedWrites.subtract(1, ordering: .releasing)
                continuation.resume(with: result)
            }
        }
    }

    /// Begins, runs, commits; grows the map and retries on `MDB_MAP_FULL`. Runs on the writer queue.
    private func performWrite<R>(_ body: (LMDBTransaction) throws -> R) throws -> R {
        var attempts = 0
        while true {
            attempts += 1
            lock.lockShared()
            var locked = true
            defer { if locked { lock.unlock() } }
            guard !closed.load(ordering: .acquiring) else { throw LMDBError.environmentClosed }
            var handle: OpaquePointer?
            let beginCode = mdb_txn_begin(env, nil, 0, &handle)
            if beginCode == MDB_MAP_RESIZED && attempts < 8 {
                lock.unlock()
                locked = false
                adoptResizedMap()
                continue
            }
            try check(beginCode)
            guard let handle else { throw LMDBError.badTransaction }
            let observing = commitObserver.withLock { $0 }
            let txn = LMDBTransaction(handle: handle, readOnly: false, observed: observing?.database)
            do {
                let result = try body(txn)
                let id = txn.id
                try txn.commit()
                commits.add(1, ordering: .releasing)
                // A transaction that changed nothing took no ID (see `LMDBCommit`).
                guard txn.changes.any else { return result }
                ownLastTransaction.store(id, ordering: .releasing)
                observing?.observer(LMDBCommit(transaction: id, keys: txn.changes.keys, unlisted: txn.changes.unlisted))
                return result
            } catch LMDBError.mapFull where attempts < 64 {
                txn.abort()
                lock.unlock()
                locked = false
                // A reader slot left by a killed process pins old pages; free them before growing.
                if attempts == 1, (try? clearStaleReaders()) ?? 0 > 0 { continue }
                try growMap()
            } catch {
                txn.abort()
                throw error
            }
        }
    }

    /// Doubles the map (bounded by `maxMapSize`); no transaction of this process may be active.
    private func growMap() throws(LMDBError) {
        lock.lockExclusive()
        defer { lock.unlock() }
        guard !closed.load(ordering: .acquiring) else { throw .environmentClosed }
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        let current = info.me_mapsize
        guard current < options.maxMapSize else { throw .mapFull }
        let next = min(max(current * 2, current + (1 << 20)), options.maxMapSize)
        try check(mdb_env_set_mapsize(env, next))
    }

    /// Adopts a map size another process set (`MDB_MAP_RESIZED`).
    private func adoptResizedMap() {
        lock.lockExclusive()
        defer { lock.unlock() }
        guard !closed.load(ordering: .acquiring) else { return }
        mdb_env_set_mapsize(env, 0)
    }
}
