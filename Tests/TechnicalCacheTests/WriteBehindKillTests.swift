import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import Testing
@testable import TechnicalCache

/// A process killed between an online read's answer and its entry's commit loses that entry and nothing else (#45
/// part 2): real nginx, the `odata-fleet-instance` program (an `OnlineODataStore` with its cache), SIGKILL.
@Suite struct WriteBehindKillTests {
    @Test func aKillBeforeTheCommitLosesOnlyThatEntry() async throws {
        let secret = "write-behind-kill-test"
        let backEnd = try Nginx.serving(files: ["o0.json": Data(#"{"value":[{"ID":0}]}"#.utf8), "o1.json": Data(#"{"value":[{"ID":1}]}"#.utf8)])
        defer { backEnd.stop() }
        let root = "http://127.0.0.1:\(backEnd.ports[0])/"
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        // The child's cache (`<directory>/<name>-0.cache`), opened here too, as a second process would: o0 is
        // stored and committed before the child starts.
        let configuration = CacheConfiguration(sizeLimit: 256 << 20, keyDerivation: .pbkdf2(rounds: 1000))
        let cache = try ResponseCache(directory: directory.path + "/k-0.cache", configuration: configuration)
        try cache.open(encryption: .key(secret))
        defer { cache.close() }
        try await cache.store(CacheEntry(status: 200, headers: [.eTag: #"W/"mine""#], payload: Data(#"{"value":[{"ID":0}]}"#.utf8)), for: root + "o0.json")

        // The child opens its store (an open writes), then another writer holds the commit, and the child reads o0 and
        // o1 and reports both answered.
        let child = try FleetInstanceProcess.start(
            ["--service-root", root, "--directory", directory.path, "--name", "k", "--resource", "o{i}.json", "--count", "2",
             "--derivation-rounds", "1000", "--wait-for-go"], passphrase: secret)
        defer { child.stop() }
        try child.waitUntilReady(timeout: .seconds(60))
        let held = try WriteBehindTests.HeldCommit(cache)
        try child.go()
        let report: FleetInstanceReport
        do { report = try child.finalReport(timeout: .seconds(60)) } catch {
            held.end()
            child.stop()
            throw error
        }
        #expect(report.errors == 0 && report.found == 2, "\(report.errorSamples)")
        // The answers went to their caller while o1's entry could not commit: the child now waits in its close, which
        // writes it. Killed there.
        child.stop()
        held.end()

        #expect(try cache.containsEntry(for: root + "o0.json"), "what was committed before stays")
        #expect(try !cache.containsEntry(for: root + "o1.json"), "the entry not yet committed is lost")
        #expect(try cache.entry(for: root + "o0.json")?.payload == Data(#"{"value":[{"ID":0}]}"#.utf8))
        #expect(cache.statistics.integrityFailures == 0)
        // The cache opens again after the kill and takes writes.
        cache.close()
        try cache.open(encryption: .key(secret))
        try await cache.store(CacheEntry(status: 200, headers: [:], payload: Data("again".utf8)), for: root + "o1.json")
        #expect(try cache.entry(for: root + "o1.json")?.payload == Data("again".utf8))
    }
}
