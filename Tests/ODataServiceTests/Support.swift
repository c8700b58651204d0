import Foundation
import Logging
import ODataCore
import ODataFixtures
import ServiceLifecycle
import Testing

/// A logger that prints nothing (the group and the services log at info).
let quietLogger = Logger(label: "ODataServiceTests", factory: { _ in SwiftLogNoOpLogHandler() })

/// A temporary directory removed at the end of a test (copied from OfflineStoreTests' support).
final class TemporaryDirectory: Sendable {
    let path: String
    var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("service-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs a fixture producer around `body` and stops it afterwards, whatever happens.
func withFixtureServer<T: Sendable>(_ body: (FixtureServer) async throws -> T) async throws -> T {
    let server = try await FixtureServer.start()
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// Runs `group` in a child task while `body` runs; returns when the group ended (after `body`, which
/// is expected to shut it down) with how long the group ran after `body` returned.
func withServiceGroup(_ group: ServiceGroup, _ body: () async throws -> Void) async throws -> Duration {
    try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        do {
            try await body()
        } catch {
            await group.triggerGracefulShutdown()
            tasks.cancelAll()
            throw error
        }
        let clock = ContinuousClock()
        let start = clock.now
        try await tasks.next()
        return clock.now - start
    }
}

/// Polls `condition` every 5 ms for at most `limit`; records an issue when it never holds.
func waitUntil(_ what: Comment, limit: Duration = .seconds(30), _ condition: () async throws -> Bool) async throws {
    let clock = ContinuousClock()
    let end = clock.now.advanced(by: limit)
    while try await !condition() {
        guard clock.now < end else {
            Issue.record("timed out waiting: \(what)")
            return
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}
