/// A server reply (RESP2), binary safe.
public enum RedisReply: Sendable, Hashable {
    /// A bulk string: any bytes (`GET`'s value, `DUMP`'s payload).
    case bulkString([UInt8])
    /// A status reply such as `OK` or `PONG`.
    case status(String)
    /// An integer reply (`DEL`'s count, `EXPIRE`'s 0 or 1).
    case integer(Int64)
    /// The null reply (`GET` of a missing key).
    case null
    /// An array of replies (`SCAN`'s cursor and keys).
    case array([RedisReply])
    /// An error reply (`-ERR …`); ``RedisClient/command(_:)`` throws it as ``RedisError/serverError``.
    case error(String)

    /// The bytes of a bulk string or the text of a status, else `nil`.
    public var bytes: [UInt8]? {
        switch self {
        case .bulkString(let bytes): return bytes
        case .status(let text): return Array(text.utf8)
        default: return nil
        }
    }
}
