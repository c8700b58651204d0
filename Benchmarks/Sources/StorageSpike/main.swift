// StorageSpike (issue 16): which storage lets the offline store answer from disk at a million entities
// without anything readable on disk? Two candidates and a plaintext reference, measured on the same rows:
//
//   sqlcipher  Debian's SQLCipher 3.4.1 (SQLite 3.15.2 with page-level AES-256-CBC + HMAC-SHA1), a raw
//              256-bit key (no SQLCipher KDF: the store's own KeyEnvelope derives the key), one table per
//              entity set with a column per property plus the entity's JSON, real SQL indexes.
//   lmdb       LMDB as today (a keyed hash of set + key → the entity's JSON sealed with AES-256-GCM), plus
//              secondary indexes as sealed, sorted chunks of (value, key) pairs with a directory that is
//              itself sealed and kept in memory after open (an encrypted two-level B-tree on LMDB).
//   sqlite     the same SQL as `sqlcipher` without a key: the same engine in plaintext (the floor).
//
// Each candidate runs in a child process of its own (clean peak RSS); the parent prints them side by side.
// SQLCipher exports the sqlite3_* symbols, so this program never links GRDB.
//
//   cd Benchmarks && swift build -c release --product StorageSpike && SPIKE_N=1000000 .build/release/StorageSpike
import BenchmarkKit
import CSQLCipherSpike
import Crypto
import Foundation
import LMDB
import ODataCore
import ODataQuery
import TechnicalCache

let environment = ProcessInfo.processInfo.environment
let count = Int(environment["SPIKE_N"] ?? "") ?? 100_000
let pageSize = 1_000
let rangeLow = "2024-03-01", rangeHigh = "2024-03-04"  // 3 of 336 creation days: ~0.9 % of the rows
let filterText = "Price gt 50 and Quantity lt 500 and Region eq 'North' and Discontinued eq false and startswith(Name,'Item 1')"
let whereText = "price > 50 AND quantity < 500 AND region = 'North' AND discontinued = 0 AND name LIKE 'Item 1%'"
let rawKey = [UInt8](repeating: 0x5A, count: 32)
/// SQLCipher's page size (`SPIKE_PAGE`, default 4096) and whether rows keep the entity's JSON beside its
/// columns (`SPIKE_SQL_BODY=0`: columns only, the JSON written from them for every answer).
let sqlPageSize = Int(environment["SPIKE_PAGE"] ?? "") ?? 4096
let sqlKeepsBody = environment["SPIKE_SQL_BODY"] != "0"
/// SQLite's page cache in MiB (`SPIKE_CACHE_MIB`, default 32): decrypted pages SQLCipher does not decrypt again.
let sqlCacheMiB = Int(environment["SPIKE_CACHE_MIB"] ?? "") ?? 32
let columns = "id, name, category, price, quantity, discontinued, region, created"

/// What every candidate does, in the same order.
protocol Candidate {
    /// Stores one downloaded page in one transaction.
    mutating func storePage(_ items: ArraySlice<Item>, bodies: ArraySlice<[UInt8]>) throws
    /// Work after the last page (the LMDB candidate builds its sealed indexes here).
    mutating func finishDownload() throws
    mutating func close()
    /// Opens the existing store (everything a first answer needs).
    mutating func open() throws
    func body(forKey id: Int) throws -> [UInt8]?
    /// Bodies of the rows with rangeLow ≤ created < rangeHigh (indexed).
    func createdInRange() throws -> [[UInt8]]
    /// Bodies matching the 5-clause filter (a scan).
    func fiveClauseFilter() throws -> [[UInt8]]
    /// Bodies of the 20 latest rows by created (indexed), ties by key.
    func latest20() throws -> [[UInt8]]
    /// Count of category eq 'C3' (indexed), without reading entities.
    func countC3() throws -> Int
    /// Changes one row's created value and its index entries in one transaction.
    mutating func updateCreated(id: Int, to created: String) throws
    var fileBytes: Int { get }
}

// MARK: - SQL (SQLCipher with and without a key)

struct SQLError: Error, CustomStringConvertible { let description: String }

