import Dispatch
import Foundation
import Testing
import ODataCore
#if canImport(Glibc)
import Glibc
#endif

/// `StorageLock`, the one lock of both stores: the in-process registry, shared and exclusive use locks
/// between real processes (re-runs of this test binary), the holder's process ID, release on close and
/// on `SIGKILL`, and the `flock(LOCK_EX)` of earlier versions.
@Suite(.serialized) struct StorageLockTests {
    /// Set in a child process: the lock file its commands work on.
    static let childLockFile = ProcessInfo.processInfo.environment["STORAGE_LOCK_TEST_FILE"]

    /// In a child process (`STORAGE_LOCK_TEST_FILE` set) this runs the commands read from standard input
    /// (see `LockScript`); in a normal run it runs a short script in this process.
    @Test func childScripted() throws {
        if let path = Self.childLockFile {
            let script = LockScript(path: path)
            while let line = readLine() { lockChildReport(lockAnswerPrefix + script.run(line)) }
            return
        }
        let dir = try LockTestDirectory()
        defer { dir.remove() }
        let script = LockScript(path: dir.file("a.lock"))
        for (command, expected) in [("release", "ok"), ("shared", "ok"), ("shared", "error heldInThisProcess"), ("exclusive-again", "ok"),
                                    ("shared-again", "ok"), ("release", "ok"), ("exclusive", "ok"), ("bogus", "error usage")] {
            #expect(script.run(command) == expected, "\(command)")
        }
    }

    @Test func aLockFileIsHeldOnceInThisProcessWhateverThePathsSpelling() throws {
        let dir = try LockTestDirectory()
        defer { dir.remove() }
        let lock = try StorageLock.acquire(dir.file("a.lock"), exclusive: false)
        #expect(lock.lockFile == dir.canonical + "/a.lock" && lock.directory == dir.canonical)
        for spelling in [dir.file("a.lock"), dir.path + "/./a.lock", dir.path + "/../" + (dir.path as NSString).lastPathComponent + "/a.lock"] {
            for exclusive in [false, true] {
                let refused = acquireFailure { try StorageLock.acquire(spelling, exclusive: exclusive) }
                #expect(refused?.kind == .heldInThisProcess, "\(spelling)")
            }
        }
        // Another lock file in the same directory is another lock (two offline stores in one storePath).
        let other = try StorageLock.acquire(dir.file("b.lock"), exclusive: true)
        other.release()
        lock.release()
        lock.release()
        try StorageLock.acquire(dir.file("a.lock"), exclusive: true).release()
        // A deallocated lock is released too.
        do { _ = try StorageLock.acquire(dir.file("a.lock"), exclusive: true) }
        try StorageLock.acquire(dir.file("a.lock"), exclusive: true).release()
    }

    @Test func aLockFileInAMissingDirectoryIsAFileSystemFailure() throws {
        let dir = try LockTestDirectory()
        defer { dir.remove() }
        #expect(acquireFailure { try StorageLock.acquire(dir.file("missing/a.lock"), exclusive: false) }?.kind == .fileSystem)
    }

    @Test func sharedLocksShareAndAnExclusiveOneNamesTheHolder() throws {
        let dir = try LockTestDirectory()
        defer { dir.remove() }
        let path = dir.file("cache.lock")
        let child = try LockChild(path: path)
        #expect(child.send("shared") == "ok")

        // Shared with shared: both hold it.
        let mine = try StorageLock.acquire(path, exclusive: false)
        // Exclusive against a shared holder: refused at once, naming it; the shared lock stays.
        let refused = failure { try mine.makeExclusive() }
        #expect(refused?.kind == .heldByAnotherProcess)
        #expect(refused?.holder == child.pid)
        #expect(refused?.message.contains("process \(child.pid)") == true, "\(refused?.message ?? "")")
        #expect(child.send("exclusive-again") == "error heldByAnotherProcess \(getpid())")
        mine.release()

        let exclusive = acquireFailure { try StorageLock.acquire(path, exclusive: true) }
        #expect(exclusive?.kind == .heldByAnotherProcess && exclusive?.holder == child.pid)

        // The child alone: it may make its lock exclusive; then a shared request is refused, naming it.
        #expect(child.send("exclusive-again") == "ok")
        let shared = acquireFailure { try StorageLock.acquire(path, exclusive: false) }
        #expect(shared?.kind == .heldByAnotherProcess && shared?.holder == child.pid)
        #expect(child.send("shared-again") == "ok")
        try StorageLock.acquire(path, exclusive: false).release()
    }

