import CurlHTTP
import Foundation
import ODataCore
import ODataFixtures
import Testing

@testable import OfflineStore

/// A media transfer's bytes between the network and the encrypted database: sealed in a spool whose key is in memory
/// only, so no readable media byte reaches the store's directory, during a download, during an upload, or after a
/// crash in the middle of either.
@Suite struct MediaSpoolTests {
    /// Bytes that appear nowhere else (xorshift).
    static func pattern(_ count: Int, seed: UInt32) -> [UInt8] {
        var x = seed
        return (0..<count).map { _ in
            x ^= x << 13
            x ^= x >> 17
            x ^= x << 5
            return UInt8(truncatingIfNeeded: x)
        }
    }

    /// The files under `path` that hold any of `windows` as they are.
    static func filesHolding(_ windows: [Data], under path: String) throws -> [String] {
        let files = FileManager.default.enumerator(atPath: path)?.compactMap { $0 as? String } ?? []
        return try files.filter { name in
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path + "/" + name, isDirectory: &isDirectory), !isDirectory.boolValue else { return false }
            let contents = try Data(contentsOf: URL(fileURLWithPath: path + "/" + name))
            return windows.contains { contents.range(of: $0) != nil }
        }
    }

    /// Three 48-byte pieces of `bytes` (its start, middle and end) to look for.
    static func windows(of bytes: [UInt8]) -> [Data] {
        [0, bytes.count / 2, bytes.count - 48].map { Data(bytes[$0..<($0 + 48)]) }
    }

    @Test func aSpoolGivesBackWhatWasWrittenChunkByChunkAndHoldsNothingReadable() throws {
        let directory = try TemporaryDirectory()
        let spool = try SealedSpool(path: directory.path + "/spool", chunkSize: 1000)
        let bytes = Self.pattern(4321, seed: 7)
        var start = 0
        for size in [1, 999, 1500, 37, 1784] {
            try spool.append(Array(bytes[start..<(start + size)]))
            start += size
        }
        try spool.finish()
        #expect(spool.count == 4321)
        #expect(try Self.filesHolding(Self.windows(of: bytes), under: directory.path).isEmpty)

        var chunks: [[UInt8]] = []
        try spool.forEachChunk { chunks.append($0) }
        #expect(chunks.map(\.count) == [1000, 1000, 1000, 1000, 321])
        #expect(chunks.flatMap { $0 } == bytes)

        // As a request body, read twice (a session sends a request again after a 401).
        for _ in 0..<2 {
            try spool.rewind()
            var read: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 333)
            while true {
                let count = try buffer.withUnsafeMutableBytes { try spool.read(into: $0) }
                if count == 0 { break }
                read += buffer[..<count]
            }
            #expect(read == bytes)
        }
    }

    @Test func aChangedOrShortenedSpoolIsRefusedWithATypedErrorNotRead() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/spool"
        let bytes = Self.pattern(3000, seed: 11)
        let spool = try SealedSpool(path: path, chunkSize: 1000)
        try spool.append(bytes)
        try spool.finish()
        let sealed = try Data(contentsOf: URL(fileURLWithPath: path))

        var flipped = sealed
        flipped[sealed.count / 2] ^= 0x01
        try flipped.write(to: URL(fileURLWithPath: path))
        #expect(throws: OfflineODataError.storage) { try spool.forEachChunk { _ in } }

        try sealed.prefix(sealed.count - 10).write(to: URL(fileURLWithPath: path))
        var delivered = 0
        let error = try #require(throws: OfflineODataError.self) { try spool.forEachChunk { delivered += $0.count } }
        #expect(error == .storage)
        #expect(error.message.contains("chunk 2"))
        #expect(delivered == 2000)  // the whole chunks before the damage, never a piece of a damaged one

        // Another spool's key does not open these chunks.
        try sealed.write(to: URL(fileURLWithPath: path))
        let other = try SealedSpool(path: directory.path + "/other", chunkSize: 1000)
        try other.append(bytes)
        try other.finish()
        try sealed.write(to: URL(fileURLWithPath: directory.path + "/other"))
        #expect(throws: OfflineODataError.storage) { try other.forEachChunk { _ in } }
    }

    @Test func beginningAgainDropsWhatAnEarlierAttemptWrote() throws {
        let directory = try TemporaryDirectory()
        let spool = try SealedSpool(path: directory.path + "/spool", chunkSize: 100)
        try spool.append(Self.pattern(250, seed: 3))
        try spool.begin()
        let second = Self.pattern(120, seed: 5)
        try spool.append(second)
        try spool.finish()
        var read: [UInt8] = []
        try spool.forEachChunk { read += $0 }
        #expect(read == second)
        #expect(throws: OfflineODataError.storage) { try spool.append([1]) }  // complete until it begins again
    }

    /// A transport that forwards to libcurl and, at every piece of a streamed body on its way, looks for the media's
    /// bytes in every file of the store's directory.
    final class Inspecting: HTTPTransport, @unchecked Sendable {
        let upstream: CurlTransport
        let directory: String
        let windows: LockedValue<[Data]> = LockedValue([])
        let looks = LockedValue(0)
        let found = LockedValue<[String]>([])

        init(directory: String) throws {
            upstream = try CurlTransport()
            self.directory = directory
        }

        func look() {
            let windows = windows.withLock { $0 }
            guard !windows.isEmpty else { return }
            looks.withLock { $0 += 1 }
            do {
                let holding = try MediaSpoolTests.filesHolding(windows, under: directory)
                found.withLock { $0 += holding }
            } catch {
                found.withLock { $0.append("unreadable: \(error)") }
            }
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            var request = request
            if let sink = request.responseBodySink { request.responseBodySink = Sink(inner: sink, inspecting: self) }
            if let source = request.bodySource { request.bodySource = Source(inner: source, inspecting: self) }
            return try await upstream.send(request)
        }

        final class Sink: ResponseBodySink {
            let inner: any ResponseBodySink
            let inspecting: Inspecting
            init(inner: any ResponseBodySink, inspecting: Inspecting) { (self.inner, self.inspecting) = (inner, inspecting) }
            func begin() throws { try inner.begin() }
            func write(_ bytes: UnsafeRawBufferPointer) throws {
                try inner.write(bytes)
                inspecting.look()
            }
            func finish() throws {
                try inner.finish()
                inspecting.look()
            }
        }

        final class Source: RequestBodySource {
            let inner: any RequestBodySource
            let inspecting: Inspecting
            init(inner: any RequestBodySource, inspecting: Inspecting) { (self.inner, self.inspecting) = (inner, inspecting) }
            var count: Int { inner.count }
            func rewind() throws {
                try inner.rewind()
                inspecting.look()
            }
            func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
                inspecting.look()
                return try inner.read(into: buffer)
            }
        }
    }

    @Test func noReadableMediaByteIsInTheStoresDirectoryWhileADownloadOrAnUploadRuns() async throws {
        let server = try await FixtureServer.start()
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let elsewhere = try TemporaryDirectory()
        let downloaded = Self.pattern(600_000, seed: 17)
        let media = try server.mutate { data in
            try data.replaceMedia(in: "Photos", key: ["PhotoID": 1], bytes: downloaded, contentType: "image/png")
        }
        let inspecting = try Inspecting(directory: directory.path + "/northwind")
        inspecting.windows.withLock { $0 = Self.windows(of: downloaded) }
        var parameters = Northwind.parameters(directory)
        parameters.transport = inspecting
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: MediaDownloadTests.queries[0])
        try await provider.open()
        #expect(try await provider.readMedia(of: "Photos(1)") == Data(media.bytes))
        #expect(inspecting.looks.withLock { $0 } >= 2)
        #expect(inspecting.found.withLock { $0 } == [])

        // The upload: the application's file (elsewhere) holds the bytes, the store's directory never does.
        let uploaded = Self.pattern(700_000, seed: 23)
        let file = URL(fileURLWithPath: elsewhere.path + "/new.png")
        try Data(uploaded).write(to: file)
        inspecting.windows.withLock { $0 = Self.windows(of: uploaded) }
        #expect(try Self.filesHolding(Self.windows(of: uploaded), under: elsewhere.path) == ["new.png"])  // the look finds them where they are
        let looksBefore = inspecting.looks.withLock { $0 }
        try await provider.replaceMedia(of: "Photos(1)", from: file, contentType: "image/png")
        let result = try await provider.upload()
        #expect(result.succeeded == 1)
        #expect(try server.read { try $0.media(in: "Photos", key: ["PhotoID": 1]) }?.bytes == uploaded)
        #expect(inspecting.looks.withLock { $0 } > looksBefore + 2)
        #expect(inspecting.found.withLock { $0 } == [])
        await provider.close()
    }
}
