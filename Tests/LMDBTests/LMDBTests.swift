import Foundation
import Synchronization
import Testing
@testable import LMDB

/// A fresh directory under the system temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "lmdb-tests-" + UUID().uuidString
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

@Suite struct LMDBEnvironmentTests {
    @Test func putGetRemoveAndNotFoundIsNil() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let env = try LMDBEnvironment(path: dir.path)
        let db = try #require(try env.openDatabase(named: "kv"))
        try env.write { txn throws in
            try txn.setValue(bytes("one"), forKey: bytes("a"), in: db)
            try txn.setValue([UInt8](), forKey: bytes("empty"), in: db)
        }
        try env.read { txn throws in
            #expect(try txn.value(forKey: bytes("a"), in: db) == bytes("one"))
            #expect(try txn.value(forKey: bytes("missing"), in: db) == nil)
            // An empty value is a value, not "not found".
            #expect(try txn.value(forKey: bytes("empty"), in: db) == [])
            #expect(try txn.count(in: db) == 2)
        }
        let removed = try env.write { txn throws in try txn.removeValue(forKey: bytes("a"), in: db) }
        let removedAgain = try env.write { txn throws in try txn.removeValue(forKey: bytes("a"), in: db) }
        #expect(removed)
        #expect(!removedAgain)
        try env.read { txn throws in #expect(try txn.value(forKey: bytes("a"), in: db) == nil) }
    }

    @Test func valuesPersistAcrossReopen() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        do {
            let env = try LMDBEnvironment(path: dir.path)
            let db = try #require(try env.openDatabase(named: "kv"))
            try env.write { txn throws in try txn.setValue(bytes("kept"), forKey: bytes("k"), in: db) }
            env.close()
        }
        let env = try LMDBEnvironment(path: dir.path)
        // Opening without create finds the existing database.
        let db = try #require(try env.openDatabase(named: "kv", create: false))
        #expect(try env.openDatabase(named: "absent", create: false) == nil)
        try env.read { txn throws in #expect(try txn.value(forKey: bytes("k"), in: db) == bytes("kept")) }
    }

    @Test func throwingWriteAbortsAndRethrows() throws {
        struct Boom: Error {}
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let env = try LMDBEnvironment(path: dir.path)
        let db = try #require(try env.openDatabase(named: nil))
        #expect(throws: Boom.self) {
            try env.write { txn throws in
                try txn.setValue(bytes("v"), forKey: bytes("k"), in: db)
                throw Boom()
            }
        }
        try env.read { txn throws in #expect(try txn.value(forKey: bytes("k"), in: db) == nil) }
    }

