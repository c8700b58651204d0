internal import CSQLCipher

/// An error of SQLCipher: SQLite's result code and the message SQLite gave, or one of the checks this
/// module adds (``notSQLCipher``, ``badKey``, ``closed``).
///
/// Match a kind with its static member, as with an enum case; a primary code matches all its extended codes:
/// ```swift
/// do { try connection.execute("…") }
/// catch SQLCipherError.constraint { … }   // also SQLITE_CONSTRAINT_PRIMARYKEY, …
/// ```
/// `error == .busy` compares the exact code; ``resultCode`` keeps SQLite's code as data. The message never holds
/// the key: statements that carry it are reported without their text.
public struct SQLCipherError: Error, Hashable, Sendable, CustomStringConvertible {
    /// SQLite's result code (primary or extended, an `SQLITE_*` value), or a negative value for this module's
    /// own checks. Errors are equal when their codes are.
    public let resultCode: Int32
    /// What went wrong: SQLite's message (`sqlite3_errmsg`) or this module's, with the step it happened in.
    public let message: String

    /// An error from SQLite's result code.
    /// - Parameters:
    ///   - resultCode: An `SQLITE_*` result code, or this module's negative code.
    ///   - message: What went wrong.
    init(resultCode: Int32, _ message: String) {
        self.resultCode = resultCode
        self.message = message
    }

    /// Creates an error of the same kind (result code) as `kind`.
    /// - Parameters:
    ///   - kind: The kind, one of the static members (`.busy`).
    ///   - message: What went wrong.
    public init(_ kind: SQLCipherError, _ message: String) {
        self.init(resultCode: kind.resultCode, message)
    }

    /// The primary result code (the low 8 bits of an extended code), for example `SQLITE_CONSTRAINT` for
    /// `SQLITE_CONSTRAINT_PRIMARYKEY`.
    public var primaryResultCode: Int32 { resultCode < 0 ? resultCode : resultCode & 0xFF }

    /// A generic error. The corresponding C constant is `SQLITE_ERROR`.
    public static let error = SQLCipherError(resultCode: SQLITE_ERROR, "SQL error")
    /// The database file is locked by another connection. The corresponding C constant is `SQLITE_BUSY`.
    public static let busy = SQLCipherError(resultCode: SQLITE_BUSY, "database is locked")
    /// The file is not writable. The corresponding C constant is `SQLITE_READONLY`.
    public static let readOnly = SQLCipherError(resultCode: SQLITE_READONLY, "attempt to write a readonly database")
    /// An I/O error. The corresponding C constant is `SQLITE_IOERR`.
    public static let ioError = SQLCipherError(resultCode: SQLITE_IOERR, "disk I/O error")
    /// The database image is malformed. The corresponding C constant is `SQLITE_CORRUPT`.
    public static let corrupt = SQLCipherError(resultCode: SQLITE_CORRUPT, "database disk image is malformed")
    /// The disk is full. The corresponding C constant is `SQLITE_FULL`.
    public static let full = SQLCipherError(resultCode: SQLITE_FULL, "database or disk is full")
    /// The file cannot be opened. The corresponding C constant is `SQLITE_CANTOPEN`.
    public static let cannotOpen = SQLCipherError(resultCode: SQLITE_CANTOPEN, "unable to open database file")
    /// A constraint was violated. The corresponding C constant is `SQLITE_CONSTRAINT`.
    public static let constraint = SQLCipherError(resultCode: SQLITE_CONSTRAINT, "constraint failed")
    /// A library routine was called out of order. The corresponding C constant is `SQLITE_MISUSE`.
    public static let misuse = SQLCipherError(resultCode: SQLITE_MISUSE, "bad parameter or other API misuse")
    /// Out of memory. The corresponding C constant is `SQLITE_NOMEM`.
    public static let noMemory = SQLCipherError(resultCode: SQLITE_NOMEM, "out of memory")
    /// The file is not a database, or not one this key opens: SQLCipher's answer to a wrong key and to a
    /// first page that fails its HMAC. The corresponding C constant is `SQLITE_NOTADB`.
    public static let notADatabase = SQLCipherError(resultCode: SQLITE_NOTADB, "file is not a database")
    /// The SQLite answering in this process is not SQLCipher (`PRAGMA cipher_version` gave nothing): the key
    /// would be ignored and the data written in plaintext, so the connection is refused.
    public static let notSQLCipher = SQLCipherError(resultCode: -1, "the SQLite in this process is not SQLCipher")
    /// The key given to a connection is not 32 bytes.
    public static let badKey = SQLCipherError(resultCode: -2, "the key is not 32 bytes")
    /// A connection used after ``SQLCipherConnection/close()``.
    public static let closed = SQLCipherError(resultCode: -3, "the connection is closed")

    /// The kind, such as `SQLCipherError.notADatabase (code 26)`, with SQLite's result code: an extended code is
    /// named by its primary kind, a code without a static member by SQLite's `sqlite3_errstr` text. Safe for logs.
    public var shortDescription: String {
        if let name = Self.names[resultCode] ?? Self.names[primaryResultCode] {
            return "SQLCipherError.\(name) (code \(resultCode))"
        }
        return "SQLCipherError (code \(resultCode): \(String(cString: sqlite3_errstr(resultCode))))"
    }

    /// The kind, the result code and the message.
    public var description: String { "\(shortDescription): \(message)" }

    /// The names of the static members, by result code.
    private static let names: [Int32: String] = [
        SQLITE_ERROR: "error", SQLITE_BUSY: "busy", SQLITE_READONLY: "readOnly", SQLITE_IOERR: "ioError",
        SQLITE_CORRUPT: "corrupt", SQLITE_FULL: "full", SQLITE_CANTOPEN: "cannotOpen", SQLITE_CONSTRAINT: "constraint",
        SQLITE_MISUSE: "misuse", SQLITE_NOMEM: "noMemory", SQLITE_NOTADB: "notADatabase", -1: "notSQLCipher",
        -2: "badKey", -3: "closed",
    ]

    /// Errors are equal when their result codes are.
    ///
    /// - Parameters:
    ///   - lhs: An error.
    ///   - rhs: Another error.
    /// - Returns: `true` when both have the same result code, whatever their message.
    public static func == (lhs: SQLCipherError, rhs: SQLCipherError) -> Bool { lhs.resultCode == rhs.resultCode }

    /// Hashes the result code.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) { hasher.combine(resultCode) }

    /// Whether `error` is of `pattern`'s kind: the same result code or, when `pattern` is a primary code, one of
    /// its extended codes.
    ///
    /// - Parameters:
    ///   - pattern: The kind to match.
    ///   - error: The error found.
    /// - Returns: Whether they match.
    public static func ~= (pattern: SQLCipherError, error: SQLCipherError) -> Bool {
        pattern.resultCode == error.resultCode
            || (pattern.resultCode >= 0 && pattern.resultCode <= 0xFF && error.primaryResultCode == pattern.resultCode)
    }

    /// Matches an arbitrary error against this kind, so `catch SQLCipherError.constraint` works.
    ///
    /// - Parameters:
    ///   - pattern: The kind to match.
    ///   - error: The error that was thrown.
    /// - Returns: `true` when `error` is an `SQLCipherError` of that kind (see the other `~=`).
    public static func ~= (pattern: SQLCipherError, error: any Error) -> Bool {
        guard let error = error as? SQLCipherError else { return false }
        return pattern ~= error
    }
}