final class SQLCandidate: Candidate {
    let path: String
    let encrypted: Bool
    var db: OpaquePointer?
    init(path: String, encrypted: Bool) throws {
        self.path = path
        self.encrypted = encrypted
        try open()
        try exec("""
            CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, category TEXT, price REAL, quantity INTEGER,
                                discontinued INTEGER, region TEXT, created TEXT, body BLOB);
            CREATE INDEX items_category ON items(category);
            CREATE INDEX items_created ON items(created, id);
            """)
    }
    func exec(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw SQLError(description: String(cString: sqlite3_errmsg(db))) }
    }
    func prepare(_ sql: String) throws -> OpaquePointer {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw SQLError(description: String(cString: sqlite3_errmsg(db)))
        }
        return statement
    }
    func open() throws {
        guard sqlite3_open(path, &db) == SQLITE_OK else { throw SQLError(description: "open") }
        if encrypted {
            let hex = rawKey.map { String(format: "%02x", $0) }.joined()
            try exec("PRAGMA key = \"x'\(hex)'\"; PRAGMA cipher_page_size = \(sqlPageSize);")
        } else {
            try exec("PRAGMA page_size = \(sqlPageSize);")
        }
        try exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -\(sqlCacheMiB * 1024);")
    }
    func close() { sqlite3_close(db); db = nil }
    func storePage(_ items: ArraySlice<Item>, bodies: ArraySlice<[UInt8]>) throws {
        try exec("BEGIN")
        let insert = try prepare("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
        defer { sqlite3_finalize(insert) }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (item, body) in zip(items, bodies) {
            sqlite3_reset(insert)
            sqlite3_bind_int64(insert, 1, Int64(item.id))
            sqlite3_bind_text(insert, 2, item.name, -1, transient)
            sqlite3_bind_text(insert, 3, item.category, -1, transient)
            sqlite3_bind_double(insert, 4, item.price)
            sqlite3_bind_int64(insert, 5, Int64(item.quantity))
            sqlite3_bind_int64(insert, 6, item.discontinued ? 1 : 0)
            sqlite3_bind_text(insert, 7, item.region, -1, transient)
            sqlite3_bind_text(insert, 8, item.created, -1, transient)
            if sqlKeepsBody {
                _ = body.withUnsafeBytes { sqlite3_bind_blob(insert, 9, $0.baseAddress, Int32($0.count), transient) }
            } else {
                sqlite3_bind_null(insert, 9)
            }
            guard sqlite3_step(insert) == SQLITE_DONE else { throw SQLError(description: String(cString: sqlite3_errmsg(db))) }
        }
        try exec("COMMIT")
    }
    func finishDownload() throws { try exec("PRAGMA wal_checkpoint(TRUNCATE)") }
    private func bodies(_ statement: OpaquePointer) -> [[UInt8]] {
        var result: [[UInt8]] = []
        if !sqlKeepsBody {
            func text(_ column: Int32) -> String { String(cString: sqlite3_column_text(statement, column)) }
            while sqlite3_step(statement) == SQLITE_ROW {
                result.append(JSON.serialize(.object(JSONObject([
                    ("ItemID", .int(sqlite3_column_int64(statement, 0))), ("Name", .string(text(1))), ("Category", .string(text(2))),
                    ("Price", .double(sqlite3_column_double(statement, 3))), ("Quantity", .int(sqlite3_column_int64(statement, 4))),
                    ("Discontinued", .bool(sqlite3_column_int64(statement, 5) != 0)), ("Region", .string(text(6))), ("Created", .string(text(7))),
                ]))))
            }
            return result
        }
        while sqlite3_step(statement) == SQLITE_ROW {
            let length = Int(sqlite3_column_bytes(statement, 0))
            let pointer = sqlite3_column_blob(statement, 0)
            result.append(pointer.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: length)) } ?? [])
        }
        return result
    }
    func body(forKey id: Int) throws -> [UInt8]? {
        let statement = try prepare("SELECT \(sqlKeepsBody ? "body" : columns) FROM items WHERE id = ?")
        defer { sqlite3_finalize(statement) }
        sqlite3_bind_int64(statement, 1, Int64(id))
        return bodies(statement).first
    }
    func createdInRange() throws -> [[UInt8]] {
        let statement = try prepare("SELECT \(sqlKeepsBody ? "body" : columns) FROM items WHERE created >= '\(rangeLow)' AND created < '\(rangeHigh)' ORDER BY created, id")
        defer { sqlite3_finalize(statement) }
        return bodies(statement)
    }
    func fiveClauseFilter() throws -> [[UInt8]] {
        let statement = try prepare("SELECT \(sqlKeepsBody ? "body" : columns) FROM items WHERE \(whereText) ORDER BY id")
        defer { sqlite3_finalize(statement) }
        return bodies(statement)
    }
    func latest20() throws -> [[UInt8]] {
        let statement = try prepare("SELECT \(sqlKeepsBody ? "body" : columns) FROM items ORDER BY created DESC, id DESC LIMIT 20")
        defer { sqlite3_finalize(statement) }
        return bodies(statement)
    }
    func countC3() throws -> Int {
        let statement = try prepare("SELECT COUNT(*) FROM items WHERE category = 'C3'")
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { return -1 }
        return Int(sqlite3_column_int64(statement, 0))
    }
    func updateCreated(id: Int, to created: String) throws {
        try exec("UPDATE items SET created = '\(created)' WHERE id = \(id)")
    }
    var fileBytes: Int {
        ["", "-wal"].reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: path + $1)[.size] as? Int) ?? 0) }
    }
}