    @Test func theSetupLockIsWaitedFor() throws {
        let dir = try LockTestDirectory()
        defer { dir.remove() }
        let path = dir.file("cache.lock")
        let child = try LockChild(path: path)
        #expect(child.send("shared") == "ok")
        let mine = try StorageLock.acquire(path, exclusive: false)
        defer { mine.release() }
        // The child holds the setup lock until it reads its next line.
        child.write("hold-setup")
        #expect(child.answer() == "holding")
        let ranSetup = LockedValue(false)
        let failure = LockedValue<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            do {
                try mine.duringSetup { ranSetup.withLock { $0 = true } }
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
            done.signal()
        }
        // The event: the kernel lists this process's setup request as blocked behind the child's.
        #expect(Self.waitUntilThisProcessWaitsForALock(), "this process's setup request never blocked")
        #expect(!ranSetup.withLock { $0 }, "this process's setup waits for the child's")
        #expect(child.send("end") == "ok")
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(ranSetup.withLock { $0 })
        #expect(failure.withLock { $0 } == nil)
    }

    /// Waits until `/proc/locks` lists a lock request of this process as blocked (a line marked `->`), checking
    /// every millisecond for at most 30 s.
    private static func waitUntilThisProcessWaitsForALock() -> Bool {
        let pid = Substring(String(getpid()))
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let table = try? String(contentsOfFile: "/proc/locks", encoding: .utf8),
               table.split(separator: "\n").contains(where: { $0.contains("->") && $0.split(separator: " ").contains(pid) }) {
                return true
            }
            usleep(1_000)
        }
        return false
    }

    @Test(arguments: ["release", "kill"])
    func aLockIsGoneWhenItsHolderReleasesItOrIsKilled(how: String) throws {
        let dir = try LockTestDirectory()
        defer { dir.remove() }
        let path = dir.file("store.lock")
        let child = try LockChild(path: path)
        #expect(child.send("exclusive") == "ok")
        #expect(acquireFailure { try StorageLock.acquire(path, exclusive: false) }?.holder == child.pid)
        if how == "release" {
            #expect(child.send("release") == "ok")
        } else {
            child.stop(SIGKILL)
            #expect(child.process.terminationReason == .uncaughtSignal)
        }
        try StorageLock.acquire(path, exclusive: true).release()
    }

    /// An earlier version takes `flock(LOCK_EX)` on the same file: a raw `flock` in a child stands in for it.
    @Test func anEarlierVersionsExclusiveFlockAndThisLockRefuseEachOther() throws {
        let dir = try LockTestDirectory()
        defer { dir.remove() }
        let path = dir.file("store.lock")
        // The earlier version holds the file: this lock is refused, shared or exclusive.
        let old = try LockChild(path: path)
        #expect(old.send("old-flock") == "ok")
        for exclusive in [false, true] {
            let refused = acquireFailure { try StorageLock.acquire(path, exclusive: exclusive) }
            #expect(refused?.kind == .heldByAnotherProcess && refused?.holder == nil, "\(String(describing: refused))")
            #expect(refused?.message.contains("earlier version") == true)
        }
        old.stop()

        // This lock holds the file, shared or exclusive: the earlier version's flock is refused.
        for exclusive in [false, true] {
            let lock = try StorageLock.acquire(path, exclusive: exclusive)
            let another = try LockChild(path: path)
            #expect(another.send("old-flock") == "error EWOULDBLOCK")
            another.stop()
            lock.release()
        }
        let free = try LockChild(path: path)
        #expect(free.send("old-flock") == "ok")
    }
}

