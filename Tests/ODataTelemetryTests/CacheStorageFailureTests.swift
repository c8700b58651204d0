import Foundation
import HTTPTypes
import Logging
import ODataCore
import Testing
@testable import TechnicalCache

/// A cache whose writes really fail: its LMDB map is fixed at 256 KiB (`mapSizeLimit`, which never grows), so a
/// 1 MiB answer cannot be stored (`MDB_MAP_FULL`). The read still gets the server's answer; the failures are
/// counted in `CacheStatistics`, reported to the listener, and logged once per kind without the URL.
@Suite struct CacheStorageFailureTests {
    /// Answers every request with 200 and a 1 MiB body; counts the requests.
    struct BigAnswers: HTTPTransport {
        let sent = LockedValue(0)
        func send(_ request: TransportRequest) async throws -> TransportResponse {
            sent.withLock { $0 += 1 }
            return TransportResponse(status: 200, headerFields: [.contentType: "application/json", .eTag: "W/\"1\""],
                                     body: Data(repeating: 0x7B, count: 1 << 20),
                                     metrics: TransferMetrics(headerBytes: 0, bodyBytes: 1 << 20, totalTime: .zero, connectionReused: true,
                                                              newConnections: 0, httpVersion: .http1_1))
        }
    }

    /// Records the storage failures a caching transport reports.
    final class Failures: CacheEventListener {
        let heard = LockedValue<[CacheStorageOperation]>([])
        func cacheStorageFailed(url: String, operation: CacheStorageOperation, error: CacheError) {
            heard.withLock { $0.append(operation) }
        }
    }

    @Test func aCacheThatCannotWriteCountsAndLogsTheFailuresAndTheReadStillSucceeds() async throws {
        let folder = try TemporaryFolder()
        let lines = LockedValue<[String]>([])
        var configuration = CacheConfiguration(sizeLimit: 8 << 20, keyDerivation: .pbkdf2(rounds: 1_000),
                                               durability: .periodic(interval: .seconds(3600)), memoryBudget: 0)
        configuration.logger = Logger(label: "cache-test") { _ in CapturingLogHandler(lines: lines) }
        configuration.mapSizeLimit = 256 << 10
        let cache = try ResponseCache(directory: folder.path + "/cache", configuration: configuration)
        try cache.open(encryption: .key("passphrase"))
        defer { cache.close() }
        let upstream = BigAnswers()
        let listener = Failures()
        let transport = CachingTransport(cache: cache, upstream: upstream, listener: listener)
        let url = "https://example.com/svc/Products?sap-client=100&token=s3cr3t"

        for _ in 0..<2 {
            let reply = try await transport.send(TransportRequest(url: url))
            #expect(reply.status == 200 && reply.body.count == 1 << 20, "the server's answer, whatever the cache did")
            // The entry goes to the cache's writer after the answer; until its write fails a lookup would answer it.
            await cache.flushPendingWrites()
        }
        #expect(upstream.sent.withLock { $0 } == 2, "nothing was cached, so both reads went to the server")
        let statistics = cache.statistics
        #expect(statistics.writes == 0 && statistics.entryCount == 0)
        #expect(statistics.storageFailures == 2)
        #expect(statistics.storageFailuresByOperation == [.write: 2])
        #expect(listener.heard.withLock { $0 } == [.write, .write])

        let logged = lines.withLock { $0 }
        let warnings = logged.filter { $0.hasPrefix("warning") }
        #expect(warnings.count == 1, "logged once per kind: \(logged)")
        #expect(warnings.first?.contains("operation=write") == true && warnings.first?.contains("CacheError.storage") == true)
        #expect(!logged.contains { $0.contains("example.com") || $0.contains("s3cr3t") || $0.contains("passphrase") })
    }
}
