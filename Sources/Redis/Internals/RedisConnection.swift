internal import CHiredis
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One hiredis connection (`redisContext`). Not thread-safe, as hiredis contexts are not: it lives inside
/// one of ``RedisClient``'s locked slots and is used by one caller at a time.
///
/// > hiredis: "Once an error is returned the context cannot be reused and you should set up a new
/// > connection." — so any failure frees the context and the slot connects anew later.
final class RedisConnection {
    private var context: UnsafeMutablePointer<redisContext>?

    private init(context: UnsafeMutablePointer<redisContext>) {
        self.context = context
    }

    deinit {
        if let context { redisFree(context) }
    }

    /// Connects, sets the command timeout, then authenticates and selects the database when configured.
    ///
    /// The corresponding C function is `redisConnectWithTimeout`.
    static func connect(_ configuration: RedisConfiguration) throws(RedisError) -> RedisConnection {
        guard let context = redisConnectWithTimeout(configuration.host, Int32(configuration.port), timeValue(configuration.connectTimeout)) else {
            throw RedisError(.connectionFailed, "cannot allocate a connection")
        }
        if context.pointee.err != 0 {
            let message = Self.message(of: context)
            redisFree(context)
            throw RedisError(.connectionFailed, "\(configuration.host):\(configuration.port): \(message)")
        }
        let connection = RedisConnection(context: context)
        guard redisSetTimeout(context, timeValue(configuration.commandTimeout)) == REDIS_OK else {
            throw RedisError(.connectionFailed, "cannot set the command timeout")
        }
        _ = redisEnableKeepAlive(context)
        if let password = configuration.password {
            // The reply to AUTH is checked without echoing anything that could hold the password.
            let credentials = (configuration.username.map { [Array($0.utf8)] } ?? []) + [Array(password.utf8)]
            guard case .status = try connection.command([Array("AUTH".utf8)] + credentials) else {
                throw RedisError(.serverError, "AUTH was refused")
            }
        }
        if configuration.database != 0 {
            _ = try connection.command([Array("SELECT".utf8), Array(String(configuration.database).utf8)])
        }
        return connection
    }

    /// Runs one command, binary safe: each argument is sent with its length.
    ///
    /// The corresponding C function is `redisCommandArgv`.
    ///
    /// - Returns: The reply; an error reply is thrown as ``RedisError/serverError``.
    /// - Throws: ``RedisError`` `.timeout`, `.connectionLost` or `.protocolError` when the connection failed
    ///   (it is unusable afterwards: ``isBroken``).
    func command(_ arguments: [[UInt8]]) throws(RedisError) -> RedisReply {
        guard let context else { throw RedisError(.connectionLost, "the connection is closed") }
        let count = arguments.count
        var lengths = arguments.map { $0.count }
        // hiredis copies the arguments into its output buffer before the call returns.
        let reply: UnsafeMutablePointer<redisReply>? = withPointers(to: arguments) { pointers in
            lengths.withUnsafeMutableBufferPointer { lengthBuffer in
                errno = 0
                return CHiredis_commandArgv(context, Int32(count), pointers, lengthBuffer.baseAddress)
            }
        }
        let savedErrno = errno
        guard let reply else {
            throw failure(context, errno: savedErrno)
        }
        defer { freeReplyObject(reply) }
        let converted = Self.convert(reply)
        if case .error(let message) = converted {
            throw RedisError(.serverError, Self.firstWord(of: message))
        }
        return converted
    }

    /// Whether a failure made the connection unusable.
    var isBroken: Bool { context == nil }

    private func failure(_ context: UnsafeMutablePointer<redisContext>, errno code: Int32) -> RedisError {
        let kind = context.pointee.err
        let message = Self.message(of: context)
        redisFree(context)
        self.context = nil
        if kind == REDIS_ERR_IO && (code == EAGAIN || code == EWOULDBLOCK || code == ETIMEDOUT) {
            return RedisError(.timeout, message)
        }
        if kind == REDIS_ERR_PROTOCOL { return RedisError(.protocolError, message) }
        return RedisError(.connectionLost, message)
    }

    /// The argument pointers hiredis wants, valid during `body`.
    private func withPointers<R>(to arguments: [[UInt8]], _ body: (UnsafeMutablePointer<UnsafePointer<CChar>?>) -> R) -> R {
        var pointers = [UnsafePointer<CChar>?](repeating: nil, count: arguments.count)
        // An empty argument still needs a valid pointer.
        var empty: CChar = 0
        return withUnsafeMutablePointer(to: &empty) { emptyPointer in
            func bind(_ index: Int) -> R {
                if index == arguments.count {
                    return pointers.withUnsafeMutableBufferPointer { body($0.baseAddress!) }
                }
                return arguments[index].withUnsafeBufferPointer { buffer in
                    pointers[index] = buffer.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) } ?? UnsafePointer(emptyPointer)
                    return bind(index + 1)
                }
            }
            return bind(0)
        }
    }

    private static func convert(_ reply: UnsafeMutablePointer<redisReply>) -> RedisReply {
        let value = reply.pointee
        switch value.type {
        case REDIS_REPLY_STRING:
            return .bulkString(bytes(value.str, value.len))
        case REDIS_REPLY_STATUS:
            return .status(String(decoding: bytes(value.str, value.len), as: UTF8.self))
        case REDIS_REPLY_ERROR:
            return .error(String(decoding: bytes(value.str, value.len), as: UTF8.self))
        case REDIS_REPLY_INTEGER:
            return .integer(Int64(value.integer))
        case REDIS_REPLY_ARRAY:
            var elements: [RedisReply] = []
            elements.reserveCapacity(Int(value.elements))
            for index in 0..<Int(value.elements) {
                if let element = value.element[index] { elements.append(convert(element)) } else { elements.append(.null) }
            }
            return .array(elements)
        default:
            return .null
        }
    }

    private static func bytes(_ pointer: UnsafeMutablePointer<CChar>?, _ count: Int) -> [UInt8] {
        guard let pointer, count > 0 else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// The error's first word (`ERR`, `NOAUTH`, `OOM`, `WRONGTYPE`…) and the server's text, which never
    /// echoes argument values for the commands used here.
    private static func firstWord(of message: String) -> String {
        String(message.prefix(200))
    }

    private static func message(of context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { raw in
            let text = raw.prefix { $0 != 0 }
            return String(decoding: text, as: UTF8.self)
        }
    }

    private static func timeValue(_ duration: Duration) -> timeval {
        let (seconds, attoseconds) = duration.components
        var value = timeval()
        value.tv_sec = .init(seconds)
        value.tv_usec = .init(attoseconds / 1_000_000_000_000)
        return value
    }
}
