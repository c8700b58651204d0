internal import CLMDB

/// An error reported by LMDB or by this wrapper.
///
/// Match a kind with its static member, as with an enum case (`MDB_MAP_FULL` is `mapFull`):
///
/// ```swift
/// do { try environment.write { txn in … } }
/// catch LMDBError.mapFull { … }
/// ```
///
/// (`error == .mapFull` and a `case LMDBError.mapFull:` in a `switch` work too.) The numeric code stays readable
/// as data in ``code`` (system errors keep their `errno` value, for example 28 for `ENOSPC`). "Not found"
/// (`MDB_NOTFOUND`) is never thrown by the read APIs: they return `nil` instead.
public struct LMDBError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The numeric code: an LMDB error code (negative), an `errno` value (positive), or one of the
    /// wrapper's own codes below -40,000. Errors are equal when their codes are.
    public let code: Int32

    /// An error from its numeric code (LMDB's return value or an `errno`).
    init(code: Int32) {
        self.code = code
    }

    /// The key already exists and overwriting was not allowed (`MDB_KEYEXIST`).
    public static let keyExists = LMDBError(code: MDB_KEYEXIST)
    /// The key was not found (`MDB_NOTFOUND`); the read APIs return `nil` instead of throwing it.
    public static let notFound = LMDBError(code: MDB_NOTFOUND)
    /// A requested page was not found: the database is corrupted (`MDB_PAGE_NOTFOUND`).
    public static let pageNotFound = LMDBError(code: MDB_PAGE_NOTFOUND)
    /// A page has the wrong type: the database is corrupted (`MDB_CORRUPTED`).
    public static let corrupted = LMDBError(code: MDB_CORRUPTED)
    /// The environment had a fatal error and must be closed (`MDB_PANIC`).
    public static let panic = LMDBError(code: MDB_PANIC)
    /// The environment was written by an incompatible LMDB version (`MDB_VERSION_MISMATCH`).
    public static let versionMismatch = LMDBError(code: MDB_VERSION_MISMATCH)
    /// The file is not an LMDB data file (`MDB_INVALID`).
    public static let invalid = LMDBError(code: MDB_INVALID)
    /// The memory map is full (`MDB_MAP_FULL`); `LMDBEnvironment.write` grows the map and retries first.
    public static let mapFull = LMDBError(code: MDB_MAP_FULL)
    /// The environment's `maxDatabases` was reached (`MDB_DBS_FULL`).
    public static let databasesFull = LMDBError(code: MDB_DBS_FULL)
    /// The environment's `maxReaders` was reached (`MDB_READERS_FULL`).
    public static let readersFull = LMDBError(code: MDB_READERS_FULL)
    /// Too many thread-local storage keys are in use (`MDB_TLS_FULL`).
    public static let tlsFull = LMDBError(code: MDB_TLS_FULL)
    /// The transaction has too many dirty pages (`MDB_TXN_FULL`).
    public static let transactionFull = LMDBError(code: MDB_TXN_FULL)
    /// The cursor stack is too deep (`MDB_CURSOR_FULL`).
    public static let cursorFull = LMDBError(code: MDB_CURSOR_FULL)
    /// A page has no more space (`MDB_PAGE_FULL`).
    public static let pageFull = LMDBError(code: MDB_PAGE_FULL)
    /// Another process grew the map beyond this environment's size (`MDB_MAP_RESIZED`).
    public static let mapResized = LMDBError(code: MDB_MAP_RESIZED)
    /// The operation is incompatible with the database's flags (`MDB_INCOMPATIBLE`).
    public static let incompatible = LMDBError(code: MDB_INCOMPATIBLE)
    /// A reader lock slot is invalid (`MDB_BAD_RSLOT`).
    public static let badReaderSlot = LMDBError(code: MDB_BAD_RSLOT)
    /// The transaction must abort, has a child, or is invalid (`MDB_BAD_TXN`).
    public static let badTransaction = LMDBError(code: MDB_BAD_TXN)
    /// A key or value has an unsupported size, for example an empty key (`MDB_BAD_VALSIZE`).
    public static let badValueSize = LMDBError(code: MDB_BAD_VALSIZE)
    /// The database handle changed unexpectedly (`MDB_BAD_DBI`).
    public static let badDatabase = LMDBError(code: MDB_BAD_DBI)
    /// Permission denied (`EACCES`), for example a write inside a read-only transaction.
    public static let permissionDenied = LMDBError(code: 13)
    /// An invalid argument (`EINVAL`).
    public static let invalidArgument = LMDBError(code: 22)
    /// The environment was closed before or while the operation ran (wrapper code).
    public static let environmentClosed = LMDBError(code: -40_001)
    /// `write` was called from inside another write transaction of the same environment (wrapper code).
    public static let nestedWriteTransaction = LMDBError(code: -40_002)
    /// The transaction was used after it ended, or from outside its closure (wrapper code).
    public static let transactionEnded = LMDBError(code: -40_003)

    /// The kind's name, such as `LMDBError.mapFull`, or `LMDBError(code)` for a code without a static member.
    public var shortDescription: String {
        Self.names[code].map { "LMDBError.\($0)" } ?? "LMDBError(\(code))"
    }

    /// The kind's name and the message: LMDB's `mdb_strerror` text, or the wrapper's own text.
    public var description: String {
        switch self {
        case .environmentClosed: return "\(shortDescription): the environment is closed"
        case .nestedWriteTransaction: return "\(shortDescription): a write transaction was started inside another one"
        case .transactionEnded: return "\(shortDescription): the transaction has already ended"
        default:
            guard let text = mdb_strerror(code) else { return "\(shortDescription): LMDB error \(code)" }
            return "\(shortDescription): " + String(cString: text)
        }
    }

    /// The names of the static members, by code.
    private static let names: [Int32: String] = [
        MDB_KEYEXIST: "keyExists", MDB_NOTFOUND: "notFound", MDB_PAGE_NOTFOUND: "pageNotFound",
        MDB_CORRUPTED: "corrupted", MDB_PANIC: "panic", MDB_VERSION_MISMATCH: "versionMismatch",
        MDB_INVALID: "invalid", MDB_MAP_FULL: "mapFull", MDB_DBS_FULL: "databasesFull",
        MDB_READERS_FULL: "readersFull", MDB_TLS_FULL: "tlsFull", MDB_TXN_FULL: "transactionFull",
        MDB_CURSOR_FULL: "cursorFull", MDB_PAGE_FULL: "pageFull", MDB_MAP_RESIZED: "mapResized",
        MDB_INCOMPATIBLE: "incompatible", MDB_BAD_RSLOT: "badReaderSlot", MDB_BAD_TXN: "badTransaction",
        MDB_BAD_VALSIZE: "badValueSize", MDB_BAD_DBI: "badDatabase", 13: "permissionDenied",
        22: "invalidArgument", -40_001: "environmentClosed", -40_002: "nestedWriteTransaction",
        -40_003: "transactionEnded",
    ]

    /// Matches an arbitrary error against this code, so `catch LMDBError.mapFull` works.
    ///
    /// - Parameters:
    ///   - pattern: The code to match.
    ///   - error: The error that was thrown.
    /// - Returns: `true` when `error` is an `LMDBError` with the same code.
    public static func ~= (pattern: LMDBError, error: any Error) -> Bool {
        (error as? LMDBError) == pattern
    }
}

/// The single funnel every LMDB return code goes through.
@inline(__always)
func check(_ code: Int32) throws(LMDBError) {
    if code != 0 { throw LMDBError(code: code) }
}
