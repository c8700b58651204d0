import Foundation
import SQLCipher
import Testing

/// `SQLCipherError` follows the package's error idiom: `catch SQLCipherError.kind` matches its kind only (a
/// primary code matches its extended codes), the SQLite result code stays readable, and the description names
/// the kind and never the key.
@Suite struct SQLCipherErrorIdiomTests {
    @Test func aWrongKeyIsCaughtByItsKindAndNamesNoKey() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sqlcipher-idiom-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/keyed.db"
        let key = [UInt8](repeating: 0xAB, count: 32)
        let connection = try SQLCipherConnection(path: path, key: key)
        try connection.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        connection.close()
        let wrongKey = [UInt8](repeating: 0xCD, count: 32)
        var matched = ""
        do {
            _ = try SQLCipherConnection(path: path, key: wrongKey)
        } catch SQLCipherError.busy {
            matched = "busy"
        } catch SQLCipherError.notADatabase {
            matched = "notADatabase"
        } catch {
            matched = "\(error)"
        }
        #expect(matched == "notADatabase")
        let error = #expect(throws: SQLCipherError.self) { try SQLCipherConnection(path: path, key: wrongKey) }
        #expect(error?.resultCode == 26)  // SQLITE_NOTADB, readable as data
        let text = error.map { "\($0)" } ?? ""
        #expect(text.hasPrefix("SQLCipherError.notADatabase (code 26): "), "\(text)")
        #expect(!text.lowercased().contains("cdcdcd") && !text.lowercased().contains("ababab"), "\(text)")
    }

    @Test func aPrimaryKindMatchesItsExtendedCodes() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sqlcipher-idiom-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let connection = try SQLCipherConnection(path: directory + "/plain.db", key: nil)
        defer { connection.close() }
        try connection.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        try connection.execute("INSERT INTO t VALUES (1)")
        var matched = ""
        do {
            try connection.execute("INSERT INTO t VALUES (1)")
        } catch SQLCipherError.busy {
            matched = "busy"
        } catch SQLCipherError.constraint {
            matched = "constraint"
        } catch {
            matched = "\(error)"
        }
        #expect(matched == "constraint")
    }
}
