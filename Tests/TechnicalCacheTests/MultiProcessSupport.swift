import Foundation
import HTTPTypes
import LMDB
import Testing
@testable import TechnicalCache

/// What the processes of `MultiProcessTests` share: one passphrase, one budget, one set of URLs.
enum Shared {
    static let key = "shared-key"
    /// Small enough that the load evicts often: 60 URLs of 0.1–7 KB each hold about 230 KB.
    static let limit = 96 << 10
    static let urls = (0..<60).map { "https://h/svc/Shared(\($0))" }

    static func configuration(limit: Int = Shared.limit, durability: CacheDurability = .periodic(interval: .milliseconds(200))) -> CacheConfiguration {
        testConfiguration(sizeLimit: limit, lowWaterMark: 0.8, durability: durability)
    }

    /// A self-checking entry: the payload names its URL, its writer and sequence number and its size; the
    /// rest is derived from them, and the ETag and `X-Writer` header repeat them.
    static func entry(url: String, worker: Int, sequence: Int, size: Int, storedAt: Date = Date()) -> CacheEntry {
        let head = Data("\(url)\n\(worker)\n\(sequence)\n\(size)\n".utf8)
        return CacheEntry(
            status: 200,
            headers: [.eTag: etag(worker, sequence), HTTPField.Name("X-Writer")!: "\(worker)"],
            payload: head + patternPayload(index: worker * 1_000_003 + sequence, count: size), storedAt: storedAt)
    }

    static func etag(_ worker: Int, _ sequence: Int) -> String { "\"w\(worker)-\(sequence)\"" }

    /// The writer and sequence number of `entry` when it is exactly a representation some process stored
    /// for `url` (payload, ETag and writer header all agree); `nil` for anything else.
    static func check(_ entry: CacheEntry, url: String) -> (worker: Int, sequence: Int)? {
        let payload = entry.payload
        var fields: [String] = []
        var index = payload.startIndex
        while fields.count < 4 {
            guard let newline = payload[index...].firstIndex(of: 0x0A) else { return nil }
            fields.append(String(decoding: payload[index..<newline], as: UTF8.self))
            index = newline + 1
        }
        guard fields[0] == url, let worker = Int(fields[1]), let sequence = Int(fields[2]), let size = Int(fields[3]),
              payload.endIndex - index == size,
              Data(payload[index...]) == patternPayload(index: worker * 1_000_003 + sequence, count: size),
              entry.status == 200, entry.etag == etag(worker, sequence), entry.headerValue(named: "X-Writer") == "\(worker)"
        else { return nil }
        return (worker, sequence)
    }
}

// MARK: The load one process runs

