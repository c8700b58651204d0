import Foundation
import ODataFixtures
import Redis
import Synchronization
import Testing

/// The Redis client against a real redis-server on a free port of 127.0.0.1.
@Suite(.serialized)
struct RedisClientTests {
    @Test func getSetDeleteExpireAreBinarySafe() throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let redis = try RedisClient(configuration: RedisConfiguration(port: server.port))
        try redis.ping()
        // Every byte value, NUL and CR LF included, in the key and the value.
        let key: [UInt8] = [0, 13, 10, 255] + Array("key".utf8)
        let value: [UInt8] = (0...255).map { UInt8($0) } + [0, 0, 13, 10]
        #expect(try redis.get(key) == nil)
        try redis.set(key, value: value)
        #expect(try redis.get(key) == value)
        try redis.set(key, value: [])
        #expect(try redis.get(key) == [])
        #expect(try redis.expire(key, after: .seconds(100)))
        guard case .integer(let ttl) = try redis.command([Array("PTTL".utf8), key]) else { Issue.record("PTTL"); return }
        #expect(ttl > 90_000 && ttl <= 100_000)
        #expect(try redis.delete([key, Array("absent".utf8)]) == 1)
        #expect(try redis.get(key) == nil)
        #expect(try redis.expire(key, after: .seconds(1)) == false)
    }

    @Test func setWithExpiryExpires() throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let redis = try RedisClient(configuration: RedisConfiguration(port: server.port))
        try redis.set("short", value: [1, 2, 3], expiresAfter: .milliseconds(50))
        #expect(try redis.get("short") == [1, 2, 3])
        Thread.sleep(forTimeInterval: 0.2)
        #expect(try redis.get("short") == nil)
        #expect(throws: RedisError.invalidArgument) { try redis.set("bad", value: [1], expiresAfter: .zero) }
    }

    @Test func largeValuesRoundTrip() throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let redis = try RedisClient(configuration: RedisConfiguration(port: server.port))
        let value = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try redis.set("big", value: value)
        #expect(try redis.get("big") == value)
    }

    @Test func errorRepliesAreTypedAndKeepTheConnection() throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let redis = try RedisClient(configuration: RedisConfiguration(port: server.port, maximumConnections: 1))
        #expect(throws: RedisError.serverError) { try redis.command("NOSUCHCOMMAND") }
        try redis.set("text", value: Array("x".utf8))
        #expect(throws: RedisError.serverError) { try redis.command("INCR", "text") }
        #expect(redis.isUp)
        try redis.ping()
        #expect(throws: RedisError.invalidArgument) { try redis.command([]) }
    }

    @Test func wrongConfigurationIsRefused() {
        #expect(throws: RedisError.invalidArgument) { try RedisClient(configuration: RedisConfiguration(port: 0)) }
        #expect(throws: RedisError.invalidArgument) { try RedisClient(configuration: RedisConfiguration(host: "")) }
        #expect(throws: RedisError.invalidArgument) { try RedisClient(configuration: RedisConfiguration(commandTimeout: .zero)) }
        #expect(throws: RedisError.invalidArgument) { try RedisClient(configuration: RedisConfiguration(maximumConnections: 0)) }
    }

    @Test func passwordIsSentAndNeverShown() throws {
        let server = try RedisServer.start(arguments: ["--requirepass", "s3cret-pass"])
        defer { server.stop() }
        let without = try RedisClient(configuration: RedisConfiguration(port: server.port))
        do {
            _ = try without.get("k")
            Issue.record("a command without AUTH succeeded")
        } catch {
            #expect(error == .serverError)
        }
        let wrong = try RedisClient(configuration: RedisConfiguration(port: server.port, password: "wrong-pass"))
        do {
            _ = try wrong.get("k")
            Issue.record("a wrong password was accepted")
        } catch {
            #expect(!error.description.contains("wrong-pass"))
        }
        let right = try RedisClient(configuration: RedisConfiguration(port: server.port, password: "s3cret-pass", database: 3))
        try right.set("k", value: [7])
        #expect(try right.get("k") == [7])
    }

    /// A refused connection starts the back-off: calls fail at once without connecting until the interval
    /// passed; the server back on the same port is used again, with one event per change.
    @Test func outageBacksOffAndRecovers() throws {
        let server = try RedisServer.start()
        let port = server.port
        let events = Mutex<[Bool]>([])
        let redis = try RedisClient(configuration: RedisConfiguration(port: port, retryInterval: .seconds(1))) { available, _ in
            events.withLock { $0.append(available) }
        }
        try redis.set("k", value: [1])
        server.kill()
        #expect(throws: RedisError.self) { try redis.get("k") }
        #expect(!redis.isAvailable)
        // During the back-off: no connect (which would fail as `connectionFailed` on the dead port), an
        // immediate `unavailable`. Asserted by kind, not by a wall-clock budget a sanitizer build may miss.
        let start = ContinuousClock.now
        for _ in 0..<100 where ContinuousClock.now - start < .milliseconds(800) {
            #expect(throws: RedisError.unavailable) { try redis.get("k") }
        }
        let again = try RedisServer.start(port: port)
        defer { again.stop() }
        Thread.sleep(forTimeInterval: 1.05)
        #expect(redis.isAvailable)
        #expect(try redis.get("k") == nil)  // a new server: nothing was kept
        try redis.set("k", value: [2])
        // Every connection of before the outage was replaced: each of the pool answers.
        for _ in 0..<20 { #expect(try redis.get("k") == [2]) }
        #expect(events.withLock { $0 } == [false, true])
    }

    /// A server that accepts but never answers: the command timeout bounds each call.
    @Test func commandTimeoutBoundsACall() throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let redis = try RedisClient(configuration: RedisConfiguration(port: server.port, commandTimeout: .milliseconds(50), retryInterval: .milliseconds(10)))
        try redis.ping()
        kill(server.pid, SIGSTOP)
        defer { kill(server.pid, SIGCONT) }
        let start = ContinuousClock.now
        #expect(throws: RedisError.timeout) { try redis.get("k") }
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(40) && elapsed < .milliseconds(1000))
        kill(server.pid, SIGCONT)
        Thread.sleep(forTimeInterval: 0.05)
        try redis.ping()
    }

    /// Many threads share the client's connections; every answer is the caller's own.
    @Test func concurrentCallersGetTheirOwnAnswers() async throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let redis = try RedisClient(configuration: RedisConfiguration(port: server.port, maximumConnections: 3))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for index in 0..<200 {
                        let key = "w\(worker)-\(index)"
                        let value = Array(key.utf8) + [UInt8(worker)]
                        try redis.set(key, value: value)
                        let read = try redis.get(key)
                        #expect(read == value)
                    }
                }
            }
            try await group.waitForAll()
        }
        guard case .integer(let count) = try redis.command("DBSIZE") else { Issue.record("DBSIZE"); return }
        #expect(count == 1600)
        guard case .integer(let clients) = try redis.command("CLIENT", "ID") else { Issue.record("CLIENT ID"); return }
        #expect(clients <= 10)  // at most three connections were made (ids count connects)
    }
}
