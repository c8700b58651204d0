internal import CSQLCipher

/// A value SQLite stores: one of its five storage classes.
public enum SQLCipherValue: Sendable, Hashable {
    /// `NULL`.
    case null
    /// A signed 64-bit integer.
    case integer(Int64)
    /// An IEEE 754 double.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Bytes.
    case blob([UInt8])

    /// Whether `left` sorts before `right` as SQLite's `ORDER BY` sorts with the `BINARY` collation: `NULL` first,
    /// then numbers (integers and reals by value), then text (by its UTF-8 bytes), then blobs (by their bytes).
    public static func sortsBefore(_ left: SQLCipherValue, _ right: SQLCipherValue) -> Bool {
        switch (left, right) {
        case (.integer(let a), .integer(let b)): return a < b
        case (.real(let a), .real(let b)): return a < b
        case (.integer(let a), .real(let b)): return Double(a) < b
        case (.real(let a), .integer(let b)): return a < Double(b)
        case (.text(let a), .text(let b)): return a.utf8.lexicographicallyPrecedes(b.utf8)
        case (.blob(let a), .blob(let b)): return a.lexicographicallyPrecedes(b)
        default: return left.storageClass < right.storageClass
        }
    }

    /// Whether the values `left` sort before the values `right`, term by term (the columns of an `ORDER BY`).
    public static func sortsBefore(_ left: [SQLCipherValue], _ right: [SQLCipherValue]) -> Bool {
        for (a, b) in zip(left, right) {
            if sortsBefore(a, b) { return true }
            if sortsBefore(b, a) { return false }
        }
        return left.count < right.count
    }

    /// SQLite's order of storage classes: NULL, numbers, text, blobs.
    private var storageClass: Int {
        switch self {
        case .null: return 0
        case .integer, .real: return 1
        case .text: return 2
        case .blob: return 3
        }
    }
}

/// A prepared statement of an ``SQLCipherConnection``: bind parameters (counted from 1, as SQLite counts),
/// step through rows, read columns (counted from 0), reset to run again.
///
/// Like its connection it is used from one thread at a time, and it must not outlive the connection.
public final class SQLCipherStatement {
    private var handle: OpaquePointer?
    private let connection: SQLCipherConnection

    init(handle: OpaquePointer, connection: SQLCipherConnection) {
        self.handle = handle
        self.connection = connection
    }

    deinit { finalize() }

    /// Releases the statement. The corresponding C function is `sqlite3_finalize`.
    func finalize() {
        if let handle {
            reportFullScanSteps(handle)
            sqlite3_finalize(handle)
        }
        handle = nil
    }

    private func statement() throws(SQLCipherError) -> OpaquePointer {
        guard let handle else { throw SQLCipherError(.misuse, "the statement was finalized") }
        return handle
    }

    /// Binds `value` to the parameter at `index` (from 1); text and bytes are copied.
    ///
    /// The corresponding C functions are `sqlite3_bind_*`.
    /// - Parameters:
    ///   - value: The value.
    ///   - index: The parameter's index, from 1.
    /// - Throws: `SQLCipherError` (for example ``SQLCipherError/error`` for an index out of range).
    public func bind(_ value: SQLCipherValue, at index: Int32) throws(SQLCipherError) {
        let handle = try statement()
        let code: Int32
        switch value {
        case .null: code = sqlite3_bind_null(handle, index)
        case .integer(let number): code = sqlite3_bind_int64(handle, index, number)
        case .real(let number): code = sqlite3_bind_double(handle, index, number)
        case .text(let text):
            // A native string's UTF-8 bytes in place (SQLite copies them: transient); others through a C string.
            // (Not an empty one: SQLite binds NULL for a null pointer, and an empty buffer may have none.)
            let bound = text.isEmpty ? nil : text.utf8.withContiguousStorageIfAvailable { bytes in
                bytes.withMemoryRebound(to: CChar.self) { buffer in
                    sqlite3_bind_text(handle, index, buffer.baseAddress, Int32(buffer.count), CSQLCipher_transient())
                }
            }
            code = bound ?? text.utf8CString.withUnsafeBufferPointer { buffer in
                sqlite3_bind_text(handle, index, buffer.baseAddress, Int32(buffer.count - 1), CSQLCipher_transient())
            }
        case .blob(let bytes):
            code = bytes.withUnsafeBytes { raw in
                sqlite3_bind_blob(handle, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count), CSQLCipher_transient())
            }
        }
        guard code == SQLITE_OK else { throw connection.error(code, "cannot bind parameter \(index)") }
    }

    /// Steps to the next row.
    ///
    /// The corresponding C function is `sqlite3_step`.
    /// - Returns: `true` when a row is there to read, `false` when the statement is done.
    /// - Throws: `SQLCipherError` with SQLite's message (a constraint, a corrupt page, a full disk…).
    public func step() throws(SQLCipherError) -> Bool {
        let code = sqlite3_step(try statement())
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = connection.error(code, "a statement failed")
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Resets the statement to run again and clears its bindings.
    ///
    /// The corresponding C functions are `sqlite3_reset` and `sqlite3_clear_bindings`.
    public func reset() {
        guard let handle else { return }
        reportFullScanSteps(handle)
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Hands the statement's count of full-scan steps to its connection (``SQLCipherConnection/fullScanSteps``)
    /// and zeroes it.
    private func reportFullScanSteps(_ handle: OpaquePointer) {
        let steps = sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_FULLSCAN_STEP, 1)
        if steps > 0 { connection.noteFullScanSteps(steps) }
    }

    /// The number of columns of a row.
    public var columnCount: Int32 { handle.map { sqlite3_column_count($0) } ?? 0 }

    /// Whether the column at `index` (from 0) of the current row is `NULL`.
    /// - Parameter index: The column, from 0.
    public func isNull(at index: Int32) -> Bool {
        guard let handle else { return true }
        return sqlite3_column_type(handle, index) == SQLITE_NULL
    }

    /// The column at `index` (from 0) as an integer (`0` for `NULL`).
    /// - Parameter index: The column, from 0.
    public func integer(at index: Int32) -> Int64 {
        handle.map { sqlite3_column_int64($0, index) } ?? 0
    }

    /// The column at `index` (from 0) as a double (`0` for `NULL`).
    /// - Parameter index: The column, from 0.
    public func real(at index: Int32) -> Double {
        handle.map { sqlite3_column_double($0, index) } ?? 0
    }

    /// The column at `index` (from 0) as text (`""` for `NULL`).
    /// - Parameter index: The column, from 0.
    public func text(at index: Int32) -> String {
        guard let handle, let pointer = sqlite3_column_text(handle, index) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, index))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    /// The column at `index` (from 0) as bytes (empty for `NULL`).
    /// - Parameter index: The column, from 0.
    public func blob(at index: Int32) -> [UInt8] {
        guard let handle, let pointer = sqlite3_column_blob(handle, index) else { return [] }
        let count = Int(sqlite3_column_bytes(handle, index))
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// The column at `index` (from 0) in its storage class.
    /// - Parameter index: The column, from 0.
    public func value(at index: Int32) -> SQLCipherValue {
        guard let handle else { return .null }
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER: return .integer(integer(at: index))
        case SQLITE_FLOAT: return .real(real(at: index))
        case SQLITE_TEXT: return .text(text(at: index))
        case SQLITE_BLOB: return .blob(blob(at: index))
        default: return .null
        }
    }
}
