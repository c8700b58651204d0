// Several processes on one cache: what a lookup and a store cost in this process when it has the
// cache alone, when a second process has it open but idle, and when a second process writes to it
// (paced: one store and ten lookups, then a 1 ms pause), measured in alternating rounds in one run.
// The second process is this executable again (SHARED_CACHE_PARTNER set), stopped by its process ID.
import BenchmarkKit
import Foundation
import HTTPTypes
import TechnicalCache
#if canImport(Glibc)
import Glibc
#endif

@inline(never)
func blackHole<T>(_ value: T) { withExtendedLifetime(value) {} }

let urls = (0..<200).map { "https://services.example/sap/opu/odata4/svc/Products(\($0))?$select=ID,Name,Price" }
let headers: HTTPFields = [
    .contentType: "application/json;odata.metadata=minimal",
    .eTag: "W/\"3f2a9c\"",
    HTTPField.Name("OData-Version")!: "4.0",
]
let payload = Data((0..<1024).map { UInt8(truncatingIfNeeded: $0 &* 31) })
let configuration = CacheConfiguration(sizeLimit: 64 << 20, keyDerivation: .pbkdf2(rounds: 1_000), durability: .periodic(interval: .seconds(1)))

func openCache(_ directory: String) throws -> ResponseCache {
    let cache = try ResponseCache(directory: directory, configuration: configuration)
    try cache.open(encryption: .key("benchmark key"))
    return cache
}

// MARK: The partner process

let environment = ProcessInfo.processInfo.environment
if let mode = environment["SHARED_CACHE_PARTNER"], let directory = environment["SHARED_CACHE_DIR"] {
    let cache = try openCache(directory)
    FileHandle.standardOutput.write(Data("READY\n".utf8))
    var generator = SystemRandomNumberGenerator()
    while true {
        if mode == "writing" {
            // One store and ten lookups, then a pause (under 1,000 stores a second).
            try await cache.store(CacheEntry(status: 200, headers: headers, payload: payload), for: urls.randomElement(using: &generator)!)
            for _ in 0..<10 { blackHole(try cache.entry(for: urls.randomElement(using: &generator)!)) }
            usleep(1_000)
        } else {
            usleep(100_000)
        }
    }
}

final class Partner {
    let process = Process()

    init(mode: String, directory: String) throws {
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.environment = environment.merging(["SHARED_CACHE_PARTNER": mode, "SHARED_CACHE_DIR": directory]) { $1 }
        process.standardOutput = output
        try process.run()
        let ready = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        guard ready.hasPrefix("READY") else { fatalError("the partner did not open the cache") }
    }

    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

// MARK: The measurements

let root = NSTemporaryDirectory() + "shared-cache-benchmarks-\(getpid())"
try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: root) }
let directory = root + "/cache"

print("# Several processes on one cache")
print("\nMachine: \(machineDescription())")
print("1 KiB entries, 200 URLs, `.periodic` durability (no fsync per commit), 5 alternating rounds of 20,000 lookups, 4,000 stores and 20,000 `counts` reads per setting.")

do {
    let cache = try openCache(directory)
    for url in urls { try await cache.store(CacheEntry(status: 200, headers: headers, payload: payload), for: url) }
    cache.close()
}

let settings = ["alone", "partner open, idle", "partner writing"]
var lookups: [String: [Double]] = [:]
var stores: [String: [Double]] = [:]
var counts: [String: [Double]] = [:]
for _ in 0..<5 {
    for setting in settings {
        let partner: Partner? = switch setting {
        case "alone": nil
        case "partner open, idle": try Partner(mode: "idle", directory: directory)
        default: try Partner(mode: "writing", directory: directory)
        }
        let cache = try openCache(directory)
        var generator = SystemRandomNumberGenerator()
        let lookup = try measure("lookup", iterations: 20_000) { blackHole(try cache.entry(for: urls.randomElement(using: &generator)!)) }
        let store = try await measureAsync("store", iterations: 4_000) {
            blackHole(try await cache.store(CacheEntry(status: 200, headers: headers, payload: payload), for: urls.randomElement(using: &generator)!))
        }
        let count = measure("counts", iterations: 20_000) { blackHole(cache.counts.currentBytes) }
        cache.close()
        partner?.stop()
        lookups[setting, default: []] += lookup.nanoseconds
        stores[setting, default: []] += store.nanoseconds
        counts[setting, default: []] += count.nanoseconds
    }
}

var rows: [[String]] = []
for (name, table) in [("`entry(for:)` 1 KiB hit", lookups), ("`store(_:for:)` 1 KiB", stores), ("`counts.currentBytes`", counts)] {
    let alone = Samples(name: "alone", nanoseconds: table["alone"] ?? [])
    var row = [name]
    for setting in settings {
        let samples = Samples(name: setting, nanoseconds: table[setting] ?? [])
        row.append("\(formatDuration(samples.median)) (p99 \(formatDuration(samples.percentile(99))))")
    }
    let writing = Samples(name: "writing", nanoseconds: table["partner writing"] ?? [])
    let idle = Samples(name: "idle", nanoseconds: table["partner open, idle"] ?? [])
    row.append(String(format: "%.2f× / %.2f×", idle.median / alone.median, writing.median / alone.median))
    rows.append(row)
}
printTable(title: "This process's cost per operation (median, p99), by what the other process does",
           header: ["operation"] + settings + ["idle / writing vs alone"], rows: rows)
