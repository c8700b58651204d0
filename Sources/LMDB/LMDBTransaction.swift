internal import CLMDB
import Foundation

/// A handle on a database inside an environment (`MDB_dbi`), valid for the environment's lifetime.
public struct LMDBDatabase: Sendable, Hashable {
    let handle: MDB_dbi
    /// The database's name, or `nil` for the main database.
    public let name: String?
}

/// One LMDB transaction, handed to the closures of `LMDBEnvironment.read` and `.write`.
///
/// A transaction is valid only inside its closure and never crosses a thread or task boundary.
/// "Not found" is `nil`; values are copied out (or lent to a closure) before the transaction ends.
public final class LMDBTransaction {
    private(set) var handle: OpaquePointer?
    /// Whether this is a read-only transaction.
    public let isReadOnly: Bool
    /// The database whose changed keys this write transaction records for the environment's commit observer.
    let observed: MDB_dbi?
    /// What this write transaction changed so far (see ``LMDBCommit``).
    var changes = Changes()

    /// What a write transaction changed: whether anything (then its commit takes its ID for certain: LMDB
    /// skips the commit of a transaction that changed nothing, and the next writer gets the ID), and the keys
    /// set or removed in the observed database.
    struct Changes {
        var any = false
        var keys: [[UInt8]] = []
        var unlisted = false
    }

    init(handle: OpaquePointer, readOnly: Bool, observed: MDB_dbi? = nil) {
        self.handle = handle
        self.isReadOnly = readOnly
        self.observed = observed
    }

    /// Records a successful put or removal of `key` in `database` (either always changes the transaction's pages).
    func noteChange(in database: MDB_dbi, key: some ContiguousBytes) {
        changes.any = true
        guard database == observed else { return }
        changes.keys.append(key.withUnsafeBytes { Array($0) })
    }

    /// Records a successful change of `database` not listed key by key (emptied, an entry removed through a cursor).
    func noteUnlistedChange(in database: MDB_dbi) {
        changes.any = true
        if database == observed { changes.unlisted = true }
    }

    deinit {
        abort()
    }

    /// Work to run once this transaction has committed (never when it aborts).
    private var commitActions: [() -> Void] = []

    func commit() throws(LMDBError) {
        guard let txn = handle else { throw .transactionEnded }
        handle = nil
        let actions = commitActions
        commitActions = []
        try check(mdb_txn_commit(txn))
        for action in actions { action() }
    }

    func abort() {
        commitActions = []
        if let txn = handle {
            handle = nil
            mdb_txn_abort(txn)
        }
    }

    /// Runs `action` after this write transaction commits, on the committing thread; it never runs when
    /// the transaction aborts (a thrown error, a retry after the map grew). For state kept outside the
    /// files that must follow only what was really committed.
    ///
    /// - Parameter action: The work to run after the commit.
    public func afterCommit(_ action: @escaping () -> Void) {
        commitActions.append(action)
    }

    /// The transaction's ID (`mdb_txn_id`): for a read transaction, the ID of the last transaction
    /// committed when it began (the snapshot it sees); for a write transaction, the ID its commit will
    /// have. 0 once the transaction has ended.
    public var id: UInt64 {
        guard let txn = handle else { return 0 }
        return UInt64(mdb_txn_id(txn))
    }

    @inline(__always)
    private func active() throws(LMDBError) -> OpaquePointer {
        guard let txn = handle else { throw .transactionEnded }
        return txn
    }

    /// Opens a named database (or the main one) in this transaction, creating it if asked to.
    ///
    /// The corresponding C function is `mdb_dbi_open`. Creating needs a write transaction.
    ///
    /// - Parameters:
    ///   - name: The database's name, or `nil` for the main database.
    ///   - create: Whether to create the database when it does not exist. The default is `true`.
    /// - Returns: The handle, or `nil` when the database does not exist and `create` is `false`.
    /// - Throws: `LMDBError`, for example `.databasesFull`, or `.permissionDenied` when creating in a
    ///   read-only transaction.
    public func openDatabase(named name: String?, create: Bool = true) throws(LMDBError) -> LMDBDatabase? {
        let txn = try active()
        var dbi: MDB_dbi = 0
        let flags: UInt32 = create && !isReadOnly ? UInt32(MDB_CREATE) : 0
        let code = mdb_dbi_open(txn, name, flags, &dbi)
        if code == MDB_NOTFOUND { return nil }
        try check(code)
        return LMDBDatabase(handle: dbi, name: name)
    }

    /// Returns a copy of the value stored under `key`.
    ///
    /// The corresponding C function is `mdb_get`.
    ///
    /// - Parameters:
    ///   - key: The key's bytes (1 to 511 bytes).
    ///   - database: The database to read.
    /// - Returns: The value's bytes, or `nil` when the key is absent.
    /// - Throws: `LMDBError`, for example `.badValueSize` for an empty key.
    public func value(forKey key: some ContiguousBytes, in database: LMDBDatabase) throws(LMDBError) -> [UInt8]? {
        let txn = try active()
        var data = MDB_val()
        let code = withMDBVal(key) { mdb_get(txn, database.handle, &$0, &data) }
        if code == MDB_NOTFOUND { return nil }
        try check(code)
        return data.bytes
    }