// MARK: - LMDB with sealed records and sealed index chunks

/// One secondary index: sorted (value, key) pairs cut into sealed chunks of at most `chunkCapacity`; the
/// directory (each chunk's first and last pair and its count) is sealed too and read once at open.
struct SealedIndex {
    struct Pair: Comparable {
        var value: String
        var id: Int
        static func < (a: Pair, b: Pair) -> Bool { (a.value, a.id) < (b.value, b.id) }
    }
    struct ChunkInfo { var first: Pair; var last: Pair; var count: Int; var number: UInt32 }
    static let chunkCapacity = 256
    let number: UInt8
    var directory: [ChunkInfo] = []

    static func encode(_ pairs: [Pair]) -> [UInt8] {
        var bytes: [UInt8] = []
        for pair in pairs {
            let value = Array(pair.value.utf8)
            bytes.append(UInt8(value.count))
            bytes += value
            withUnsafeBytes(of: UInt64(pair.id).bigEndian) { bytes += $0 }
        }
        return bytes
    }
    /// Reads the pair `encode` wrote at `index` and moves past it.
    static func readPair(_ bytes: [UInt8], _ index: inout Int) -> Pair {
        let length = Int(bytes[index])
        let value = String(decoding: bytes[(index + 1)..<(index + 1 + length)], as: UTF8.self)
        index += 1 + length
        var id: UInt64 = 0
        for byte in bytes[index..<(index + 8)] { id = id << 8 | UInt64(byte) }
        index += 8
        return Pair(value: value, id: Int(id))
    }
    static func decode(_ bytes: [UInt8]) -> [Pair] {
        var pairs: [Pair] = []
        var index = 0
        while index < bytes.count { pairs.append(readPair(bytes, &index)) }
        return pairs
    }
    func chunkKey(_ chunk: UInt32) -> [UInt8] {
        var key = [number]
        withUnsafeBytes(of: chunk.bigEndian) { key += $0 }
        return key
    }
    var directoryKey: [UInt8] { [number, 0xFF, 0xFF, 0xFF, 0xFF] }

    func encodedDirectory() -> [UInt8] {
        var bytes: [UInt8] = []
        for info in directory {
            bytes += Self.encode([info.first, info.last])
            withUnsafeBytes(of: UInt32(info.count).bigEndian) { bytes += $0 }
            withUnsafeBytes(of: info.number.bigEndian) { bytes += $0 }
        }
        return bytes
    }
    mutating func decodeDirectory(_ bytes: [UInt8]) {
        directory = []
        var index = 0
        func uint32() -> UInt32 {
            var value: UInt32 = 0
            for byte in bytes[index..<(index + 4)] { value = value << 8 | UInt32(byte) }
            index += 4
            return value
        }
        while index < bytes.count {
            let first = Self.readPair(bytes, &index), last = Self.readPair(bytes, &index)
            let count = Int(uint32()), number = uint32()
            directory.append(ChunkInfo(first: first, last: last, count: count, number: number))
        }
    }
    /// The chunks that may hold pairs with lower ≤ value < upper.
    func chunks(from lower: String, below upper: String) -> ArraySlice<ChunkInfo> {
        var low = 0, high = directory.count
        while low < high {
            let middle = (low + high) / 2
            if directory[middle].last.value < lower { low = middle + 1 } else { high = middle }
        }
        var end = low
        while end < directory.count, directory[end].first.value < upper { end += 1 }
        return directory[low..<end]
    }
}

final class LMDBCandidate: Candidate {
    let path: String
    var environment: LMDBEnvironment?
    var entities: LMDBDatabase!
    var indexes: LMDBDatabase!
    let sealer: Sealer
    let hashKey: SymmetricKey
    var created = SealedIndex(number: 1)
    var category = SealedIndex(number: 2)
    var pending: [(created: SealedIndex.Pair, category: SealedIndex.Pair)] = []

