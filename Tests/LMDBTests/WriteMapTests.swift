import Foundation
import Testing
@testable import LMDB

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// An environment opened with `Options.writeMap` (`MDB_WRITEMAP` and `MDB_NORDAHEAD`): commits write into the map.
@Suite struct WriteMapTests {
    private func dataFileSize(_ dir: TemporaryDirectory) -> Int { LMDBEnvironment.dataFileSize(dir.path) }

    @Test(arguments: [LMDBEnvironment.Durability.full, .noMetaSync, .noSync])
    func everyDurabilityCommitsAndPersists(durability: LMDBEnvironment.Durability) throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        do {
            let env = try LMDBEnvironment(path: dir.path, options: .init(durability: durability, writeMap: true))
            let db = try #require(try env.openDatabase(named: "kv"))
            try env.write { txn throws in
                try txn.setValue(bytes("v"), forKey: bytes("k"), in: db)
                try txn.setValue([UInt8](repeating: 3, count: 100_000), forKey: bytes("big"), in: db)
            }
            // An aborted write leaves nothing, though its pages were written into the map.
            struct Abort: Error {}
            #expect(throws: Abort.self) {
                try env.write { txn throws in
                    try txn.setValue(bytes("lost"), forKey: bytes("k"), in: db)
                    throw Abort()
                }
            }
            try env.sync()
            env.close()
        }
        let env = try LMDBEnvironment(path: dir.path, options: .init(writeMap: true))
        let db = try #require(try env.openDatabase(named: "kv", create: false))
        try env.read { txn throws in
            #expect(try txn.value(forKey: bytes("k"), in: db) == bytes("v"))
            #expect(try txn.value(forKey: bytes("big"), in: db) == [UInt8](repeating: 3, count: 100_000))
        }
    }

    @Test func theFileHasTheMapsSizeAndGrowsWithIt() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let env = try LMDBEnvironment(path: dir.path, options: .init(mapSize: 64 << 10, writeMap: true))
        defer { env.close() }
        #expect(dataFileSize(dir) == env.mapSize)
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
        #expect(dataFileSize(dir) == env.mapSize)
        try env.read { txn throws in #expect(try txn.value(forKey: bytes("big"), in: db) == value) }
    }

    @Test func mapFullIsThrownWhenTheMapMayNotGrow() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let env = try LMDBEnvironment(path: dir.path, options: .init(mapSize: 64 << 10, maxMapSize: 64 << 10, writeMap: true))
        defer { env.close() }
        let db = try #require(try env.openDatabase(named: "big"))
        #expect(throws: LMDBError.mapFull) {
            try env.write { txn throws in try txn.setValue([UInt8](repeating: 1, count: 1 << 20), forKey: bytes("k"), in: db) }
        }
        // The environment stays usable.
        try env.write { txn throws in try txn.setValue(bytes("small"), forKey: bytes("k"), in: db) }
        try env.read { txn throws in #expect(try txn.value(forKey: bytes("k"), in: db) == bytes("small")) }
    }

    /// LMDB sets the file's size to the map's: an environment opened with a smaller map than the file's (another
    /// process's, or an earlier larger one) must not cut the file down to it.
    @Test func aSmallerMapDoesNotShrinkTheFile() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let value = [UInt8](repeating: 9, count: 300_000)
        do {
            let env = try LMDBEnvironment(path: dir.path, options: .init(mapSize: 4 << 20, writeMap: true))
            let db = try #require(try env.openDatabase(named: "kv"))
            try env.write { txn throws in try txn.setValue(value, forKey: bytes("k"), in: db) }
            env.close()
        }
        #expect(dataFileSize(dir) == 4 << 20)
        let env = try LMDBEnvironment(path: dir.path, options: .init(mapSize: 1 << 20, writeMap: true))
        defer { env.close() }
        #expect(dataFileSize(dir) == 4 << 20)
        #expect(env.mapSize == 4 << 20)
        let db = try #require(try env.openDatabase(named: "kv", create: false))
        try env.write { txn throws in try txn.setValue(value, forKey: bytes("k2"), in: db) }
        try env.read { txn throws in
            #expect(try txn.value(forKey: bytes("k"), in: db) == value)
            #expect(try txn.value(forKey: bytes("k2"), in: db) == value)
        }
    }
}
