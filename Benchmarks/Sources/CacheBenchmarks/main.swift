// Cache benchmarks: ResponseCache lookups and writes against their floor — the same work written
// directly against liblmdb's C API and swift-crypto (one LMDB get + one AES-256-GCM open for a lookup;
// one AES-256-GCM seal + one LMDB put and commit for a write) — measured side by side in one run.
// With CACHE_BENCH_PROFILE set it only loops 1 KiB lookups (for `perf record`) and exits; with CACHE_SCALE
// set (e.g. `CACHE_SCALE=1000,100000`) it runs only the scale part (Scale.swift) at those Ns.
import BenchmarkKit
import CLMDBFloor
import Crypto
import Foundation
import HTTPTypes
import TechnicalCache

@inline(never)
func blackHole<T>(_ value: T) { withExtendedLifetime(value) {} }

func check(_ code: Int32, _ what: String) {
    if code != 0 { fatalError("\(what) failed: \(String(cString: mdb_strerror(code)))") }
}

/// The floor: an LMDB environment driven through the C API, values sealed with swift-crypto.
final class Floor {
    var env: OpaquePointer?
    var dbi: MDB_dbi = 0
    let key = SymmetricKey(size: .bits256)
    let lmdbKey = [UInt8](repeating: 0xA5, count: 32)

    init(path: String, mapSize: Int) {
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        check(mdb_env_create(&env), "mdb_env_create")
        check(mdb_env_set_mapsize(env, mapSize), "mdb_env_set_mapsize")
        check(mdb_env_set_maxdbs(env, 4), "mdb_env_set_maxdbs")
        check(mdb_env_open(env, path, UInt32(MDB_NOTLS | MDB_NOSYNC), 0o600), "mdb_env_open")
        var txn: OpaquePointer?
        check(mdb_txn_begin(env, nil, 0, &txn), "mdb_txn_begin")
        check(mdb_dbi_open(txn, "entries", UInt32(MDB_CREATE), &dbi), "mdb_dbi_open")
        check(mdb_txn_commit(txn), "mdb_txn_commit")
    }

    deinit { mdb_env_close(env) }

    /// Seals `plaintext` (the LMDB key as authenticated data) and puts it in one committed transaction.
    func write(_ plaintext: Data) {
        let sealed = try! AES.GCM.seal(plaintext, using: key, authenticating: lmdbKey).combined!
        var txn: OpaquePointer?
        check(mdb_txn_begin(env, nil, 0, &txn), "mdb_txn_begin")
        lmdbKey.withUnsafeBytes { keyBuffer in
            sealed.withUnsafeBytes { valueBuffer in
                var k = MDB_val(mv_size: keyBuffer.count, mv_data: UnsafeMutableRawPointer(mutating: keyBuffer.baseAddress))
                var v = MDB_val(mv_size: valueBuffer.count, mv_data: UnsafeMutableRawPointer(mutating: valueBuffer.baseAddress))
                check(mdb_put(txn, dbi, &k, &v, 0), "mdb_put")
            }
        }
        check(mdb_txn_commit(txn), "mdb_txn_commit")
    }

    /// Gets the sealed value in a read transaction and opens it.
    func read() -> Data {
        var txn: OpaquePointer?
        check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
        defer { mdb_txn_abort(txn) }
        var value = MDB_val()
        lmdbKey.withUnsafeBytes { keyBuffer in
            var k = MDB_val(mv_size: keyBuffer.count, mv_data: UnsafeMutableRawPointer(mutating: keyBuffer.baseAddress))
            check(mdb_get(txn, dbi, &k, &value), "mdb_get")
        }
        let sealed = UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
        let box = try! AES.GCM.SealedBox(combined: sealed)
        return try! AES.GCM.open(box, using: key, authenticating: lmdbKey)
    }
}

let root = NSTemporaryDirectory() + "cache-benchmarks-\(getpid())"
try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: root) }

let sizes: [(name: String, bytes: Int, iterations: Int)] = [
    ("1 KiB", 1 << 10, 20_000),
    ("64 KiB", 64 << 10, 4_000),
    ("1 MiB", 1 << 20, 400),
]
let headers: HTTPFields = [
    .contentType: "application/json;odata.metadata=minimal",
    .eTag: "W/\"3f2a9c\"",
    HTTPField.Name("OData-Version")!: "4.0",
]

