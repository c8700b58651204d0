import Crypto
import Foundation
import ODataCore

/// A media resource's bytes on their way between the network and the encrypted database, in a file of the store's
/// directory that nobody can read: each chunk is sealed (AES-256-GCM, its position authenticated with it) with a key
/// made for this spool and held only in memory. A process killed during a transfer leaves ciphertext whose key is
/// gone; a store with encryption holds no readable media byte on disk at any time.
///
/// A download's answer is written into it as its ``ResponseBodySink``, then read back a chunk at a time into the
/// database (``forEachChunk(_:)``); an upload's media is copied into it from the database and sent from it as the
/// request's ``RequestBodySource``. Memory holds one chunk at a time whatever the stream's size. Used by one transfer
/// at a time; its state is behind a lock because the transport calls it on a thread of its own.
final class SealedSpool: ResponseBodySink, RequestBodySource {
    /// The spool file's path.
    let path: String
    private let chunkSize: Int
    private let state = LockedValue(State())

    private struct State {
        /// This spool's key: in memory only, new for every body.
        var key = SymmetricKey(size: .bits256)
        var writer: FileHandle?
        /// Bytes written but not sealed yet (less than a chunk).
        var pending: [UInt8] = []
        /// Chunks sealed, bytes written, and whether the body is complete.
        var chunks = 0
        var count = 0
        var isFinished = false
        /// Reading back: the file, the chunk opened last, how much of it was handed out, and its position.
        var reader: FileHandle?
        var current: [UInt8] = []
        var offset = 0
        var next = 0
    }

    /// Makes an empty spool at `path` (created or emptied, mode 0600).
    ///
    /// - Parameters:
    ///   - path: The spool file.
    ///   - chunkSize: The plaintext bytes sealed together.
    /// - Throws: `OfflineODataError.storage` when the file cannot be made.
    init(path: String, chunkSize: Int = EntityStore.mediaChunkSize) throws {
        self.path = path
        self.chunkSize = chunkSize
        try begin()
    }

    deinit {
        state.withLock { state in
            try? state.writer?.close()  // the spool's bytes are useless without its key, which goes with it
            try? state.reader?.close()
        }
    }

    /// The plaintext bytes written so far.
    var count: Int { state.withLock { $0.count } }

    /// Whether the body was completed by ``finish()`` since the last ``begin()``.
    var isFinished: Bool { state.withLock { $0.isFinished } }

    /// Empties the spool for a new body.
    func begin() throws {
        try state.withLock { state in
            try? state.writer?.close()  // emptied below
            try? state.reader?.close()
            state = State()
            guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw OfflineODataError(.storage, "cannot create the media spool \(path)")
            }
            state.writer = try Self.attempt("write", path) { try FileHandle(forWritingTo: URL(fileURLWithPath: path)) }
        }
    }

    /// Adds body bytes, sealing each full chunk.
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        try state.withLock { state in
            guard !state.isFinished else { throw OfflineODataError(.storage, "the media spool \(path) is complete") }
            state.pending.append(contentsOf: bytes)
            state.count += bytes.count
            while state.pending.count >= chunkSize {
                try seal(Array(state.pending[..<chunkSize]), &state)
                state.pending.removeFirst(chunkSize)
            }
        }
    }

    /// Adds a chunk of bytes (``write(_:)`` for an array).
    func append(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    /// Seals what is left and closes the file for writing.
    func finish() throws {
        try state.withLock { state in
            guard !state.isFinished else { return }
            if !state.pending.isEmpty { try seal(state.pending, &state) }
            state.pending = []
            try? state.writer?.close()  // every byte went out through `write(contentsOf:)`; a spool need not reach the disk
            state.writer = nil
            state.isFinished = true
        }
    }

    /// Goes back to the first byte of a finished spool.
    func rewind() throws {
        try state.withLock { state in
            guard state.isFinished else { throw OfflineODataError(.storage, "the media spool \(path) is not complete") }
            try? state.reader?.close()  // read-only
            state.reader = try Self.attempt("read", path) { try FileHandle(forReadingFrom: URL(fileURLWithPath: path)) }
            state.current = []
            state.offset = 0
            state.next = 0
        }
    }

    /// Copies the next bytes of a finished spool into `buffer`, opening its chunks one by one.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try state.withLock { state in
            if state.offset == state.current.count {
                guard let chunk = try open(&state) else { return 0 }
                state.current = chunk
                state.offset = 0
            }
            let count = min(buffer.count, state.current.count - state.offset)
            state.current.withUnsafeBytes { bytes in
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[state.offset..<(state.offset + count)]))
            }
            state.offset += count
            return count
        }
    }

    /// Hands a finished spool's bytes to `body` chunk by chunk, in order.
    ///
    /// - Throws: `OfflineODataError.storage` when the spool cannot be read or a chunk does not open (the file was
    ///   changed); what `body` throws.
    func forEachChunk(_ body: ([UInt8]) throws -> Void) throws {
        try rewind()
        while let chunk = try state.withLock({ state in try open(&state) }) { try body(chunk) }
    }

    // MARK: The file's records: a 4-byte big-endian length, then nonce ‖ ciphertext ‖ tag.

    private func seal(_ plaintext: [UInt8], _ state: inout State) throws {
        let box = try Self.attempt("seal", path) {
            try AES.GCM.seal(plaintext, using: state.key, authenticating: Self.position(state.chunks))
        }
        guard let sealed = box.combined else { throw OfflineODataError(.storage, "cannot seal the media spool \(path)") }
        let length = UInt32(sealed.count)
        var record = [UInt8((length >> 24) & 0xFF), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)]
        record.append(contentsOf: sealed)
        let writer = state.writer
        try Self.attempt("write", path) { try writer?.write(contentsOf: record) }
        state.chunks += 1
    }

    /// The next chunk of the spool, opened; `nil` after the last.
    private func open(_ state: inout State) throws -> [UInt8]? {
        guard state.next < state.chunks else { return nil }
        guard let reader = state.reader else { throw OfflineODataError(.storage, "the media spool \(path) is not open for reading") }
        let head = try Self.attempt("read", path) { try reader.read(upToCount: 4) } ?? Data()
        guard head.count == 4 else { throw damaged(state.next) }
        let length = head.reduce(0) { $0 << 8 | Int($1) }
        let sealed = try Self.attempt("read", path) { try reader.read(upToCount: length) } ?? Data()
        guard sealed.count == length, let box = try? AES.GCM.SealedBox(combined: sealed),
              let plaintext = try? AES.GCM.open(box, using: state.key, authenticating: Self.position(state.next)) else {
            throw damaged(state.next)  // a short file, a record that is not one, or bytes that do not authenticate
        }
        state.next += 1
        return [UInt8](plaintext)
    }

    private func damaged(_ chunk: Int) -> OfflineODataError {
        OfflineODataError(.storage, "the media spool \(path) was changed on disk (chunk \(chunk) does not open)")
    }

    /// A chunk's position, authenticated with it so chunks cannot be reordered.
    private static func position(_ chunk: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt64(chunk).bigEndian) { [UInt8]($0) }
    }

    /// Runs a file or crypto operation, its failure as `OfflineODataError.storage` naming the spool.
    private static func attempt<T>(_ what: String, _ path: String, _ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as OfflineODataError {
            throw error
        } catch {
            throw OfflineODataError(.storage, "cannot \(what) the media spool \(path): \(error.localizedDescription)", underlying: error)
        }
    }
}
