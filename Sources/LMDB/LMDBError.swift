internal import CLMDB

/// An error reported by LMDB or by this wrapper, identified by its numeric code.
///
/// Codes from LMDB keep their C value (`MDB_MAP_FULL` is `mapFull`, and system errors keep their `errno`
/// value), so callers can match them by name:
///
/// ```swift
/// do { try environment.write { txn in … } }
/// catch LMDBError.mapFull { … }
/// ```
///
/// "Not found" (`MDB_NOTFOUND`) is never thrown by the read APIs: they return `nil` instead.
public struct LMDBError: Error, RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The numeric code: an LMDB error code (negative), an `errno` value (positive), or one of the
    /// wrapper's own codes below -40,000.
    public let rawValue: Int32

    /// Creates an error from its numeric code.
    ///
    /// - Parameter rawValue: The LMDB, `errno` or wrapper code.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The key already exists and overwriting was not allowed (`MDB_KEYEXIST`).
    public static let keyExists = LMDBError(rawValue: MDB_KEYEXIST)
    /// The key was not found (`MDB_NOTFOUND`); the read APIs return `nil` instead of throwing it.
    public static let notFound = LMDBError(rawValue: MDB_NOTFOUND)
    /// A requested page was not found: the database is corrupted (`MDB_PAGE_NOTFOUND`).
    public static let pageNotFound = LMDBError(rawValue: MDB_PAGE_NOTFOUND)
    /// A page has the wrong type: the database is corrupted (`MDB_CORRUPTED`).
    public static let corrupted = LMDBError(rawValue: MDB_CORRUPTED)
    /// The environment had a fatal error and must be closed (`MDB_PANIC`).
    public static let panic = LMDBError(rawValue: MDB_PANIC)
    /// The environment was written by an incompatible LMDB version (`MDB_VERSION_MISMATCH`).
    public static let versionMismatch = LMDBError(rawValue: MDB_VERSION_MISMATCH)
    /// The file is not an LMDB data file (`MDB_INVALID`).
    public static let invalid = LMDBError(rawValue: MDB_INVALID)
    /// The memory map is full (`MDB_MAP_FULL`); `LMDBEnvironment.write` grows the map and retries first.
    public static let mapFull = LMDBError(rawValue: MDB_MAP_FULL)
    /// The environment's `maxDatabases` was reached (`MDB_DBS_FULL`).
    public static let databasesFull = LMDBError(rawValue: MDB_DBS_FULL)
    /// The environment's `maxReaders` was reached (`MDB_READERS_FULL`).
    public static let readersFull = LMDBError(rawValue: MDB_READERS_FULL)
    /// Too many thread-local storage keys are in use (`MDB_TLS_FULL`).
    public static let tlsFull = LMDBError(rawValue: MDB_TLS_FULL)
    /// The transaction has too many dirty pages (`MDB_TXN_FULL`).
    public static let transactionFull = LMDBError(rawValue: MDB_TXN_FULL)
    /// The cursor stack is too deep (`MDB_CURSOR_FULL`).
    public static let cursorFull = LMDBError(rawValue: MDB_CURSOR_FULL)
    /// A page has no more space (`MDB_PAGE_FULL`).
    public static let pageFull = LMDBError(rawValue: MDB_PAGE_FULL)
    /// Another process grew the map beyond this environment's size (`MDB_MAP_RESIZED`).
    public static let mapResized = LMDBError(rawValue: MDB_MAP_RESIZED)
    /// The operation is incompatible with the database's flags (`MDB_INCOMPATIBLE`).
    public static let incompatible = LMDBError(rawValue: MDB_INCOMPATIBLE)
    /// A reader lock slot is invalid (`MDB_BAD_RSLOT`).
    public static let badReaderSlot = LMDBError(rawValue: MDB_BAD_RSLOT)
    /// The transaction must abort, has a child, or is invalid (`MDB_BAD_TXN`).
    public static let badTransaction = LMDBError(rawValue: MDB_BAD_TXN)
    /// A key or value has an unsupported size, for example an empty key (`MDB_BAD_VALSIZE`).
    public static let badValueSize = LMDBError(rawValue: MDB_BAD_VALSIZE)
    /// The database handle changed unexpectedly (`MDB_BAD_DBI`).
    public static let badDatabase = LMDBError(rawValue: MDB_BAD_DBI)
    /// Permission denied (`EACCES`), for example a write inside a read-only transaction.
    public static let permissionDenied = LMDBError(rawValue: 13)
    /// An invalid argument (`EINVAL`).
    public static let invalidArgument = LMDBError(rawValue: 22)
    /// The environment was closed before or while the operation ran (wrapper code).
    public static let environmentClosed = LMDBError(rawValue: -40_001)
    /// `write` was called from inside another write transaction of the same environment (wrapper code).
    public static let nestedWriteTransaction = LMDBError(rawValue: -40_002)
    /// The transaction was used after it ended, or from outside its closure (wrapper code).
    public static let transactionEnded = LMDBError(rawValue: -40_003)

    /// The message: LMDB's `mdb_strerror` text, or the wrapper's own text.
    public var description: String {
        switch self {
        case .environmentClosed: return "LMDB: the environment is closed"
        case .nestedWriteTransaction: return "LMDB: a write transaction was started inside another one"
        case .transactionEnded: return "LMDB: the transaction has already ended"
        default:
            guard let text = mdb_strerror(rawValue) else { return "LMDB error \(rawValue)" }
            return "LMDB error \(rawValue): " + String(cString: text)
        }
    }

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
    if code != 0 { throw LMDBError(rawValue: code) }
}