if ProcessInfo.processInfo.environment["CACHE_BENCH_PROFILE"] != nil {
    let cache = try ResponseCache(directory: root + "/profile", configuration: CacheConfiguration(keyDerivation: .pbkdf2(rounds: 1000), durability: .periodic(interval: .seconds(3600))))
    try cache.open(encryption: .key("k"))
    try await cache.store(CacheEntry(status: 200, headers: headers, payload: Data(repeating: 1, count: 1024)), for: "https://h/x?$top=50&$skip=0")
    for _ in 0..<1_000_000 { blackHole(try cache.entry(for: "https://h/x?$top=50&$skip=0")) }
    exit(0)
}
let scaleCounts = ProcessInfo.processInfo.environment["CACHE_SCALE"].map { $0.split(separator: ",").compactMap { Int($0) } }
if let scaleCounts {
    print("# Cache benchmarks: the scale part")
    print("\nMachine: \(machineDescription())")
    var results: [ScaleResult] = []
    for n in scaleCounts {
        let operations = ProcessInfo.processInfo.environment["CACHE_SCALE_OPS"].flatMap { Int($0) } ?? min(max(n, 50_000), 300_000)
        results.append(try await runScale(n: n, operations: operations, root: root, headers: headers))
    }
    printScale(results)
    try? FileManager.default.removeItem(atPath: root)  // `exit` skips the top-level `defer`
    exit(0)
}
print("# Cache benchmarks")
print("\nMachine: \(machineDescription())")
print("Durability for all rows: no fsync per commit (MDB_NOSYNC in the floor, `.periodic` in the cache),")
print("so both sides measure CPU and memory work, not the disk. The fsync row is measured separately.")

var lookupRows: [[String]] = []
var writeRows: [[String]] = []
for size in sizes {
    var generator = SystemRandomNumberGenerator()
    let payload = Data((0..<size.bytes).map { _ in UInt8.random(in: 0...255, using: &generator) })

    let floor = Floor(path: root + "/floor-\(size.bytes)", mapSize: 1 << 30)
    floor.write(payload)
    let cache = try ResponseCache(directory: root + "/cache-\(size.bytes)", configuration: CacheConfiguration(
        sizeLimit: 512 << 20, keyDerivation: .standard, durability: .periodic(interval: .seconds(3600))))
    try cache.open(encryption: .key("benchmark key"))
    let url = "https://services.example/sap/opu/odata4/svc/Products?$top=50&$skip=0&$select=ID,Name,Price"
    let entry = CacheEntry(status: 200, headers: headers, payload: payload)
    try await cache.store(entry, for: url)
    guard floor.read() == payload, try cache.entry(for: url)?.payload == payload else { fatalError("round trip failed") }

    let floorLookup = measure("floor get+open", iterations: size.iterations) { blackHole(floor.read()) }
    let cacheLookup = try measure("ResponseCache.entry", iterations: size.iterations) { blackHole(try cache.entry(for: url)) }
    let floorWrite = measure("floor seal+put", iterations: size.iterations) { floor.write(payload) }
    let cacheWrite = try await measureAsync("ResponseCache.store", iterations: size.iterations) { blackHole(try await cache.store(entry, for: url)) }
    cache.close()

    func row(_ floor: Samples, _ ours: Samples) -> [String] {
        [size.name, formatDuration(floor.median), formatDuration(ours.median),
         String(format: "%.2f×", ours.median / floor.median),
         formatDuration(floor.percentile(99)), formatDuration(ours.percentile(99))]
    }
    lookupRows.append(row(floorLookup, cacheLookup))
    writeRows.append(row(floorWrite, cacheWrite))
}
let header = ["payload", "floor median", "ResponseCache median", "ratio", "floor p99", "ResponseCache p99"]
printTable(title: "Lookup: floor (mdb_get + AES-GCM open) vs ResponseCache.entry(for:)", header: header, rows: lookupRows)
printTable(title: "Write: floor (AES-GCM seal + mdb_put + commit) vs ResponseCache.store(_:for:)", header: header, rows: writeRows)

// The cost of durability: the same 1 KiB store with an fsync per commit.
do {
    let cache = try ResponseCache(directory: root + "/cache-sync", configuration: CacheConfiguration(keyDerivation: .standard, durability: .full))
    try cache.open(encryption: .key("benchmark key"))
    let entry = CacheEntry(status: 200, headers: headers, payload: Data(repeating: 7, count: 1024))
    var index = 0
    let synced = try await measureAsync("store, fsync", iterations: 500) {
        index += 1
        try await cache.store(entry, for: "https://h/\(index % 100)")
    }
    cache.close()
    let open = try measure("open (PBKDF2 600k)", warmup: 1, iterations: 5) {
        try cache.open(encryption: .key("benchmark key"))
        cache.close()
    }
    printTable(title: "Durability and open", header: ["operation", "median", "p99"], rows: [
        ["ResponseCache.store 1 KiB, `.full` (fsync per commit)", formatDuration(synced.median), formatDuration(synced.percentile(99))],
        ["ResponseCache open + close (PBKDF2-HMAC-SHA256, 600,000 rounds)", formatDuration(open.median), formatDuration(open.percentile(99))],
    ])
}

// The cache at scale (Scale.swift): 1k, 100k and 1M keys; `CACHE_SCALE` runs it alone at other Ns.
var scaleResults: [ScaleResult] = []
for n in [1_000, 100_000, 1_000_000] {
    scaleResults.append(try await runScale(n: n, operations: min(max(n, 50_000), 300_000), root: root, headers: headers))
}
printScale(scaleResults)