    /// Lends the stored value of `key` to `body` without copying it.
    ///
    /// The buffer points into the memory map and is valid only inside `body`; copy what you keep.
    ///
    /// - Parameters:
    ///   - key: The key's bytes.
    ///   - database: The database to read.
    ///   - body: Receives the value's bytes, or `nil` when the key is absent.
    /// - Returns: What `body` returns.
    /// - Throws: `LMDBError` from the lookup, or what `body` throws.
    public func withValue<R, E: Error>(
        forKey key: some ContiguousBytes,
        in database: LMDBDatabase,
        _ body: (UnsafeRawBufferPointer?) throws(E) -> R
    ) throws -> R {
        let txn = try active()
        var data = MDB_val()
        let code = withMDBVal(key) { mdb_get(txn, database.handle, &$0, &data) }
        if code == MDB_NOTFOUND { return try body(nil) }
        try check(code)
        return try body(data.buffer)
    }

    /// Stores `value` under `key`, replacing what was there.
    ///
    /// The corresponding C function is `mdb_put`.
    ///
    /// - Parameters:
    ///   - value: The value's bytes (may be empty).
    ///   - key: The key's bytes (1 to 511 bytes).
    ///   - database: The database to write.
    /// - Throws: `LMDBError`, for example `.mapFull` (handled by `write`), `.badValueSize`, or
    ///   `.permissionDenied` in a read-only transaction.
    public func setValue(_ value: some ContiguousBytes, forKey key: some ContiguousBytes, in database: LMDBDatabase) throws(LMDBError) {
        let txn = try active()
        let code = withMDBVal(key) { keyVal in
            withMDBVal(value) { dataVal in mdb_put(txn, database.handle, &keyVal, &dataVal, 0) }
        }
        try check(code)
        noteChange(in: database.handle, key: key)
    }

    /// Reserves `count` bytes under `key` and lets `fill` write the value in place (no extra copy).
    ///
    /// The corresponding C call is `mdb_put` with `MDB_RESERVE`.
    ///
    /// - Parameters:
    ///   - count: The value's size in bytes.
    ///   - key: The key's bytes.
    ///   - database: The database to write.
    ///   - fill: Writes exactly `count` bytes into the reserved space.
    /// - Throws: `LMDBError` from the write, or what `fill` throws (the transaction then aborts when
    ///   the error leaves the `write` closure).
    public func setValue(
        count: Int,
        forKey key: some ContiguousBytes,
        in database: LMDBDatabase,
        fill: (UnsafeMutableRawBufferPointer) throws -> Void
    ) throws {
        let txn = try active()
        var data = MDB_val(mv_size: count, mv_data: nil)
        let code = withMDBVal(key) { keyVal in mdb_put(txn, database.handle, &keyVal, &data, UInt32(MDB_RESERVE)) }
        try check(code)
        noteChange(in: database.handle, key: key)
        try fill(UnsafeMutableRawBufferPointer(start: data.mv_data, count: count))
    }

    /// Removes `key` and its value.
    ///
    /// The corresponding C function is `mdb_del`.
    ///
    /// - Parameters:
    ///   - key: The key's bytes.
    ///   - database: The database to write.
    /// - Returns: `true` when the key existed.
    /// - Throws: `LMDBError`, for example `.permissionDenied` in a read-only transaction.
    @discardableResult
    public func removeValue(forKey key: some ContiguousBytes, in database: LMDBDatabase) throws(LMDBError) -> Bool {
        let txn = try active()
        let code = withMDBVal(key) { mdb_del(txn, database.handle, &$0, nil) }
        if code == MDB_NOTFOUND { return false }
        try check(code)
        noteChange(in: database.handle, key: key)
        return true
    }

    /// The number of entries in `database`.
    ///
    /// The corresponding C function is `mdb_stat`.
    ///
    /// - Parameter database: The database to count.
    /// - Returns: Its number of key/value pairs.
    /// - Throws: `LMDBError` when the transaction has ended.
    public func count(in database: LMDBDatabase) throws(LMDBError) -> Int {
        try statistics(of: database).entries
    }

    /// Removes every entry of `database` (the database itself stays).
    ///
    /// The corresponding C function is `mdb_drop` with `del = 0`.
    ///
    /// - Parameter database: The database to empty.
    /// - Throws: `LMDBError`, for example `.permissionDenied` in a read-only transaction.
    public func removeAll(in database: LMDBDatabase) throws(LMDBError) {
        let txn = try active()
        try check(mdb_drop(txn, database.handle, 0))
        noteUnlistedChange(in: database.handle)
    }

    /// Runs `body` with a cursor over `database`; the cursor closes when `body` returns.
    ///
    /// The corresponding C functions are `mdb_cursor_open` and `mdb_cursor_close`.
    ///
    /// - Parameters:
    ///   - database: The database to walk.
    ///   - body: The work to do with the cursor.
    /// - Returns: What `body` returns.
    /// - Throws: `LMDBError` when the cursor cannot open, or what `body` throws.
    public func withCursor<R>(in database: LMDBDatabase, _ body: (LMDBCursor) throws -> R) throws -> R {
        let txn = try active()
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, database.handle, &cursor))
        guard let cursor else { throw LMDBError.badTransaction }
        let wrapper = LMDBCursor(handle: cursor, transaction: self, database: database.handle)
        defer { wrapper.close() }
        return try body(wrapper)
    }
}

@available(*, unavailable)
extension LMDBTransaction: Sendable {}
