import Foundation

/// Receives a successful (2xx) answer's body piece by piece as it arrives (``TransportRequest/responseBodySink``),
/// instead of the body being collected in ``TransportResponse/body``: a body of any size never has to be held whole in
/// memory, and what becomes of its bytes — a file (``FileBodySink``), a file sealed with a key (the offline store's
/// media), a database — is the sink's business.
///
/// A transport calls, on a thread of its own and never two at once: ``begin()`` before a 2xx body's first byte,
/// ``write(_:)`` for each piece in order, then ``finish()`` when the transfer succeeded (``begin()`` and ``finish()``
/// also for an empty body); nothing more when it failed, and nothing at all for an answer that is not a 2xx (its body
/// stays in the response). A request sent again (a session's retry after a `401`, a transfer that failed halfway and
/// is repeated) begins again: ``begin()`` drops what an earlier attempt wrote. An error any of them throws ends the
/// transfer with that error.
public protocol ResponseBodySink: AnyObject, Sendable {
    /// A body begins: drop anything an earlier attempt wrote.
    ///
    /// - Throws: Anything: the transfer stops and fails with it.
    func begin() throws
    /// Takes the next piece of the body.
    ///
    /// - Parameter bytes: The bytes, valid only during the call.
    /// - Throws: Anything: the transfer stops and fails with it.
    func write(_ bytes: UnsafeRawBufferPointer) throws
    /// The body is complete.
    ///
    /// - Throws: Anything: the transfer fails with it.
    func finish() throws
}

/// Supplies a request body piece by piece as the transfer goes (``TransportRequest/bodySource``), so a body of any
/// size is never held whole in memory. A transport calls ``rewind()`` before each send of the request (a session
/// sends it again after a `401` or a refused CSRF token), then reads it from the start, on a thread of its own, never
/// two calls at once. Within one transfer the body cannot be rewound: once bytes of it went out, the transport never
/// sends the request again by itself.
public protocol RequestBodySource: AnyObject, Sendable {
    /// The body's length in bytes, sent as `Content-Length`; ``read(into:)`` gives exactly this many bytes.
    var count: Int { get }
    /// Goes back to the body's first byte.
    ///
    /// - Throws: Anything: the transfer does not start and fails with it.
    func rewind() throws
    /// Copies the next bytes of the body into `buffer`.
    ///
    /// - Parameter buffer: Where the bytes go.
    /// - Returns: The number of bytes copied, at most `buffer.count`; 0 at the end of the body.
    /// - Throws: Anything: the transfer stops and fails with it.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
}

/// A ``ResponseBodySink`` that writes the body into a file: created (mode 0600) or emptied when the body begins,
/// synchronized to disk by ``finish()``. What ``TransportRequest/responseBodyFile`` uses.
public final class FileBodySink: ResponseBodySink {
    private let path: String
    private let handle = LockedValue<FileHandle?>(nil)

    /// A sink that writes into the file at `path`.
    ///
    /// - Parameter path: The file's path.
    public init(path: String) {
        self.path = path
    }

    deinit {
        try? handle.withLock { $0 }?.close()  // written and synchronized by `finish`, or the transfer failed: nothing to keep
    }

    /// Creates or empties the file (mode 0600).
    ///
    /// - Throws: ``ODataError`` `.invalidConfiguration` naming the file when it cannot be created.
    public func begin() throws {
        try handle.withLock { handle in
            try? handle?.close()  // an earlier attempt's bytes: dropped by the `createFile` below
            handle = nil
            guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw ODataError(.invalidConfiguration, "the response body file \(path) cannot be created")
            }
            do { handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path)) } catch {
                throw ODataError(.invalidConfiguration, "the response body file \(path) cannot be opened: \(error.localizedDescription)")
            }
        }
    }

    /// Writes the bytes.
    ///
    /// - Throws: ``ODataError`` `.invalidConfiguration` naming the file when it cannot be written.
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        try handle.withLock { handle in
            do { try handle?.write(contentsOf: bytes) } catch {
                throw ODataError(.invalidConfiguration, "the response body file \(path) cannot be written: \(error.localizedDescription)")
            }
        }
    }

    /// Synchronizes the file to disk.
    ///
    /// - Throws: ``ODataError`` `.invalidConfiguration` when it cannot.
    public func finish() throws {
        try handle.withLock { handle in
            do { try handle?.synchronize() } catch {
                throw ODataError(.invalidConfiguration, "the response body file \(path) cannot be written: \(error.localizedDescription)")
            }
        }
    }
}

/// A ``RequestBodySource`` that reads the body from a file, which must not change while the request runs. What
/// ``TransportRequest/bodyFile`` uses.
public final class FileBodySource: RequestBodySource {
    /// The file's size when it was opened.
    public let count: Int
    private let path: String
    private let handle: LockedValue<FileHandle>

    /// Opens the file at `path`.
    ///
    /// - Parameter path: The file's path.
    /// - Throws: ``ODataError`` `.invalidConfiguration` naming the file when it cannot be opened or has no size.
    public init(path: String) throws {
        self.path = path
        do {
            guard let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int else {
                throw ODataError(.invalidConfiguration, "the body file \(path) has no size")
            }
            count = size
            handle = LockedValue(try FileHandle(forReadingFrom: URL(fileURLWithPath: path)))
        } catch let error as ODataError {
            throw error
        } catch {
            throw ODataError(.invalidConfiguration, "the body file \(path) cannot be read: \(error.localizedDescription)")
        }
    }

    deinit {
        try? handle.withLock { $0 }.close()  // read-only: closing cannot lose anything
    }

    /// Goes back to the file's first byte.
    ///
    /// - Throws: ``ODataError`` `.invalidConfiguration` when it cannot.
    public func rewind() throws {
        try handle.withLock { handle in
            do { try handle.seek(toOffset: 0) } catch {
                throw ODataError(.invalidConfiguration, "the body file \(path) cannot be read: \(error.localizedDescription)")
            }
        }
    }

    /// Reads the next bytes of the file.
    ///
    /// - Throws: ``ODataError`` `.invalidConfiguration` when the file cannot be read.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try handle.withLock { handle in
            do {
                let chunk = try handle.read(upToCount: buffer.count) ?? Data()
                chunk.copyBytes(to: buffer)
                return chunk.count
            } catch {
                throw ODataError(.invalidConfiguration, "the body file \(path) cannot be read: \(error.localizedDescription)")
            }
        }
    }
}