/// Runs a random mix of lookups, stores, 304 refreshes and removals on the shared cache and counts what
/// it saw: `wrong` (an answer that is not exactly a representation stored for its URL), `errors`,
/// `overBudget` (the byte total above the limit), with `operations`, `hits`, `stores`, `refreshes`,
/// `removals`, `evictions`, `integrityFailures`.
///
/// - Parameters:
///   - mix: `"mixed"`, or `"write"` for stores and removals only.
///   - limit: The budget (``Shared/limit`` by default: the load evicts often).
///   - stop: Asked before each operation; the loop ends when it returns true.
///   - progress: Called after every 50 operations with their count.
func runSharedLoad(
    directory: String, worker: Int, seed: UInt64, operations: Int, mix: String = "mixed", limit: Int = Shared.limit,
    durability: CacheDurability = .periodic(interval: .milliseconds(200)),
    stop: () -> Bool = { false }, progress: (Int) -> Void = { _ in }
) async -> [String: Int] {
    var counts: [String: Int] = ["wrong": 0, "errors": 0, "overBudget": 0]
    func bump(_ name: String, _ amount: Int = 1) { counts[name, default: 0] += amount }
    var random = SeededGenerator(state: seed)
    let cache: ResponseCache
    do {
        cache = try ResponseCache(directory: directory, configuration: Shared.configuration(limit: limit, durability: durability))
        try cache.open(encryption: .key(Shared.key))
    } catch {
        report("ERROR open: \(error)")
        counts["errors"] = 1
        return counts
    }
    defer { cache.close() }
    var sequence = 0
    // `break`, not `where`: a `where` would still ask `stop` (a file check) for every remaining operation.
    for operation in 0..<operations {
        if stop() { break }
        let url = Shared.urls[Int.random(in: 0..<Shared.urls.count, using: &random)]
        let roll = mix == "write" ? Int.random(in: 45..<100, using: &random) : Int.random(in: 0..<100, using: &random)
        do {
            switch roll {
            case 0..<40:
                bump("lookups")
                if let found = try cache.entry(for: url) {
                    bump("hits")
                    if Shared.check(found, url: url) == nil { bump("wrong"); report("WRONG lookup \(url)") }
                }
            case 40..<65:
                // A 304 confirms what the lookup returned.
                guard let found = try cache.entry(for: url) else { break }
                guard Shared.check(found, url: url) != nil else { bump("wrong"); report("WRONG before refresh \(url)"); break }
                let headers: HTTPFields = [.eTag: found.etag ?? "", HTTPField.Name("X-Checked")!: "\(worker)-\(operation)"]
                if let refreshed = try await cache.refresh(for: url, with304Headers: headers, revalidating: found) {
                    bump("refreshes")
                    if Shared.check(refreshed, url: url) == nil { bump("wrong"); report("WRONG refresh \(url)") }
                }
            case 65..<92:
                sequence += 1
                let size = Int.random(in: 100...7000, using: &random)
                if try await cache.store(Shared.entry(url: url, worker: worker, sequence: sequence, size: size), for: url) { bump("stores") }
                // Read after write: this one, one another process stored since, or nothing (evicted, removed).
                if let found = try cache.entry(for: url), Shared.check(found, url: url) == nil { bump("wrong"); report("WRONG after store \(url)") }
            default:
                if try await cache.removeEntry(for: url) { bump("removals") }
            }
        } catch {
            bump("errors")
            report("ERROR \(error)")
        }
        if cache.counts.currentBytes > limit { bump("overBudget") }
        bump("operations")
        if (operation + 1) % 50 == 0 { progress(operation + 1) }
    }
    let statistics = cache.statistics
    counts["evictions"] = statistics.evictions
    counts["integrityFailures"] = statistics.integrityFailures
    counts["superseded"] = statistics.supersededWrites
    return counts
}

/// `DONE name=value …` → the counts.
func parseCounts(_ line: String) -> [String: Int] {
    var counts: [String: Int] = [:]
    for field in line.split(separator: " ").dropFirst() {
        let parts = field.split(separator: "=")
        if parts.count == 2, let value = Int(parts[1]) { counts[String(parts[0])] = value }
    }
    return counts
}

func formatCounts(_ counts: [String: Int]) -> String {
    "DONE " + counts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
}

// MARK: The scripted process

/// A scripted child's state: its cache, once opened.
final class ScriptState {
    let directory: String
    var cache: ResponseCache?

    init(directory: String) {
        self.directory = directory
    }

    /// Runs one command and returns its answer line:
    /// `open [limit]`, `open-default` (the default key store), `store URL WORKER SEQUENCE SIZE`,
    /// `lookup URL` (→ `hit WORKER SEQUENCE` | `miss` | `wrong`), `remove URL`, `touches` (pending uses),
    /// `close`; a failure answers `error KIND`.
    func run(_ line: String) async -> String {
        let words = line.split(separator: " ").map(String.init)
        guard let command = words.first else { return "error empty command" }
        do {
            switch command {
            case "open", "open-default":
                let limit = words.count > 1 ? Int(words[1]) ?? Shared.limit : Shared.limit
                let cache = try ResponseCache(directory: directory, configuration: Shared.configuration(limit: limit))
                if command == "open" { try cache.open(encryption: .key(Shared.key)) } else { try cache.open() }
                self.cache = cache
                return "ok"
            case "store":
                guard words.count == 5, let worker = Int(words[2]), let sequence = Int(words[3]), let size = Int(words[4]) else { return "error usage" }
                let stored = try await openCache().store(Shared.entry(url: words[1], worker: worker, sequence: sequence, size: size), for: words[1])
                return stored ? "stored" : "dropped"
            case "lookup":
                guard words.count == 2 else { return "error usage" }
                guard let found = try openCache().entry(for: words[1]) else { return "miss" }
                guard let origin = Shared.check(found, url: words[1]) else { return "wrong" }
                return "hit \(origin.worker) \(origin.sequence)"
            case "remove":
                guard words.count == 2 else { return "error usage" }
                return try await openCache().removeEntry(for: words[1]) ? "removed" : "absent"
            case "touches":
                return "\(try openCache().pendingTouchCount)"
            case "close":
                cache?.close()
                cache = nil
                return "closed"
            default:
                return "error unknown command \(command)"
            }
        } catch let error as CacheError {
            return "error \(error.shortDescription)"
        } catch {
            return "error \(error)"
        }
    }

