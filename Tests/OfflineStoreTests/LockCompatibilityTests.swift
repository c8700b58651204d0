import Foundation
import ODataCore
import ODataFixtures
import Testing

@testable import OfflineStore
#if canImport(Glibc)
import Glibc
#endif

/// The store's lock file (`storePath/storeName.lock`) against earlier versions, which take `flock(LOCK_EX)`
/// on it: a child process (a re-run of this test binary) making that raw `flock` call stands in for one.
@Suite(.serialized) struct LockCompatibilityTests {
    static let childLockFile = ProcessInfo.processInfo.environment["OLD_VERSION_LOCK_FILE"]

    /// In a child process (`OLD_VERSION_LOCK_FILE` set): what an earlier version does at open,
    /// `flock(LOCK_EX | LOCK_NB)` on the lock file; answers `@@ locked` or `@@ refused`, then holds the
    /// lock until its standard input ends. Nothing to do in a normal run.
    @Test func childOldVersion() {
        guard let path = Self.childLockFile else { return }
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        let answer = fd < 0 ? "open failed \(errno)" : flock(fd, LOCK_EX | LOCK_NB) == 0 ? "locked" : errno == EWOULDBLOCK ? "refused" : "failed \(errno)"
        FileHandle.standardOutput.write(Data("@@ \(answer)\n".utf8))
        while readLine() != nil {}
    }

    @Test func anEarlierVersionHoldingTheStoreMakesAnOpenFailWithStoreLocked() async throws {
        let directory = try TemporaryDirectory()
        let parameters = Northwind.parameters(directory)
        let old = try OldVersion(lockFile: parameters.storeDirectory + ".lock")
        #expect(old.answer == "locked")
        // No producer is needed: the open stops at the lock.
        let provider = try OfflineODataProvider(serviceRoot: "http://127.0.0.1:9/svc/", parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "shippers", query: "Shippers"))
        let refused = await #expect(throws: OfflineODataError.self) { try await provider.open() }
        #expect(refused == .storeLocked, "\(String(describing: refused))")
        #expect(refused?.message.contains("earlier version") == true)
        #expect(await provider.currentState == .closed)
        let lookup = #expect(throws: OfflineODataError.self) {
            try StorageLock.store(parameters.storeDirectory).release()
        }
        #expect(lookup == .storeLocked)
        old.stop()
        // Gone with its process: the lock can be taken.
        try StorageLock.store(parameters.storeDirectory).release()
    }

    @Test func anOpenStoreMakesAnEarlierVersionsFlockFail() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        let lockFile = provider.parameters.storeDirectory + ".lock"
        let refused = try OldVersion(lockFile: lockFile)
        #expect(refused.answer == "refused")
        refused.stop()
        // Another store in the same storePath is not blocked, and does not block this one.
        let otherParameters = Northwind.parameters(directory, name: "other")
        let second = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: otherParameters)
        try await second.add(definingQuery: OfflineODataDefiningQuery(name: "shippers", query: "Shippers"))
        try await second.open()
        #expect(try await second.getAll("Shippers").count == 3)
        #expect(try await provider.getAll("Shippers").count == 3)
        await second.close()
        await provider.close()
        let allowed = try OldVersion(lockFile: lockFile)
        #expect(allowed.answer == "locked")
    }
}

/// A child process that takes an earlier version's `flock(LOCK_EX | LOCK_NB)` on `lockFile` and holds it
/// until stopped.
final class OldVersion {
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    /// The child's answer: `locked`, `refused`, or what failed.
    private(set) var answer = ""

    init(lockFile: String) throws {
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["--testing-library", "swift-testing", "--filter", "LockCompatibilityTests/childOldVersion"]
        process.environment = ProcessInfo.processInfo.environment.merging(["OLD_VERSION_LOCK_FILE": lockFile]) { $1 }
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var buffer = Data()
        while true {
            let complete = buffer.lastIndex(of: 0x0A).map { buffer[..<$0] } ?? Data()
            if let line = String(decoding: complete, as: UTF8.self).split(separator: "\n").first(where: { $0.hasPrefix("@@ ") }) {
                answer = String(line.dropFirst(3))
                break
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
        }
    }

    /// Kills the child and waits for it (its lock goes with it).
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit {
        stop()
    }
}