/// The commands of a scripted child, one a line; each answers `ok` or `error …`:
/// `shared`, `exclusive` (acquire), `exclusive-again`, `shared-again` (change the held lock),
/// `hold-setup` (holds the setup lock, answers `holding`, and lets go after the next line), `release`, `old-flock` (what an earlier version does:
/// `flock(LOCK_EX | LOCK_NB)` on a descriptor of its own, kept).
final class LockScript {
    let path: String
    private var lock: StorageLock?
    private var oldDescriptor: Int32 = -1

    init(path: String) {
        self.path = path
    }

    func run(_ command: String) -> String {
        do throws(StorageLock.Failure) {
            switch command {
            case "shared", "exclusive":
                lock = try StorageLock.acquire(path, exclusive: command == "exclusive")
            case "exclusive-again":
                try held().makeExclusive()
            case "shared-again":
                try held().makeShared()
            case "hold-setup":
                do {
                    try held().duringSetup {
                        lockChildReport(lockAnswerPrefix + "holding")
                        _ = readLine()
                    }
                } catch { return "error \(error)" }
            case "release":
                lock?.release()
                lock = nil
            case "old-flock":
                oldDescriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
                guard oldDescriptor >= 0 else { return "error open \(errno)" }
                guard flock(oldDescriptor, LOCK_EX | LOCK_NB) == 0 else { return errno == EWOULDBLOCK ? "error EWOULDBLOCK" : "error \(errno)" }
            default:
                return "error usage"
            }
            return "ok"
        } catch {
            return "error \(error.kind)" + (error.holder.map { " \($0)" } ?? "")
        }
    }

    private func held() throws(StorageLock.Failure) -> StorageLock {
        guard let lock else { throw StorageLock.Failure(.fileSystem, "no lock held") }
        return lock
    }
}

/// The failure `body` throws, or `nil`.
func failure(_ body: () throws -> Void) -> StorageLock.Failure? {
    do { try body() } catch { return error as? StorageLock.Failure }
    return nil
}

/// The failure of an acquisition, or `nil` (the lock acquired is released at once).
func acquireFailure(_ body: () throws -> StorageLock) -> StorageLock.Failure? {
    do { try body().release() } catch { return error as? StorageLock.Failure }
    return nil
}

/// A directory of its own under the temporary directory.
struct LockTestDirectory {
    let path: String
    /// `path` resolved with `realpath`.
    let canonical: String

    init() throws {
        path = NSTemporaryDirectory() + "storage-lock-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        canonical = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// The prefix of a scripted child's answer lines (other lines are the test runner's).
let lockAnswerPrefix = "@@ "

/// Writes one line to standard output at once.
func lockChildReport(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// A re-run of this test binary running `StorageLockTests/childScripted` on one lock file, stopped by
/// its process ID.
final class LockChild {
    let process = Process()
    private let output = Pipe()
    private let input = Pipe()
    private var buffer = Data()

    init(path: String) throws {
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["--testing-library", "swift-testing", "--filter", "StorageLockTests/childScripted"]
        process.environment = ProcessInfo.processInfo.environment.merging(["STORAGE_LOCK_TEST_FILE": path]) { $1 }
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = input
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }

    /// Sends one command and returns its answer.
    func send(_ command: String) -> String {
        write(command)
        return answer()
    }

    /// Sends one command without waiting for its answer.
    func write(_ command: String) {
        input.fileHandleForWriting.write(Data((command + "\n").utf8))
    }

    /// The next answer (the text after `@@ `), or "" when the child ended.
    func answer() -> String {
        let handle = output.fileHandleForReading
        while true {
            while let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                if line.hasPrefix(lockAnswerPrefix) { return String(line.dropFirst(lockAnswerPrefix.count)) }
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return "" }
            buffer.append(chunk)
        }
    }

    /// Stops the child with `signal` and waits for it.
    func stop(_ signal: Int32 = SIGKILL) {
        if process.isRunning { kill(pid, signal) }
        process.waitUntilExit()
    }

    deinit {
        stop()
    }
}