    init(path: String) throws {
        self.path = path
        sealer = Sealer(key: try SealingKey(bytes: rawKey))
        hashKey = SymmetricKey(data: rawKey.reversed())
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try open()
    }
    func entityKey(_ id: Int) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array("Items(\(id))".utf8), using: hashKey).prefix(24))
    }
    func open() throws {
        let environment = try LMDBEnvironment(path: path, options: .init(mapSize: 1 << 30, maxDatabases: 4))
        self.environment = environment
        (entities, indexes) = try environment.write { txn in
            (try txn.openDatabase(named: "entities")!, try txn.openDatabase(named: "indexes")!)
        }
        try environment.read { txn in
            for index in [\LMDBCandidate.created, \LMDBCandidate.category] {
                let key = self[keyPath: index].directoryKey
                if let sealed = try txn.value(forKey: key, in: indexes) {
                    self[keyPath: index].decodeDirectory(Array(try sealer.open(sealed, authenticating: key)))
                }
            }
        }
    }
    func close() { environment?.close(); environment = nil }
    func storePage(_ items: ArraySlice<Item>, bodies: ArraySlice<[UInt8]>) throws {
        try environment!.write { txn in
            for (item, body) in zip(items, bodies) {
                let key = entityKey(item.id)
                try txn.setValue(try sealer.seal(body, authenticating: key), forKey: key, in: entities)
                pending.append((SealedIndex.Pair(value: item.created, id: item.id), SealedIndex.Pair(value: item.category, id: item.id)))
            }
        }
    }
    /// Bulk-builds both indexes from the downloaded pairs (a streaming design would insert per page).
    func finishDownload() throws {
        try environment!.write { txn in
            for (index, pairs) in [(\LMDBCandidate.created, pending.map(\.created).sorted()), (\LMDBCandidate.category, pending.map(\.category).sorted())] {
                var number: UInt32 = 0
                var directory: [SealedIndex.ChunkInfo] = []
                for start in stride(from: 0, to: pairs.count, by: SealedIndex.chunkCapacity * 3 / 4) {
                    let chunk = Array(pairs[start..<min(start + SealedIndex.chunkCapacity * 3 / 4, pairs.count)])
                    let key = self[keyPath: index].chunkKey(number)
                    try txn.setValue(try sealer.seal(SealedIndex.encode(chunk), authenticating: key), forKey: key, in: indexes)
                    directory.append(.init(first: chunk.first!, last: chunk.last!, count: chunk.count, number: number))
                    number += 1
                }
                self[keyPath: index].directory = directory
                let key = self[keyPath: index].directoryKey
                try txn.setValue(try sealer.seal(self[keyPath: index].encodedDirectory(), authenticating: key), forKey: key, in: indexes)
            }
        }
        pending = []
    }
    func read(_ txn: LMDBTransaction, _ id: Int) throws -> [UInt8]? {
        let key = entityKey(id)
        return try txn.withValue(forKey: key, in: entities) { buffer in
            guard let buffer else { return nil }
            return Array(try sealer.open(buffer, authenticating: key))
        }
    }
    func body(forKey id: Int) throws -> [UInt8]? { try environment!.read { txn in try read(txn, id) } }
    func pairs(_ txn: LMDBTransaction, _ index: SealedIndex, _ info: SealedIndex.ChunkInfo) throws -> [SealedIndex.Pair] {
        let key = index.chunkKey(info.number)
        guard let sealed = try txn.value(forKey: key, in: indexes) else { return [] }
        return SealedIndex.decode(Array(try sealer.open(sealed, authenticating: key)))
    }
    func createdInRange() throws -> [[UInt8]] {
        try environment!.read { txn in
            var result: [[UInt8]] = []
            for info in created.chunks(from: rangeLow, below: rangeHigh) {
                for pair in try pairs(txn, created, info) where pair.value >= rangeLow && pair.value < rangeHigh {
                    if let body = try read(txn, pair.id) { result.append(body) }
                }
            }
            return result
        }
    }
    func fiveClauseFilter() throws -> [[UInt8]] {
        let filter = try CompiledFilter(parsing: filterText)
        return try environment!.read { txn in
            var matches: [(Int, [UInt8])] = []
            try txn.withCursor(in: entities) { cursor in
                var row = try cursor.first()
                while let (key, sealed) = row {
                    let body = Array(try sealer.open(sealed, authenticating: key))
                    if let object = try JSON.parse(body).objectValue, filter.matches(object), case .int(let id)? = object["ItemID"] {
                        matches.append((Int(id), body))
                    }
                    row = try cursor.next()
                }
            }
            return matches.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }
    func latest20() throws -> [[UInt8]] {
        try environment!.read { txn in
            var ids: [Int] = []
            for info in created.directory.reversed() where ids.count < 20 {
                ids += try pairs(txn, created, info).reversed().prefix(20 - ids.count).map(\.id)
            }
            return try ids.compactMap { try read(txn, $0) }
        }
    }
    func countC3() throws -> Int {
        try environment!.read { txn in
            var total = 0
            for info in category.chunks(from: "C3", below: "C3\u{0}") {
                if info.first.value == "C3" && info.last.value == "C3" { total += info.count; continue }
                total += try pairs(txn, category, info).filter { $0.value == "C3" }.count
            }
            return total
        }
    }
    /// Moves one pair from its chunk to the chunk its new value belongs in: two chunks opened, changed and
    /// sealed again, the directory sealed again (a real design would split full chunks and keep the
    /// directory in more than one value).
    func updateCreated(id: Int, to value: String) throws {
        guard let old = try environment!.read({ txn -> SealedIndex.Pair? in
            guard let body = try read(txn, id), case .string(let createdValue)? = try JSON.parse(body).objectValue?["Created"] else { return nil }
            return SealedIndex.Pair(value: createdValue, id: id)
        }) else { throw SQLError(description: "no row \(id)") }
        let new = SealedIndex.Pair(value: value, id: id)
        try environment!.write { txn in
            let from = created.directory.firstIndex { $0.last >= old }!
            let to = created.directory.firstIndex { $0.last >= new } ?? created.directory.count - 1
            var source = try pairs(txn, created, created.directory[from])
            source.removeAll { $0 == old }
            var target = from == to ? source : try pairs(txn, created, created.directory[to])
            target.append(new)
            target.sort()
            if from == to { source = target }
            for (position, chunk) in [(from, source), (to, target)] {
                let key = created.chunkKey(created.directory[position].number)
                try txn.setValue(try sealer.seal(SealedIndex.encode(chunk), authenticating: key), forKey: key, in: indexes)
                created.directory[position].count = chunk.count
                created.directory[position].first = chunk.first!
                created.directory[position].last = chunk.last!
            }
            let key = created.directoryKey
            try txn.setValue(try sealer.seal(created.encodedDirectory(), authenticating: key), forKey: key, in: indexes)
        }
    }
    var fileBytes: Int { (try? FileManager.default.attributesOfItem(atPath: path + "/data.mdb")[.size] as? Int) ?? 0 }
}

