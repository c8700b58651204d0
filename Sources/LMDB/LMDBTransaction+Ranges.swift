internal import CLMDB
import Foundation

/// The figures of one database (`mdb_stat`): its page size, the pages of its B-tree by kind, its depth and
/// its number of entries.
public struct LMDBDatabaseStatistics: Sendable, Equatable {
    /// The environment's page size in bytes (fixed when the files were created).
    public var pageSize: Int
    /// The depth of the B-tree.
    public var depth: Int
    /// Internal (non-leaf) pages.
    public var branchPages: Int
    /// Leaf pages.
    public var leafPages: Int
    /// Overflow pages: a value too large for a leaf node lives in a run of contiguous overflow pages.
    public var overflowPages: Int
    /// Key/value pairs.
    public var entries: Int
}

/// Key ranges: every entry whose key starts with a given prefix, walked in key order.
extension LMDBTransaction {
    /// The figures of `database` as of this transaction.
    ///
    /// The corresponding C function is `mdb_stat`.
    ///
    /// - Parameter database: The database to describe.
    /// - Returns: Its page size, pages by kind, depth and entries.
    /// - Throws: `LMDBError` when the transaction has ended.
    public func statistics(of database: LMDBDatabase) throws(LMDBError) -> LMDBDatabaseStatistics {
        guard let txn = handle else { throw .transactionEnded }
        var stat = MDB_stat()
        try check(mdb_stat(txn, database.handle, &stat))
        return LMDBDatabaseStatistics(pageSize: Int(stat.ms_psize), depth: Int(stat.ms_depth), branchPages: stat.ms_branch_pages,
                                      leafPages: stat.ms_leaf_pages, overflowPages: stat.ms_overflow_pages, entries: stat.ms_entries)
    }

    /// Lends each entry whose key starts with `prefix` to `body`, in key order, without copying
    /// (`MDB_SET_RANGE`, then `MDB_NEXT`): the buffers point into the memory map and are valid only inside `body`.
    ///
    /// - Parameters:
    ///   - prefix: The keys' common first bytes (not empty).
    ///   - database: The database to walk.
    ///   - body: Receives each key and value; returns `false` to stop the walk.
    /// - Throws: `LMDBError`, for example `.badValueSize` for an empty prefix, or what `body` throws.
    public func forEachEntry(withKeyPrefix prefix: [UInt8], in database: LMDBDatabase,
                             _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool) throws {
        try withRawCursor(in: database) { cursor in
            var key = MDB_val()
            var value = MDB_val()
            var code = Self.seek(cursor, prefix, &key, &value)
            while code == 0, Self.hasPrefix(key, prefix) {
                guard try body(key.buffer, value.buffer) else { return }
                code = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
            }
            if code != MDB_NOTFOUND { try check(code) }
        }
    }

    /// Removes every entry whose key starts with `prefix` (a cursor walk from the first such key, each
    /// removed with `mdb_cursor_del`).
    ///
    /// - Parameters:
    ///   - prefix: The keys' common first bytes (not empty).
    ///   - database: The database to write.
    /// - Returns: The number of entries removed.
    /// - Throws: `LMDBError`, for example `.permissionDenied` in a read-only transaction.
    @discardableResult
    public func removeEntries(withKeyPrefix prefix: [UInt8], in database: LMDBDatabase) throws -> Int {
        try withRawCursor(in: database) { cursor in
            var key = MDB_val()
            var value = MDB_val()
            var removed = 0
            var code = Self.seek(cursor, prefix, &key, &value)
            while code == 0, Self.hasPrefix(key, prefix) {
                // Copied before the removal (the cursor's key points into a page it may change), recorded after it.
                let removedKey = database.handle == observed ? Array(UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size)) : []
                try check(mdb_cursor_del(cursor, 0))
                noteChange(in: database.handle, key: removedKey)
                removed += 1
                // After a removal the cursor stands on the entry that followed; `MDB_NEXT` returns it.
                code = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
            }
            if code != MDB_NOTFOUND { try check(code) }
            return removed
        }
    }

    private func withRawCursor<R>(in database: LMDBDatabase, _ body: (OpaquePointer) throws -> R) throws -> R {
        guard let txn = handle else { throw LMDBError.transactionEnded }
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, database.handle, &cursor))
        guard let cursor else { throw LMDBError.badTransaction }
        defer { mdb_cursor_close(cursor) }
        return try body(cursor)
    }

    private static func seek(_ cursor: OpaquePointer, _ prefix: [UInt8], _ key: inout MDB_val, _ value: inout MDB_val) -> Int32 {
        prefix.withUnsafeBytes { bytes in
            key = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            return mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE)
        }
    }

    private static func hasPrefix(_ key: MDB_val, _ prefix: [UInt8]) -> Bool {
        guard key.mv_size >= prefix.count, let data = key.mv_data else { return prefix.isEmpty }
        return prefix.withUnsafeBytes { bytes in bytes.baseAddress.map { memcmp(data, $0, prefix.count) == 0 } ?? true }
    }
}
