import Foundation
import LMDB
import ODataCore

/// A store in the LMDB format (format 1, before SQLCipher), read once and only to migrate it.
///
/// That format kept named LMDB databases in `data.mdb`: `meta` (the key-check record in plaintext, the
/// configuration and counters sealed), `entities` (keyed by keyed hashes of entity set and canonical key),
/// `queue` and `errors` (keyed by the big-endian request ID). Every value but the key-check record is
/// sealed with AES-256-GCM under ``StoreCipher``, its LMDB key as authenticated data. Nothing here writes.
struct LegacyLMDBStore {
    /// Everything a format-1 store holds.
    struct Contents {
        var keyCheck: [UInt8]
        var secret: Data?
        var configuration: StoreConfiguration?
        var counters: StoreCounters?
        var records: [EntityRecord]
        var queue: [QueuedRequest]
        var errors: [(id: Int64, entry: JSONObject)]
    }

    static func dataFile(in directory: String) -> String { directory + "/data.mdb" }

    /// Whether `directory` holds a format-1 store.
    static func exists(in directory: String) -> Bool {
        FileManager.default.fileExists(atPath: dataFile(in: directory))
    }

    /// Reads the whole store in one read transaction.
    ///
    /// - Throws: `OfflineODataError` — `.wrongKey`, `.encryptionMismatch` as an open of that format would;
    ///   `.storage` for LMDB failures and records that fail authentication or do not decode.
    static func read(directory: String, parameters: OfflineODataParameters) throws -> Contents {
        let environment: LMDBEnvironment
        do {
            environment = try LMDBEnvironment(path: directory, options: .init(mapSize: 64 << 20, maxDatabases: 5, createDirectory: false))
        } catch {
            throw OfflineODataError(.storage, "cannot open the LMDB store at \(directory): \(error)")
        }
        defer { environment.close() }
        return try environment.read { txn -> Contents in
            guard let meta = try txn.openDatabase(named: "meta", create: false),
                  let stored = try txn.value(forKey: Array("keycheck".utf8), in: meta)
            else { throw OfflineODataError(.storage, "the LMDB store at \(directory) has no key-check record") }
            let secret = try StoreKeyCheck.open(stored, parameters: parameters, directory: directory)
            let cipher = try StoreCipher(secret: secret)
            let configKey = Array("config".utf8), countersKey = Array("counters".utf8)
            var contents = Contents(keyCheck: stored, secret: secret, records: [], queue: [], errors: [])
            if let sealed = try txn.value(forKey: configKey, in: meta) {
                contents.configuration = try StoreConfiguration.decode(try cipher.open(sealed, key: configKey))
            }
            if let sealed = try txn.value(forKey: countersKey, in: meta) {
                contents.counters = try StoreCounters.decode(try cipher.open(sealed, key: countersKey))
            }
            func each(_ name: String, _ body: ([UInt8], [UInt8]) throws -> Void) throws {
                guard let database = try txn.openDatabase(named: name, create: false) else { return }
                try txn.withCursor(in: database) { cursor in
                    while let (key, value) = try cursor.next() { try body(key, try cipher.open(value, key: key)) }
                }
            }
            try each("entities") { _, bytes in contents.records.append(try EntityRecord.decode(bytes)) }
            try each("queue") { _, bytes in contents.queue.append(try QueuedRequest.decode(bytes)) }
            try each("errors") { key, bytes in
                guard key.count == 8, let entry = (try? JSON.parse(bytes))?.objectValue else {
                    throw OfflineODataError(.storage, "an ErrorArchive record is malformed")
                }
                contents.errors.append((key.reduce(Int64(0)) { $0 << 8 | Int64($1) }, entry))
            }
            return contents
        }
    }
}
