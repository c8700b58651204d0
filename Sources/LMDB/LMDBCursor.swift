internal import CLMDB

/// A position in a database, walked in key order (bytewise, as `memcmp` orders them).
///
/// Obtained from `LMDBTransaction.withCursor(in:_:)`; valid only inside that closure. Every move
/// returns copies of the key and value, or `nil` when there is no such entry.
public final class LMDBCursor {
    private var handle: OpaquePointer?
    /// The transaction the cursor walks (it records the cursor's removals).
    private unowned let transaction: LMDBTransaction
    private let database: MDB_dbi

    init(handle: OpaquePointer, transaction: LMDBTransaction, database: MDB_dbi) {
        self.handle = handle
        self.transaction = transaction
        self.database = database
    }

    deinit {
        close()
    }

    func close() {
        if let cursor = handle {
            handle = nil
            mdb_cursor_close(cursor)
        }
    }

    private func move(_ op: MDB_cursor_op, key: [UInt8]? = nil) throws(LMDBError) -> (key: [UInt8], value: [UInt8])? {
        guard let cursor = handle else { throw .transactionEnded }
        var keyVal = MDB_val()
        var dataVal = MDB_val()
        let code: Int32
        if let key {
            code = key.withUnsafeBytes { buffer in
                keyVal = MDB_val(mv_size: buffer.count, mv_data: UnsafeMutableRawPointer(mutating: buffer.baseAddress))
                return mdb_cursor_get(cursor, &keyVal, &dataVal, op)
            }
        } else {
            code = mdb_cursor_get(cursor, &keyVal, &dataVal, op)
        }
        if code == MDB_NOTFOUND { return nil }
        try check(code)
        return (keyVal.bytes, dataVal.bytes)
    }

    /// Moves to the first entry (`MDB_FIRST`).
    ///
    /// - Returns: The entry, or `nil` when the database is empty.
    /// - Throws: `LMDBError` when the cursor is no longer valid.
    public func first() throws(LMDBError) -> (key: [UInt8], value: [UInt8])? { try move(MDB_FIRST) }

    /// Moves to the last entry (`MDB_LAST`).
    ///
    /// - Returns: The entry, or `nil` when the database is empty.
    /// - Throws: `LMDBError` when the cursor is no longer valid.
    public func last() throws(LMDBError) -> (key: [UInt8], value: [UInt8])? { try move(MDB_LAST) }

    /// Moves to the next entry (`MDB_NEXT`); from a fresh cursor, to the first one.
    ///
    /// - Returns: The entry, or `nil` past the end.
    /// - Throws: `LMDBError` when the cursor is no longer valid.
    public func next() throws(LMDBError) -> (key: [UInt8], value: [UInt8])? { try move(MDB_NEXT) }

    /// Moves to the previous entry (`MDB_PREV`); from a fresh cursor, to the last one.
    ///
    /// - Returns: The entry, or `nil` before the beginning.
    /// - Throws: `LMDBError` when the cursor is no longer valid.
    public func previous() throws(LMDBError) -> (key: [UInt8], value: [UInt8])? { try move(MDB_PREV) }

    /// Moves to the first entry whose key is greater than or equal to `key` (`MDB_SET_RANGE`).
    ///
    /// - Parameter key: The lower bound.
    /// - Returns: The entry, or `nil` when every key is smaller.
    /// - Throws: `LMDBError`, for example `.badValueSize` for an empty key.
    public func seek(atLeast key: [UInt8]) throws(LMDBError) -> (key: [UInt8], value: [UInt8])? {
        try move(MDB_SET_RANGE, key: key)
    }

    /// Removes the entry at the cursor (`mdb_cursor_del`); `next()` then returns the entry after it.
    ///
    /// - Throws: `LMDBError`, for example `.permissionDenied` in a read-only transaction.
    public func removeCurrent() throws(LMDBError) {
        guard let cursor = handle else { throw .transactionEnded }
        try check(mdb_cursor_del(cursor, 0))
        transaction.noteUnlistedChange(in: database)
    }
}

@available(*, unavailable)
extension LMDBCursor: Sendable {}