// MARK: - One candidate (child process)

func peakRSS() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_maxrss * 1024
}

func runCandidate(_ name: String) throws {
    let work = NSTemporaryDirectory() + "storage-spike-\(name)-\(getpid())"
    try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: work) }
    var candidate: any Candidate = switch name {
    case "sqlcipher": try SQLCandidate(path: work + "/store.db", encrypted: true)
    case "sqlite": try SQLCandidate(path: work + "/store.db", encrypted: false)
    default: try LMDBCandidate(path: work + "/lmdb")
    }
    var results: [(String, Double)] = []
    func report(_ metric: String, _ value: Double) { results.append((metric, value)); print("\(metric)\t\(value)") }

    // Download: pages of 1,000 generated and serialised as the producer would, one transaction each.
    var downloadCPU = 0.0, generated = 0
    var generator = ItemGenerator()
    while generated < count {
        let items = (generated..<min(count, generated + pageSize)).map { _ in generator.next() }[...]
        let bodies = items.map { item in
            JSON.serialize(.object(JSONObject([
                ("ItemID", .int(Int64(item.id))), ("Name", .string(item.name)), ("Category", .string(item.category)),
                ("Price", .double(item.price)), ("Quantity", .int(Int64(item.quantity))), ("Discontinued", .bool(item.discontinued)),
                ("Region", .string(item.region)), ("Created", .string(item.created)),
            ])))
        }
        let cpu = processCPUNanoseconds()
        try candidate.storePage(items, bodies: bodies[...])
        downloadCPU += processCPUNanoseconds() - cpu
        generated += items.count
        if generated == count {
            let cpu = processCPUNanoseconds()
            try candidate.finishDownload()
            downloadCPU += processCPUNanoseconds() - cpu
        }
    }
    report("store CPU per entity (ns)", downloadCPU / Double(count))
    report("entities per store CPU-second", Double(count) / (downloadCPU / 1e9))
    report("file bytes", Double(candidate.fileBytes))
    report("peak RSS after download (bytes)", Double(peakRSS()))

    // Open: close and open again, then the first key lookup.
    candidate.close()
    let openStart = DispatchTime.now().uptimeNanoseconds
    try candidate.open()
    let first = try candidate.body(forKey: count / 2)
    report("open + first key lookup (ns)", Double(DispatchTime.now().uptimeNanoseconds - openStart))
    precondition(first != nil)
    let firstRange = try measure("first range", warmup: 0, iterations: 1) { _ = try candidate.createdInRange() }

    var random = SystemRandomNumberGenerator()
    let keys = (0..<4_000).map { _ in Int.random(in: 1...count, using: &random) }
    var position = 0
    let lookup = try measure("key", warmup: 200, iterations: 3_000) {
        position = (position + 1) % keys.count
        let body = try candidate.body(forKey: keys[position])
        precondition(body != nil)
    }
    report("key lookup p50 (ns)", lookup.median)
    var rangeCount = 0
    let range = try measure("range", warmup: 2, iterations: 15) { rangeCount = try candidate.createdInRange().count }
    report("indexed range p50 (ns)", range.median)
    report("first indexed range after open (ns)", firstRange.median)
    report("indexed range rows", Double(rangeCount))
    var filterCount = 0
    let filter = try measure("filter", warmup: 1, iterations: 5) { filterCount = try candidate.fiveClauseFilter().count }
    report("5-clause scan p50 (ns)", filter.median)
    report("5-clause rows", Double(filterCount))
    let top = try measure("top", warmup: 5, iterations: 200) {
        let rows = try candidate.latest20()
        precondition(rows.count == 20)
    }
    report("orderby created desc top 20 p50 (ns)", top.median)
    var c3 = 0
    let countSamples = try measure("count", warmup: 2, iterations: 20) { c3 = try candidate.countC3() }
    report("count category eq C3 p50 (ns)", countSamples.median)
    report("count C3", Double(c3))
    var day = 0
    let update = try measure("update", warmup: 5, iterations: 100) {
        day += 1
        try candidate.updateCreated(id: keys[day], to: String(format: "2024-%02d-%02dT11:00:00Z", day % 12 + 1, day % 28 + 1))
    }
    report("indexed update, one transaction p50 (ns)", update.median)
    report("peak RSS (bytes)", Double(peakRSS()))
    candidate.close()
}

