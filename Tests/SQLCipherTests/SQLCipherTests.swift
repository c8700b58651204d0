import Foundation
import Testing
@testable import SQLCipher

/// A fresh directory under the system temporary directory, removed by `remove()`.
private struct TemporaryDirectory {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "sqlcipher-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }

    /// Every file of the directory and its bytes.
    func files() throws -> [String: Data] {
        var result: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: path) {
            result[name] = FileManager.default.contents(atPath: path + "/" + name)
        }
        return result
    }

    /// The files of the directory that hold `needle`.
    func filesContaining(_ needle: String) throws -> [String] {
        try files().filter { $0.value.range(of: Data(needle.utf8)) != nil }.map(\.key).sorted()
    }
}

private let key = (0..<32).map { UInt8($0 * 7 + 3) }
private let otherKey = (0..<32).map { UInt8($0 * 5 + 1) }
private let needle = "Qwertzuiop Known Plaintext"

private func insertRows(_ connection: SQLCipherConnection, count: Int, from start: Int = 0) throws {
    try connection.execute("CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL, body BLOB)")
    try connection.transaction {
        let insert = try connection.cachedStatement("INSERT INTO items (id, name, price, body) VALUES (?, ?, ?, ?)")
        for id in start..<(start + count) {
            insert.reset()
            try insert.bind(.integer(Int64(id)), at: 1)
            try insert.bind(.text("\(needle) \(id)"), at: 2)
            try insert.bind(.real(Double(id) / 4), at: 3)
            try insert.bind(.blob(Array("body \(needle)".utf8)), at: 4)
            #expect(try insert.step() == false)
        }
    }
}

private func names(_ connection: SQLCipherConnection) throws -> [String] {
    let select = try connection.prepare("SELECT name FROM items ORDER BY id")
    var result: [String] = []
    while try select.step() { result.append(select.text(at: 0)) }
    return result
}

