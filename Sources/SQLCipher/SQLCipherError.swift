internal import CSQLCipher

/// An error of SQLCipher: SQLite's result code and the message SQLite gave, or one of the checks this
/// module adds (``Code/notSQLCipher``, ``Code/badKey``).
///
/// Compare ``code`` with the static members, or match with `~=`, which matches a primary code against
/// all its extended codes:
/// ```swift
/// do { try connection.execute("…") } catch let error as SQLCipherError where error.code ~= .notADatabase { … }
/// ```
/// The message never holds the key: statements that carry it are reported without their text.
public struct SQLCipherError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A result code: SQLite's (primary or extended), or a negative code of this module.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code: SQLite's `SQLITE_*` value, or a negative value for this module's own checks.
        public let rawValue: Int32

        /// Creates a code from SQLite's value.
        /// - Parameter rawValue: An `SQLITE_*` result code.
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// The primary code (the low 8 bits of an extended code).
        public var primary: Code { rawValue < 0 ? self : Code(rawValue: rawValue & 0xFF) }

        /// A generic error. The corresponding C constant is `SQLITE_ERROR`.
        public static let error = Code(rawValue: SQLITE_ERROR)
        /// The database file is locked by another connection. The corresponding C constant is `SQLITE_BUSY`.
        public static let busy = Code(rawValue: SQLITE_BUSY)
        /// The file is not writable. The corresponding C constant is `SQLITE_READONLY`.
        public static let readOnly = Code(rawValue: SQLITE_READONLY)
        /// An I/O error. The corresponding C constant is `SQLITE_IOERR`.
        public static let ioError = Code(rawValue: SQLITE_IOERR)
        /// The database image is malformed. The corresponding C constant is `SQLITE_CORRUPT`.
        public static let corrupt = Code(rawValue: SQLITE_CORRUPT)
        /// The disk is full. The corresponding C constant is `SQLITE_FULL`.
        public static let full = Code(rawValue: SQLITE_FULL)
        /// The file cannot be opened. The corresponding C constant is `SQLITE_CANTOPEN`.
        public static let cannotOpen = Code(rawValue: SQLITE_CANTOPEN)
        /// A constraint was violated. The corresponding C constant is `SQLITE_CONSTRAINT`.
        public static let constraint = Code(rawValue: SQLITE_CONSTRAINT)
        /// A library routine was called out of order. The corresponding C constant is `SQLITE_MISUSE`.
        public static let misuse = Code(rawValue: SQLITE_MISUSE)
        /// Out of memory. The corresponding C constant is `SQLITE_NOMEM`.
        public static let noMemory = Code(rawValue: SQLITE_NOMEM)
        /// The file is not a database, or not one this key opens: SQLCipher's answer to a wrong key and to a
        /// first page that fails its HMAC. The corresponding C constant is `SQLITE_NOTADB`.
        public static let notADatabase = Code(rawValue: SQLITE_NOTADB)
        /// The SQLite answering in this process is not SQLCipher (`PRAGMA cipher_version` gave nothing): the key
        /// would be ignored and the data written in plaintext, so the connection is refused.
        public static let notSQLCipher = Code(rawValue: -1)
        /// The key given to a connection is not 32 bytes.
        public static let badKey = Code(rawValue: -2)
        /// A connection used after ``SQLCipherConnection/close()``.
        public static let closed = Code(rawValue: -3)

        /// A name for logs: SQLite's `sqlite3_errstr` text, or this module's name for its own checks.
        public var description: String {
            switch self {
            case .notSQLCipher: return "not SQLCipher"
            case .badKey: return "bad key"
            case .closed: return "connection closed"
            default: return String(cString: sqlite3_errstr(rawValue))
            }
        }

        /// Whether `code` is `pattern` or, when `pattern` is a primary code, one of its extended codes.
        /// - Parameters:
        ///   - pattern: The code to match.
        ///   - code: The code found.
        /// - Returns: Whether they match.
        public static func ~= (pattern: Code, code: Code) -> Bool {
            pattern == code || (pattern.rawValue >= 0 && pattern.rawValue <= 0xFF && code.primary == pattern)
        }
    }

    /// The result code.
    public let code: Code
    /// What went wrong: SQLite's message (`sqlite3_errmsg`) or this module's, with the step it happened in.
    public let message: String

    /// Creates an error.
    /// - Parameters:
    ///   - code: The result code.
    ///   - message: What went wrong.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `SQLCipher: message (code)`.
    public var description: String { "SQLCipher: \(message) (\(code))" }
}