    @Test func namedDatabasesAreSeparate() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let env = try LMDBEnvironment(path: dir.path, options: .init(maxDatabases: 2))
        let first = try #require(try env.openDatabase(named: "first"))
        let second = try #require(try env.openDatabase(named: "second"))
        try env.write { txn throws in
            try txn.setValue(bytes("1"), forKey: bytes("k"), in: first)
            try txn.setValue(bytes("2"), forKey: bytes("k"), in: second)
        }
        try env.read { txn throws in
            #expect(try txn.value(forKey: bytes("k"), in: first) == bytes("1"))
            #expect(try txn.value(forKey: bytes("k"), in: second) == bytes("2"))
        }
        // maxDatabases is enforced with a typed error.
        #expect(throws: LMDBError.databasesFull) { try env.openDatabase(named: "third") }
    }

    @Test func cursorWalksInKeyOrderSeeksAndDeletes() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let env = try LMDBEnvironment(path: dir.path)
        let db = try #require(try env.openDatabase(named: "ordered"))
        try env.write { txn throws in
            for key in ["d", "b", "a", "c"] { try txn.setValue(bytes(key.uppercased()), forKey: bytes(key), in: db) }
        }
        let keys: [String] = try env.read { txn throws in
            try txn.withCursor(in: db) { cursor throws in
                var keys: [String] = []
                var entry = try cursor.first()
                while let current = entry {
                    keys.append(String(decoding: current.key, as: UTF8.self))
                    #expect(current.value == bytes(String(decoding: current.key, as: UTF8.self).uppercased()))
                    entry = try cursor.next()
                }
                return keys
            }
        }
        #expect(keys == ["a", "b", "c", "d"])
        try env.read { txn throws in
            try txn.withCursor(in: db) { cursor throws in
                #expect(try cursor.seek(atLeast: bytes("bb"))?.key == bytes("c"))
                #expect(try cursor.last()?.key == bytes("d"))
                #expect(try cursor.previous()?.key == bytes("c"))
                #expect(try cursor.seek(atLeast: bytes("z")) == nil)
                // A cursor in a read-only transaction cannot delete.
                _ = try cursor.first()
                #expect(throws: LMDBError.permissionDenied) { try cursor.removeCurrent() }
            }
        }
        try env.write { txn throws in
            try txn.withCursor(in: db) { cursor throws in
                _ = try cursor.seek(atLeast: bytes("b"))
                try cursor.removeCurrent()
            }
        }
        try env.read { txn throws in
            #expect(try txn.value(forKey: bytes("b"), in: db) == nil)
            #expect(try txn.count(in: db) == 3)
        }
        try env.write { txn throws in try txn.removeAll(in: db) }
        try env.read { txn throws in #expect(try txn.count(in: db) == 0) }
    }

    @Test func mapFullGrowsTheMapAndRetries() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let env = try LMDBEnvironment(path: dir.path, options: .init(mapSize: 64 << 10))
        let before = env.mapSize
        let db = try #require(try env.openDatabase(named: "big"))
        let value = [UInt8](repeating: 7, count: 1 << 20)
        var runs = 0
        try env.write { txn throws in
            runs += 1
            try txn.setValue(value, forKey: bytes("big"), in: db)
        }
        #expect(runs > 1)
        #expect(env.mapSize > before)
        try env.read { txn throws in #expect(try txn.value(forKey: bytes("big"), in: db) == value) }
    }

    @Test func mapFullIsThrownWhenTheMapMayNotGrow() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let env = try LMDBEnvironment(path: dir.path, options: .init(mapSize: 64 << 10, maxMapSize: 64 << 10))
        let db = try #require(try env.openDatabase(named: "big"))
        var caught = false
        do {
            try env.write { txn throws in try txn.setValue([UInt8](repeating: 1, count: 1 << 20), forKey: bytes("k"), in: db) }
        } catch LMDBError.mapFull {
            caught = true
        }
        #expect(caught)
        #expect(LMDBError.mapFull.description.contains("MDB_MAP_FULL"))
    }

    @Test func reservedWriteFillsInPlace() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let env = try LMDBEnvironment(path: dir.path)
        let db = try #require(try env.openDatabase(named: nil))
        try env.write { txn throws in
            try txn.setValue(count: 4, forKey: bytes("r"), in: db) { buffer in
                buffer.copyBytes(from: [1, 2, 3, 4])
            }
        }
        let lent: [UInt8]? = try env.read { txn throws in
            try txn.withValue(forKey: bytes("r"), in: db) { $0.map { Array($0) } }
        }
        #expect(lent == [1, 2, 3, 4])
    }

    @Test func badInputGetsTypedErrors() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let env = try LMDBEnvironment(path: dir.path)
        let db = try #require(try env.openDatabase(named: nil))
        #expect(throws: LMDBError.badValueSize) {
            try env.write { txn throws in try txn.setValue(bytes("v"), forKey: [UInt8](), in: db) }
        }
        #expect(throws: LMDBError.permissionDenied) {
            try env.read { txn throws in try txn.setValue(bytes("v"), forKey: bytes("k"), in: db) }
        }
        #expect(throws: LMDBError.nestedWriteTransaction) {
            try env.write { _ in try env.write { _ in } }
        }
        #expect(throws: LMDBError.invalidArgument) { try LMDBEnvironment(path: "") }
    }

    @Test func aFileThatIsNotLMDBIsRefused() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: dir.path + "/data.mdb"))
        #expect(throws: LMDBError.invalid) { try LMDBEnvironment(path: dir.path) }
    }

    @Test func closedEnvironmentThrows() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let env = try LMDBEnvironment(path: dir.path)
        let db = try #require(try env.openDatabase(named: nil))
        env.close()
        env.close()
        #expect(env.isClosed)
        #expect(throws: LMDBError.environmentClosed) { try env.read { txn throws in try txn.value(forKey: bytes("k"), in: db) } }
        #expect(throws: LMDBError.environmentClosed) { try env.write { _ in } }
        #expect(throws: LMDBError.environmentClosed) { try env.sync() }
    }

    /// The commit observer sees each commit of this object that changed something, with the observed database's
    /// keys; a transaction that changed nothing took no ID and is not reported, nor is one that aborted.
    @Test func theCommitObserverSeesEachChangingCommitWithItsKeys() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let env = try LMDBEnvironment(path: dir.path, options: .init(maxDatabases: 2))
        let watched = try #require(try env.openDatabase(named: "watched"))
        let other = try #require(try env.openDatabase(named: "other"))
        let seen = Mutex<[LMDBCommit]>([])
        env.observeCommits(in: watched) { commit in seen.withLock { $0.append(commit) } }
        try env.write { txn throws in
            try txn.setValue(bytes("1"), forKey: bytes("a"), in: watched)
            try txn.setValue(bytes("1"), forKey: bytes("x"), in: other)
            try txn.setValue(count: 1, forKey: bytes("b"), in: watched) { $0[0] = 1 }
        }
        #expect(env.lastOwnTransactionID == env.lastTransactionID)
        let own = env.lastOwnTransactionID
        try env.write { txn throws in
            _ = try txn.value(forKey: bytes("a"), in: watched)
            #expect(try txn.removeValue(forKey: bytes("absent"), in: watched) == false)
        }
        #expect(env.lastOwnTransactionID == own && env.lastTransactionID == own, "nothing changed: no ID taken")
        #expect(throws: LMDBError.notFound) {
            try env.write { txn throws in
                try txn.setValue(bytes("2"), forKey: bytes("a"), in: watched)
                throw LMDBError.notFound
            }
        }
        try env.write { txn throws in
            try txn.setValue(bytes("1"), forKey: bytes("y"), in: other)
            #expect(try txn.removeValue(forKey: bytes("a"), in: watched))
        }
        try env.write { txn throws in
            try txn.withCursor(in: watched) { cursor in
                _ = try cursor.first()
                try cursor.removeCurrent()
            }
        }
        let commits = seen.withLock { $0 }
        #expect(commits.map(\.keys) == [[bytes("a"), bytes("b")], [bytes("a")], []])
        #expect(commits.map(\.unlisted) == [false, false, true])
        #expect(commits.map(\.transaction) == [own, own + 1, own + 2])
        #expect(env.lastTransactionID == own + 2)
    }

    @Test func filesAreOwnerOnly() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let env = try LMDBEnvironment(path: dir.path + "/nested")
        _ = try env.openDatabase(named: nil)
        let attributes = try FileManager.default.attributesOfItem(atPath: dir.path + "/nested")
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        for file in ["data.mdb", "lock.mdb"] {
            let fileAttributes = try FileManager.default.attributesOfItem(atPath: dir.path + "/nested/" + file)
            #expect((fileAttributes[.posixPermissions] as? Int).map { $0 & 0o077 } == 0)
        }
    }

    @Test(arguments: [LMDBEnvironment.Durability.full, .noMetaSync, .noSync])
    func everyDurabilityCommits(durability: LMDBEnvironment.Durability) throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        do {
            let env = try LMDBEnvironment(path: dir.path, options: .init(durability: durability))
            let db = try #require(try env.openDatabase(named: nil))
            try env.write { txn throws in try txn.setValue(bytes("v"), forKey: bytes("k"), in: db) }
            try env.sync()
            env.close()
        }
        let env = try LMDBEnvironment(path: dir.path)
        let db = try #require(try env.openDatabase(named: nil))
        try env.read { txn throws in #expect(try txn.value(forKey: bytes("k"), in: db) == bytes("v")) }
    }

    @Test func concurrentAsyncWritersAreSerializedAndAllCommit() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let env = try LMDBEnvironment(path: dir.path, options: .init(durability: .noSync))
        let db = try #require(try env.openDatabase(named: "counter"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    try await env.write { txn throws in
                        // Read-modify-write: lost updates would show if writers overlapped.
                        let current = try txn.value(forKey: bytes("n"), in: db).map { Int(String(decoding: $0, as: UTF8.self))! } ?? 0
                        try txn.setValue(bytes(String(current + 1)), forKey: bytes("n"), in: db)
                    }
                }
                group.addTask {
                    _ = try env.read { txn throws in try txn.value(forKey: bytes("n"), in: db) }
                }
            }
            try await group.waitForAll()
        }
        let final = try env.read { txn throws in try txn.value(forKey: bytes("n"), in: db) }
        #expect(final == bytes("200"))
    }

    @Test func errorsMatchByNameAndDescribeThemselves() {
        let error: any Error = LMDBError.notFound
        #expect(LMDBError.notFound ~= error)
        #expect(!(LMDBError.mapFull ~= error))
        #expect(LMDBError.notFound.description.contains("MDB_NOTFOUND"))
        #expect(LMDBError.environmentClosed.description.contains("closed"))
    }
}

/// Compile-time check: the environment and its value types cross isolation boundaries.
@Test func sendableConformances() {
    func requireSendable<T: Sendable>(_: T.Type) {}
    requireSendable(LMDBEnvironment.self)
    requireSendable(LMDBDatabase.self)
    requireSendable(LMDBError.self)
    requireSendable(LMDBEnvironment.Options.self)
}