@Suite struct SQLCipherConnectionTests {
    @Test func rowsRoundTripThroughAClosedAndReopenedEncryptedDatabase() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/round.db"
        do {
            let connection = try SQLCipherConnection(path: path, key: key)
            #expect(connection.cipherVersion.hasPrefix("3."))
            try insertRows(connection, count: 3)
            try connection.setUserVersion(7)
            connection.close()
        }
        let reopened = try SQLCipherConnection(path: path, key: key)
        defer { reopened.close() }
        #expect(try names(reopened) == (0..<3).map { "\(needle) \($0)" })
        #expect(try reopened.userVersion() == 7)
        let row = try reopened.prepare("SELECT id, name, price, body, NULL FROM items WHERE id = ?")
        try row.bind(.integer(2), at: 1)
        #expect(try row.step())
        #expect(row.value(at: 0) == .integer(2))
        #expect(row.value(at: 2) == .real(0.5))
        #expect(row.value(at: 3) == .blob(Array("body \(needle)".utf8)))
        #expect(row.value(at: 4) == .null)
        #expect(try row.step() == false)
        // The database is 4 KiB pages (the default).
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0) % SQLCipherConnection.defaultPageSize == 0)
        // Owner-only.
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
    }

    @Test func theProcessSetUpItsPageCacheBlockAndFetchedCryptoBeforeTheFirstConnection() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let connection = try SQLCipherConnection(path: directory.path + "/bulk.db", key: key)
        defer { connection.close() }
        // Both are set up before the first connection of the process opens, so they apply (nothing else in this test
        // process uses SQLite first; the round-trip tests read and write pages through the fetched crypto).
        #expect(SQLCipherConnection.processSetup.bulkPageCache)
        #expect(SQLCipherConnection.processSetup.fetchedCrypto)
        // The connection read page 1 at open: its page cache allocated the block then (other tests' connections only
        // add to the total).
        #expect(SQLCipherConnection.sqliteMemoryUsed >= Int(SQLCipherConnection.bulkPageCacheLines) * SQLCipherConnection.defaultPageSize)
    }

    @Test func thePageSizeIsTheOptionsAndAnEncryptedFileOpensOnlyWithItsOwn() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/small.db"
        do {
            let connection = try SQLCipherConnection(path: path, key: key, options: .init(pageSize: 1024))
            #expect(connection.pageSize == 1024)
            try insertRows(connection, count: 20)
            connection.close()
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        // Another size fails the first page's check and writes nothing; its own size reads every row.
        #expect { try SQLCipherConnection(path: path, key: key) } throws: { ($0 as? SQLCipherError) == .notADatabase }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        let reopened = try SQLCipherConnection(path: path, key: key, options: .init(pageSize: 1024))
        #expect(try names(reopened).count == 20)
        reopened.close()
        // A plaintext database records its size: opened with another, it reports its own.
        let plain = directory.path + "/plain.db"
        try SQLCipherConnection(path: plain, key: nil, options: .init(pageSize: 2048)).close()
        let plainAgain = try SQLCipherConnection(path: plain, key: nil)
        #expect(plainAgain.pageSize == 2048)
        plainAgain.close()
        // A size SQLite does not accept.
        #expect { try SQLCipherConnection(path: directory.path + "/odd.db", key: key, options: .init(pageSize: 1000)) } throws: {
            ($0 as? SQLCipherError) == .misuse
        }
    }

    @Test func aTransactionThatThrowsRollsBackAndSQLErrorsCarrySQLitesMessage() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let connection = try SQLCipherConnection(path: directory.path + "/tx.db", key: key)
        defer { connection.close() }
        try insertRows(connection, count: 2)
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try connection.transaction {
                try connection.execute("DELETE FROM items")
                throw Stop()
            }
        }
        #expect(try names(connection).count == 2)
        // A duplicate primary key: a constraint error with SQLite's words, and the transaction rolled back.
        let error = #expect(throws: SQLCipherError.self) { try insertRows(connection, count: 2, from: 1) }
        #expect(error.map { SQLCipherError.constraint ~= $0 } == true)
        #expect(error != .constraint)  // the extended code: SQLITE_CONSTRAINT_PRIMARYKEY
        #expect(error?.message.contains("UNIQUE constraint failed: items.id") == true)
        #expect(try names(connection).count == 2)
        let syntax = #expect(throws: SQLCipherError.self) { _ = try connection.prepare("SELEKT 1") }
        #expect(syntax == .error)
        #expect(syntax?.message.contains("syntax error") == true)
        #expect(throws: SQLCipherError.self) { try SQLCipherConnection(path: directory.path + "/short.db", key: [1, 2, 3]) }
    }

    @Test func aWrongKeyOrNoKeyIsATypedErrorAndChangesNothing() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/keyed.db"
        let connection = try SQLCipherConnection(path: path, key: key)
        try insertRows(connection, count: 10)
        connection.close()
        let before = try directory.files()
        #expect(before.keys.sorted() == ["keyed.db"])  // the last close removed -wal and -shm
        for attempt in [otherKey, nil] {
            let error = #expect(throws: SQLCipherError.self) { try SQLCipherConnection(path: path, key: attempt) }
            #expect(error == .notADatabase, "\(String(describing: error))")
            #expect(error.map { String(describing: $0) }?.contains("x'") == false)  // the key is never quoted
            #expect(try directory.files() == before, "a failed open changed the files")
        }
        // A plaintext database is refused with a key as well.
        let plainPath = directory.path + "/plain.db"
        let plain = try SQLCipherConnection(path: plainPath, key: nil)
        try insertRows(plain, count: 1)
        plain.close()
        let plainError = #expect(throws: SQLCipherError.self) { try SQLCipherConnection(path: plainPath, key: key) }
        #expect(plainError == .notADatabase)
        // The right key still opens everything.
        let again = try SQLCipherConnection(path: path, key: key)
        #expect(try names(again).count == 10)
        again.close()
    }

    @Test func aCorruptFileIsATypedError() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/corrupt.db"
        let connection = try SQLCipherConnection(path: path, key: key)
        try insertRows(connection, count: 400)
        connection.close()
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(original.count > 8 * SQLCipherConnection.defaultPageSize)
        // A byte of the first page: the open fails.
        var first = original
        first[200] ^= 0x01
        try first.write(to: URL(fileURLWithPath: path))
        let openError = #expect(throws: SQLCipherError.self) { try SQLCipherConnection(path: path, key: key) }
        #expect(openError == .notADatabase)
        // A byte of a later page: the open succeeds, the read of that page fails with a typed error.
        var later = original
        later[6 * SQLCipherConnection.defaultPageSize + 100] ^= 0x01
        try later.write(to: URL(fileURLWithPath: path))
        let opened = try SQLCipherConnection(path: path, key: key)
        defer { opened.close() }
        let readError = #expect(throws: SQLCipherError.self) { _ = try names(opened) }
        #expect(readError != nil)
        // Garbage that is not a database at all.
        let garbage = directory.path + "/garbage.db"
        try Data(repeating: 0x5A, count: 3 * SQLCipherConnection.defaultPageSize).write(to: URL(fileURLWithPath: garbage))
        let garbageError = #expect(throws: SQLCipherError.self) { try SQLCipherConnection(path: garbage, key: key) }
        #expect(garbageError == .notADatabase)
    }

    @Test(arguments: [SQLCipherConnection.Options.Journal.writeAheadLog, .rollback])
    func noKnownPlaintextInAnyFileOfTheDirectory(journal: SQLCipherConnection.Options.Journal) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let options = SQLCipherConnection.Options(journal: journal)
        // Control: the same rows without a key are readable, so the scan below can fail.
        let plain = try SQLCipherConnection(path: directory.path + "/plain.db", key: nil, options: options)
        try insertRows(plain, count: 50)
        plain.close()
        #expect(try directory.filesContaining(needle) == ["plain.db"])
        try FileManager.default.removeItem(atPath: directory.path + "/plain.db")

        let connection = try SQLCipherConnection(path: directory.path + "/secret.db", key: key, options: options)
        defer { connection.close() }
        try insertRows(connection, count: 500)
        // Scan while a write transaction is open (the -journal or the -wal holds pages of it), and with a
        // sort that does not fit a page (temp_store = MEMORY: no temporary file).
        try connection.transaction {
            try connection.execute("UPDATE items SET name = name || ' changed', body = zeroblob(3000) WHERE id % 3 = 0")
            let sort = try connection.prepare("SELECT name FROM items ORDER BY name DESC, price")
            while try sort.step() {}
            let files = try directory.files().keys.sorted()
            if journal == .writeAheadLog { #expect(files.contains("secret.db-wal") && files.contains("secret.db-shm")) }
            if journal == .rollback { #expect(files.contains("secret.db-journal")) }
            #expect(try directory.filesContaining(needle) == [])
            #expect(try directory.filesContaining("items") == [])
            #expect(try directory.filesContaining("CREATE TABLE") == [])
        }
        #expect(try directory.filesContaining(needle) == [])
        for (name, _) in try directory.files() {
            let mode = try FileManager.default.attributesOfItem(atPath: directory.path + "/" + name)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(name) has mode \(String(mode ?? 0, radix: 8))")
        }
    }
}