// MARK: - Parent: every candidate in its own process, side by side

if let name = environment["SPIKE_CANDIDATE"] {
    try runCandidate(name)
    exit(0)
}

let names = (environment["SPIKE_ONLY"] ?? "sqlite,sqlcipher,lmdb").split(separator: ",").map(String.init)
var table: [String: [String: Double]] = [:]
var order: [String] = []
for name in names {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    var childEnvironment = environment
    childEnvironment["SPIKE_CANDIDATE"] = name
    process.environment = childEnvironment
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { fatalError("\(name) failed:\n\(output)") }
    for line in output.split(separator: "\n") {
        let fields = line.split(separator: "\t")
        guard fields.count == 2, let value = Double(fields[1]) else { continue }
        let metric = String(fields[0])
        if !order.contains(metric) { order.append(metric) }
        table[metric, default: [:]][name] = value
    }
}

func format(_ metric: String, _ value: Double?) -> String {
    guard let value else { return "–" }
    if metric.hasSuffix("(ns)") { return formatDuration(value) }
    if metric.contains("bytes") { return String(format: "%.1f MiB", value / 1_048_576) }
    if metric.contains("per entity") { return String(format: "%.0f ns", value) }
    return String(format: "%.0f", value)
}
print("StorageSpike: \(count) Items, SQL page \(sqlPageSize) bytes, cache \(sqlCacheMiB) MiB, rows \(sqlKeepsBody ? "with" : "without") the JSON, \(machineDescription())")
printTable(title: "Storage candidates side by side (each in its own process)", header: ["metric"] + names + ["sqlcipher / sqlite", "lmdb / sqlite"], rows: order.map { metric in
    let row = table[metric] ?? [:]
    func ratio(_ name: String) -> String {
        guard let value = row[name], let floor = row["sqlite"], floor > 0, metric.hasSuffix("(ns)") || metric.contains("bytes") else { return "" }
        return String(format: "%.2f×", value / floor)
    }
    return [metric] + names.map { format(metric, row[$0]) } + [ratio("sqlcipher"), ratio("lmdb")]
})