    private func openCache() throws -> ResponseCache {
        guard let cache else { throw CacheError.notOpen }
        return cache
    }
}

// MARK: The files, read directly

/// Checks the bookkeeping of a closed cache directly in its LMDB files: every entry has one info record
/// and one LRU record that point at each other, sizes are the stored value (whole, or as its chunked head
/// counts it) plus the fixed overhead, the byte total is their sum, and every chunk belongs to a head that counts it.
///
/// - Returns: The number of entries and the byte total.
func checkBookkeeping(_ directory: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> (entries: Int, bytes: Int) {
    let environment = try LMDBEnvironment(path: directory, options: .init(maxDatabases: 5, createDirectory: false))
    defer { environment.close() }
    var databases: [LMDBDatabase] = []
    for name in ["entries", "info", "lru", "meta", "chunks"] {
        databases.append(try #require(try environment.openDatabase(named: name, create: false), sourceLocation: sourceLocation))
    }
    return try environment.read { txn in
        func all(_ database: LMDBDatabase) throws -> [(key: [UInt8], value: [UInt8])] {
            try txn.withCursor(in: database) { cursor in
                var pairs: [(key: [UInt8], value: [UInt8])] = []
                while let pair = try cursor.next() { pairs.append(pair) }
                return pairs
            }
        }
        // A chunked value's size is the one its head records (`OpenCache+Chunks.swift`).
        let entries = Dictionary(uniqueKeysWithValues: try all(databases[0]).map { pair in
            (pair.key, pair.value.withUnsafeBytes { ChunkedHead($0)?.valueBytes } ?? pair.value.count)
        })
        let heads = try all(databases[0]).compactMap { pair in pair.value.withUnsafeBytes { ChunkedHead($0) }.map { (pair.key, $0.chunkCount) } }
        let chunks = try all(databases[4])
        #expect(chunks.count == heads.reduce(0) { $0 + $1.1 }, "\(chunks.count) chunks for heads that count \(heads.reduce(0) { $0 + $1.1 })",
                sourceLocation: sourceLocation)
        let chunkedKeys = Set(heads.map(\.0))
        #expect(chunks.allSatisfy { chunkedKeys.contains(Array($0.key.prefix(32))) }, "a chunk without its head", sourceLocation: sourceLocation)
        let info = Dictionary(uniqueKeysWithValues: try all(databases[1]).map { ($0.key, EntryInfo($0.value)) })
        let lru = try all(databases[2])
        #expect(Set(entries.keys) == Set(info.keys), "entries and info records differ", sourceLocation: sourceLocation)
        #expect(lru.count == info.count, "\(lru.count) LRU records for \(info.count) entries", sourceLocation: sourceLocation)
        for (tick, key) in lru {
            let record = info[key] ?? nil
            #expect(record?.tick == UInt64(bigEndianBytes: tick), "an LRU record points at an entry with another tick", sourceLocation: sourceLocation)
        }
        var sum = 0
        for (key, record) in info {
            let size = try #require(record, "an info record does not decode", sourceLocation: sourceLocation).size
            #expect(size == (entries[key] ?? -1) + OpenCache.perEntryOverhead, sourceLocation: sourceLocation)
            sum += size
        }
        let total = try txn.value(forKey: OpenCache.bytesKey, in: databases[3]).flatMap { UInt64(bigEndianBytes: $0) }.map(Int.init) ?? 0
        #expect(total == sum, "the byte total \(total) is not the sum of the entries \(sum)", sourceLocation: sourceLocation)
        return (entries.count, total)
    }
}
