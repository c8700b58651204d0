import Foundation
import Testing
@testable import LMDB

/// Key-prefix walks and removal (`LMDBTransaction+Ranges.swift`), across many leaf pages.
@Suite struct KeyPrefixTests {
    @Test func walksAndRemovesExactlyThePrefixedKeysAcrossPages() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let env = try LMDBEnvironment(path: dir.path)
        let db = try #require(try env.openDatabase(named: "chunks"))
        // Three groups of 600 keys (a 3-byte prefix and a big-endian index), values of 1 KiB: many pages each.
        try env.write { txn throws in
            for group in [UInt8(1), 2, 3] {
                for index in 0..<600 {
                    let key = [group, group, group, UInt8(index >> 8), UInt8(index & 0xFF)]
                    try txn.setValue([UInt8](repeating: UInt8(index & 0xFF), count: 1024), forKey: key, in: db)
                }
            }
        }
        var seen: [Int] = []
        try env.read { txn throws in
            try txn.forEachEntry(withKeyPrefix: [2, 2, 2], in: db) { key, value in
                #expect(key.count == 5 && key[0] == 2 && value.count == 1024)
                seen.append(Int(key[3]) << 8 | Int(key[4]))
                return true
            }
            var stopped = 0
            try txn.forEachEntry(withKeyPrefix: [3, 3, 3], in: db) { _, _ in
                stopped += 1
                return stopped < 10
            }
            #expect(stopped == 10)
            var none = 0
            try txn.forEachEntry(withKeyPrefix: [4], in: db) { _, _ in none += 1; return true }
            #expect(none == 0)
            let statistics = try txn.statistics(of: db)
            #expect(statistics.entries == 1800 && statistics.leafPages > 100 && statistics.overflowPages == 0)
        }
        #expect(seen == Array(0..<600))
        let removed = try env.write { txn throws in try txn.removeEntries(withKeyPrefix: [2, 2, 2], in: db) }
        #expect(removed == 600)
        try env.read { txn throws in
            #expect(try txn.count(in: db) == 1200)
            #expect(try txn.value(forKey: [1, 1, 1, 2, 87], in: db) != nil)
            #expect(try txn.value(forKey: [3, 3, 3, 0, 0], in: db) != nil)
        }
        // The last group, up to the end of the database.
        #expect(try env.write { txn throws in try txn.removeEntries(withKeyPrefix: [3, 3, 3], in: db) } == 600)
        #expect(try env.read { txn throws in try txn.count(in: db) } == 600)
    }
}
