internal import CSQLCipher
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One connection to an SQLCipher database file: keyed with a raw 256-bit key (or none, for a plaintext
/// database), checked to be SQLCipher, set up with the page size and the journal chosen in ``Options``,
/// temporary tables and sorts in memory, and a page cache sized from a memory budget.
///
/// A connection is not thread-safe: use it from one thread at a time (its owner puts it behind a lock or a
/// serial queue, as GRDB's `SerializedDatabase` does). Statements it prepares must not outlive it.
///
/// ```swift
/// let connection = try SQLCipherConnection(path: "/data/store.db", key: key)
/// try connection.transaction {
///     let insert = try connection.cachedStatement("INSERT INTO t (k, v) VALUES (?, ?)")
///     try insert.bind(.text("a"), at: 1)
///     try insert.bind(.integer(1), at: 2)
///     _ = try insert.step()
/// }
/// ```
///
/// ## Topics
/// - ``init(path:key:options:)``
/// - ``execute(_:)``
/// - ``prepare(_:)``
/// - ``cachedStatement(_:)``
/// - ``transaction(_:)``
/// - ``close()``
public final class SQLCipherConnection {
    /// How a connection is set up.
    public struct Options: Sendable, Hashable {
        /// Which journal keeps a transaction atomic. Both are encrypted by SQLCipher like the database.
        public enum Journal: Sendable, Hashable {
            /// A write-ahead log (`-wal`, with its index in `-shm`): readers on other connections see the last
            /// commit while a writer writes, and a commit appends to one file. The default.
            case writeAheadLog
            /// A rollback journal (`-journal`, deleted at each commit): a writer waits for readers to finish.
            case rollback
        }

        /// The page cache's budget in bytes (`PRAGMA cache_size` with a negative size in KiB). The default is 128 MiB.
        public var cacheBudget: Int
        /// The journal. The default is ``Journal/writeAheadLog``.
        public var journal: Journal
        /// Whether every commit is flushed to disk before it returns (`PRAGMA synchronous = FULL`) rather than at
        /// checkpoints (`NORMAL`). The default is `true`: a committed transaction survives a power loss.
        public var fullSync: Bool
        /// Whether the connection only reads. The default is `false`.
        public var readOnly: Bool
        /// How long a statement waits for another connection's lock before it fails with ``SQLCipherError/busy``.
        /// The default is 5 seconds.
        public var busyTimeout: Duration
        /// The page size in bytes, a power of two from 512 to 65,536 (``SQLCipherConnection/pageSizes``): SQLCipher's
        /// `cipher_page_size`, the unit it encrypts and authenticates. An encrypted file records it nowhere readable,
        /// so it must be given again for every connection to an existing file: with another size the first page
        /// fails its check (``SQLCipherError/notADatabase``). A plaintext database records its own; this size
        /// applies when it is created. The default is ``SQLCipherConnection/defaultPageSize``.
        public var pageSize: Int

        /// Creates options; every argument has the default documented on its property.
        /// - Parameters:
        ///   - cacheBudget: The page cache's budget in bytes.
        ///   - journal: The journal.
        ///   - fullSync: Whether commits are flushed to disk.
        ///   - readOnly: Whether the connection only reads.
        ///   - busyTimeout: How long to wait for another connection's lock.
        ///   - pageSize: The page size in bytes.
        public init(cacheBudget: Int = 128 << 20, journal: Journal = .writeAheadLog, fullSync: Bool = true,
                    readOnly: Bool = false, busyTimeout: Duration = .seconds(5), pageSize: Int = SQLCipherConnection.defaultPageSize) {
            self.cacheBudget = cacheBudget
            self.journal = journal
            self.fullSync = fullSync
            self.readOnly = readOnly
            self.busyTimeout = busyTimeout
            self.pageSize = pageSize
        }
    }

    /// The page size of a connection whose ``Options`` name none: 4 KiB, SQLCipher 4's default and the size of a
    /// memory page.
    public static let defaultPageSize = 4096
    /// The page sizes SQLite accepts, in bytes.
    public static let pageSizes = [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]
    /// The length of a raw key in bytes.
    public static let keyLength = 32

    /// The page cache lines (a page and its header) every connection allocates in one block when it first caches a
    /// page, at open: 1,024, 4.3 MiB with 4 KiB pages (what a first query over a thousand scattered rows caches).
    ///
    /// Without it SQLite allocates each page it caches as it reads it: on a thread whose heap is new (a query on a
    /// thread of Swift's pool) glibc grows that heap page by page, an `mprotect` and a page fault for every page a
    /// first query decrypts — about 2.5 ms of the first query at 100,000 entities, which later queries never pay
    /// (their pages are cached). One block per connection is one allocation, its memory faulted in once while the
    /// connection opens (SQLite writes every line's header), and freed when the connection closes. SQLite's
    /// `SQLITE_CONFIG_PAGECACHE` with no buffer: "each database connection does an initial bulk allocation for page
    /// cache memory from sqlite3_malloc() sufficient for N cache lines".
    static let bulkPageCacheLines: Int32 = 1024
    /// What this process set up before its first connection opened (once, on the first thread that asks):
    ///
    /// - `bulkPageCache`: whether ``bulkPageCacheLines`` applies. SQLite takes the setting only before it is
    ///   initialized (`false` when something else in the process used SQLite first; connections then allocate pages
    ///   one by one, as SQLite does by default, and nothing else changes).
    /// - `fetchedCrypto`: whether SQLCipher's page HMAC and cipher run with SHA-1 and AES-256-CBC fetched from OpenSSL
    ///   once. SQLCipher 3.4.1 hands OpenSSL 3 the legacy `EVP_sha1()` and `EVP_aes_256_cbc()` for every page, and
    ///   OpenSSL 3 looks their implementation up again (its method store, under a lock) at each call: ≈ 0.5 µs of
    ///   ≈ 3.5 µs per 4 KiB page on this project's machine. Same algorithms, keys and bytes; `false` (SQLCipher's own
    ///   functions stay) when the SQLite answering the `sqlite3_*` symbols is not SQLCipher 3.4.1 (the connection then
    ///   refuses to open, ``SQLCipherError/Code/notSQLCipher``) or its registered provider is not the OpenSSL one.
    static let processSetup: (bulkPageCache: Bool, fetchedCrypto: Bool) = {
        let bulkPageCache = CSQLCipher_configureBulkPageCache(bulkPageCacheLines) == SQLITE_OK
        return (bulkPageCache, CSQLCipher_installFetchedCrypto() == 1)
    }()
    /// The bytes SQLite has allocated in this process and not freed (`sqlite3_memory_used`).
    static var sqliteMemoryUsed: Int { Int(CSQLCipher_memoryUsed()) }

    private var handle: OpaquePointer?
    private var statements: [String: SQLCipherStatement] = [:]
    /// The path of the database file.
    public let path: String
    /// Whether the database is encrypted (the connection was given a key).
    public let isEncrypted: Bool
    /// SQLCipher's version, as `PRAGMA cipher_version` gave it (for example `3.4.1`).
    public private(set) var cipherVersion = ""
    /// The database's page size in bytes: the one the options gave for an encrypted database (the first page opened
    /// with it), the one the file records for a plaintext one.
    public private(set) var pageSize = SQLCipherConnection.defaultPageSize
    /// The rows the statements of this connection stepped over in full table scans (SQLite's
    /// `SQLITE_STMTSTATUS_FULLSCAN_STEP`, summed as each statement is reset or finalized): zero while every read
    /// found its rows through a key or an index. What tests prove a bounded read with, not a timing.
    public private(set) var fullScanSteps = 0

    /// Adds what a statement counted since it last reported.
    func noteFullScanSteps(_ steps: Int32) {
        fullScanSteps += Int(steps)
    }

    /// Opens (creating it, owner-only, when missing) the database at `path`, keys it, checks that SQLCipher
    /// answers and that the key opens the file, and sets the connection up.
    ///
    /// Nothing is written to the file before the key was found to open it: a wrong key leaves it as it was.
    ///
    /// - Parameters:
    ///   - path: The database file; a missing file is created with mode `0600`.
    ///   - key: The raw 256-bit key (given as `PRAGMA key = "x'…'"`, so SQLCipher's own key derivation is not
    ///     used), or `nil` for a plaintext database.
    ///   - options: Journal, cache budget, durability.
    /// - Throws: `SQLCipherError` — ``SQLCipherError/badKey`` for a key that is not 32 bytes (and
    ///   ``SQLCipherError/misuse`` for a page size SQLite does not accept),
    ///   ``SQLCipherError/notSQLCipher`` when the SQLite answering in this process is not SQLCipher,
    ///   ``SQLCipherError/notADatabase`` when the key does not open the file (or it is no database, or its
    ///   first page is corrupt), or SQLite's error for a file that cannot be opened.
    public init(path: String, key: [UInt8]?, options: Options = Options()) throws(SQLCipherError) {
        self.path = path
        isEncrypted = key != nil
        if let key, key.count != Self.keyLength {
            throw SQLCipherError(.badKey, "a raw key has \(Self.keyLength) bytes, got \(key.count)")
        }
        guard Self.pageSizes.contains(options.pageSize) else {
            throw SQLCipherError(.misuse, "a page size is a power of two from 512 to 65536 bytes, got \(options.pageSize)")
        }
        if !options.readOnly {
            // SQLite creates files with 0644; the -wal, -shm and -journal files take the database file's mode.
            let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw SQLCipherError(.cannotOpen, "cannot open \(path): errno \(errno)") }
            Glibc.close(fd)
        }
        // Before SQLite's first use in the process (a `static let` is initialised once, on the first thread that asks).
        _ = Self.processSetup
        var db: OpaquePointer?
        let flags = (options.readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &db, flags, nil)
        guard code == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            // > Whether or not an error occurs when it is opened, resources associated with the database
            // > connection handle should be released by passing it to sqlite3_close() when it is no longer required.
            sqlite3_close(db)
            throw SQLCipherError(resultCode: code, "cannot open \(path): \(message)")
        }
        handle = db
        do throws(SQLCipherError) {
            if let key {
                var hex = "PRAGMA key = \"x'"
                for byte in key { hex += String(byte, radix: 16).count == 1 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }
                hex += "'\";"
                try run(hex, reportedAs: "PRAGMA key")
                try run("PRAGMA cipher_page_size = \(options.pageSize);")
            }
            // > PRAGMA cipher_version … returns the version of SQLCipher in use; a SQLite without the codec
            // > ignores unknown pragmas and returns no row. Then PRAGMA key was ignored too.
            guard let version = try firstText("PRAGMA cipher_version;"), !version.isEmpty else {
                throw SQLCipherError(.notSQLCipher, "the SQLite library answering in this process is not SQLCipher; refusing to open \(path)")
            }
            cipherVersion = version
            if key == nil { try run("PRAGMA page_size = \(options.pageSize);") }
            // The first read of page 1: a wrong key (or page size), a plaintext file opened with a key or a corrupt
            // first page fail here, before anything is written.
            _ = try firstText("SELECT count(*) FROM sqlite_master;")
            pageSize = key == nil ? Int(try firstText("PRAGMA page_size;") ?? "") ?? options.pageSize : options.pageSize
            if !options.readOnly {
                let mode = options.journal == .writeAheadLog ? "WAL" : "DELETE"
                let answered = try firstText("PRAGMA journal_mode = \(mode);")
                guard answered?.uppercased() == mode else {
                    throw SQLCipherError(.error, "journal_mode \(mode) was refused (\(answered ?? "no answer")) for \(path)")
                }
            }
            try run("PRAGMA synchronous = \(options.fullSync ? "FULL" : "NORMAL");")
            try run("PRAGMA temp_store = MEMORY;")
            try run("PRAGMA cache_size = -\(max(options.cacheBudget / 1024, 64));")
            let milliseconds = options.busyTimeout.components.seconds * 1000 + options.busyTimeout.components.attoseconds / 1_000_000_000_000_000
            sqlite3_busy_timeout(db, Int32(clamping: milliseconds))
        } catch {
            sqlite3_close(db)
            handle = nil
            throw error
        }
    }

    deinit { close() }

    /// Closes the connection: cached statements are finalized; with a write-ahead log, the last connection to
    /// close checkpoints it and removes the `-wal` and `-shm` files. Closing twice is harmless.
    ///
    /// The corresponding C function is `sqlite3_close_v2`.
    public func close() {
        guard let db = handle else { return }
        for statement in statements.values { statement.finalize() }
        statements.removeAll()
        sqlite3_close_v2(db)
        handle = nil
    }

    /// Runs one or more SQL statements that return no rows.
    ///
    /// The corresponding C function is `sqlite3_exec`.
    /// - Parameter sql: The statements.
    /// - Throws: `SQLCipherError` with SQLite's message.
    public func execute(_ sql: String) throws(SQLCipherError) {
        try run(sql)
    }

    /// Prepares a statement the caller owns.
    ///
    /// The corresponding C function is `sqlite3_prepare_v2`.
    /// - Parameter sql: One SQL statement, with `?` parameters.
    /// - Returns: The statement.
    /// - Throws: `SQLCipherError` with SQLite's message (a syntax error, an unknown table…).
    public func prepare(_ sql: String) throws(SQLCipherError) -> SQLCipherStatement {
        let db = try open()
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        guard code == SQLITE_OK, let statement else {
            throw SQLCipherError(resultCode: sqlite3_extended_errcode(db), "cannot prepare a statement: \(String(cString: sqlite3_errmsg(db)))")
        }
        return SQLCipherStatement(handle: statement, connection: self)
    }

    /// A statement prepared once per connection and kept: reset, with its bindings cleared.
    ///
    /// Do not use the same SQL twice at once (for example inside the loop over its own rows).
    /// - Parameter sql: One SQL statement, with `?` parameters.
    /// - Returns: The statement, ready to bind and step.
    /// - Throws: `SQLCipherError` as ``prepare(_:)``.
    public func cachedStatement(_ sql: String) throws(SQLCipherError) -> SQLCipherStatement {
        if let statement = statements[sql] {
            statement.reset()
            return statement
        }
        let statement = try prepare(sql)
        statements[sql] = statement
        return statement
    }

    /// Finalizes the cached statements (after a schema change that dropped what they read).
    public func clearStatementCache() {
        for statement in statements.values { statement.finalize() }
        statements.removeAll()
    }

    /// Runs `body` in a transaction that takes the write lock at once (`BEGIN IMMEDIATE`); it commits when
    /// `body` returns and rolls back when it throws.
    ///
    /// - Parameter body: The work; it must not begin another transaction.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or `SQLCipherError` when the transaction cannot begin or commit.
    public func transaction<R>(_ body: () throws -> R) throws -> R {
        try run("BEGIN IMMEDIATE;")
        let result: R
        do {
            result = try body()
            try run("COMMIT;")
        } catch {
            if let db = handle, sqlite3_get_autocommit(db) == 0 { _ = sqlite3_exec(db, "ROLLBACK;", nil, nil, nil) }
            throw error
        }
        return result
    }

    /// Begins a read transaction (`BEGIN DEFERRED`) that stays open until ``endTransaction()``: every statement until
    /// then sees the commit the first one saw, and none pays for taking and releasing SQLite's read locks. With a
    /// write-ahead log, a transaction held open keeps a checkpoint from going past what it sees: end it when another
    /// connection committed.
    ///
    /// - Throws: `SQLCipherError` (for example inside a transaction).
    public func beginReadTransaction() throws(SQLCipherError) {
        try run("BEGIN DEFERRED;")
    }

    /// Ends the transaction under way, if there is one (`COMMIT`: a read transaction has nothing to write).
    public func endTransaction() {
        if let db = handle, sqlite3_get_autocommit(db) == 0 { _ = sqlite3_exec(db, "COMMIT;", nil, nil, nil) }
    }

    /// Whether a transaction is under way (`sqlite3_get_autocommit` answers 0).
    public var isInTransaction: Bool { handle.map { sqlite3_get_autocommit($0) == 0 } ?? false }

    /// The database's format number (`PRAGMA user_version`), `0` in a new database.
    /// - Throws: `SQLCipherError`.
    public func userVersion() throws(SQLCipherError) -> Int {
        Int(try firstText("PRAGMA user_version;") ?? "0") ?? 0
    }

    /// Sets the database's format number (`PRAGMA user_version`), inside or outside a transaction.
    /// - Parameter version: The number.
    /// - Throws: `SQLCipherError`.
    public func setUserVersion(_ version: Int) throws(SQLCipherError) {
        try run("PRAGMA user_version = \(version);")
    }

    /// The rows the last `INSERT`, `UPDATE` or `DELETE` changed. The corresponding C function is `sqlite3_changes`.
    public var changes: Int { handle.map { Int(sqlite3_changes($0)) } ?? 0 }

    // MARK: Internals

    func open() throws(SQLCipherError) -> OpaquePointer {
        guard let handle else { throw SQLCipherError(.closed, "the connection to \(path) is closed") }
        return handle
    }

    func error(_ code: Int32, _ what: String) -> SQLCipherError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "closed"
        let extended = handle.map { sqlite3_extended_errcode($0) } ?? code
        return SQLCipherError(resultCode: extended == 0 ? code : extended, "\(what): \(message)")
    }

    /// `sqlite3_exec`; `reportedAs` replaces the SQL in an error (the key statement is never quoted).
    private func run(_ sql: String, reportedAs: String? = nil) throws(SQLCipherError) {
        let db = try open()
        let code = sqlite3_exec(db, sql, nil, nil, nil)
        guard code == SQLITE_OK else {
            throw error(code, reportedAs ?? String(sql.prefix(80)))
        }
    }

    /// The first column of the first row of `sql` as text, or `nil` without a row.
    private func firstText(_ sql: String) throws(SQLCipherError) -> String? {
        let statement = try prepare(sql)
        defer { statement.finalize() }
        guard try statement.step() else { return nil }
        return statement.text(at: 0)
    }
}