/// ``SQLCipherValue/sortsBefore(_:_:)-(SQLCipherValue,SQLCipherValue)`` sorts as SQLite's `ORDER BY` does: values of
/// every storage class (a column without affinity keeps each as bound), text with non-ASCII and prefixes, numbers
/// mixed, then two-term rows.
@Suite struct SQLCipherValueOrderTests {
    static let values: [SQLCipherValue] = [
        .null, .integer(3), .integer(-7), .real(2.5), .real(-7.5), .integer(Int64.max), .real(3.0), .text(""), .text("a"),
        .text("ab"), .text("B"), .text("é"), .text("e\u{301}"), .text("z"), .text("Ω"), .blob([]), .blob([0, 1]),
        .blob([0]), .blob([255]),
    ]

    @Test func oneTermSortsAsSQLite() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let connection = try SQLCipherConnection(path: directory.path + "/order.db", key: key)
        defer { connection.close() }
        try connection.execute("CREATE TABLE v (id INTEGER PRIMARY KEY, x)")
        let insert = try connection.prepare("INSERT INTO v (id, x) VALUES (?, ?)")
        for (id, value) in Self.values.enumerated() {
            insert.reset()
            try insert.bind(.integer(Int64(id)), at: 1)
            try insert.bind(value, at: 2)
            _ = try insert.step()
        }
        let select = try connection.prepare("SELECT id FROM v ORDER BY x, id")
        var bySQLite: [Int] = []
        while try select.step() { bySQLite.append(Int(select.integer(at: 0))) }
        let bySwift = Self.values.indices.sorted { a, b in
            SQLCipherValue.sortsBefore([Self.values[a], .integer(Int64(a))], [Self.values[b], .integer(Int64(b))])
        }
        #expect(bySwift == bySQLite)
        #expect(!SQLCipherValue.sortsBefore(.integer(3), .real(3.0)) && !SQLCipherValue.sortsBefore(.real(3.0), .integer(3)))
    }
}
