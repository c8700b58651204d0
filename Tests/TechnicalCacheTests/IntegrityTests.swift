import Foundation
import HTTPTypes
import LMDB
import Testing
import TechnicalCache

/// A small deterministic generator (SplitMix64), so a failing random workload can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Opens the cache's LMDB files directly (the cache must be closed) to read or damage them.
private func withRawEntries<R>(_ directory: String, _ body: (LMDBEnvironment, LMDBDatabase) throws -> R) throws -> R {
    let environment = try LMDBEnvironment(path: directory, options: .init(maxDatabases: 4, createDirectory: false))
    defer { environment.close() }
    let entries = try #require(try environment.openDatabase(named: "entries", create: false))
    return try body(environment, entries)
}

private func allEntries(_ environment: LMDBEnvironment, _ entries: LMDBDatabase) throws -> [(key: [UInt8], value: [UInt8])] {
    try environment.read { txn throws in
        try txn.withCursor(in: entries) { cursor throws in
            var all: [(key: [UInt8], value: [UInt8])] = []
            while let entry = try cursor.next() { all.append(entry) }
            return all
        }
    }
}

private func filesContent(_ directory: String) throws -> [(String, Data)] {
    try FileManager.default.contentsOfDirectory(atPath: directory).map { name in
        (name, try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
    }
}

@Suite struct IntegrityTests {
    /// An unencrypted cache whose value was written by the encoder before headers were `HTTPFields` reads
    /// it; the same value with a header name that is no HTTP field name is a damaged entry: a miss, counted
    /// and removed.
    @Test func earlierValuesReadAndAnInvalidHeaderNameIsDamage() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        for (url, value) in [("https://h/earlier", EarlierLayout.combined), ("https://h/damaged", EarlierLayout.withInvalidName(EarlierLayout.combined))] {
            try cache.open(encryption: .disabled)
            try await cache.store(makeEntry(payload: "placeholder"), for: url)
            cache.close()
            try withRawEntries(dir.cachePath) { env, entries in
                let placeholder = try #require(try allEntries(env, entries).first { $0.value.contains(Array("placeholder".utf8)) })
                try env.write { txn in try txn.setValue(value, forKey: placeholder.key, in: entries) }
            }
        }
        try cache.open(encryption: .disabled)
        defer { cache.close() }
        EarlierLayout.expectMatches(try cache.entry(for: "https://h/earlier"))
        #expect(try cache.entry(for: "https://h/damaged") == nil)
        let stats = cache.statistics
        #expect(stats.integrityFailures == 1)
        #expect(stats.entryCount == 1)
    }

    @Test func aByteFlippedInTheDataFileMakesThatEntryAMiss() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        let victim = CacheEntry(status: 200, headers: [:], payload: patternPayload(index: 1, count: 3000))
        try await cache.store(victim, for: "https://h/victim")
        try await cache.store(makeEntry(payload: "bystander"), for: "https://h/bystander")
        let bystanderSize = try #require(try cache.entry(for: "https://h/bystander")).size
        cache.close()

        // Find the victim's sealed value in data.mdb and flip one byte in its middle.
        let sealed = try withRawEntries(dir.cachePath) { env, entries in
            try #require(try allEntries(env, entries).first { $0.value.count > 3000 }).value
        }
        let dataPath = dir.cachePath + "/data.mdb"
        let file = try Data(contentsOf: URL(fileURLWithPath: dataPath))
        let range = try #require(file.range(of: Data(sealed)))
        let handle = try #require(FileHandle(forUpdatingAtPath: dataPath))
        let position = range.lowerBound + sealed.count / 2
        try handle.seek(toOffset: UInt64(position))
        try handle.write(contentsOf: [file[position] ^ 0x20])
        try handle.close()

        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        #expect(try cache.entry(for: "https://h/victim") == nil)
        var stats = cache.statistics
        #expect(stats.integrityFailures == 1)
        #expect(stats.misses == 1)
        // The damaged entry was removed; the rest of the cache is untouched and usable.
        #expect(stats.entryCount == 1)
        #expect(stats.currentBytes == bystanderSize)
        #expect(try cache.entry(for: "https://h/victim") == nil)
        #expect(cache.statistics.integrityFailures == 1)
        #expect(try cache.entry(for: "https://h/bystander")?.payload == Data("bystander".utf8))
        try await cache.store(victim, for: "https://h/victim")
        #expect(try cache.entry(for: "https://h/victim")?.payload == victim.payload)
        stats = cache.statistics
        #expect(stats.entryCount == 2)
    }

    @Test func aSealedValueMovedUnderAnotherKeyFailsToOpen() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("k"))
        try await cache.store(makeEntry(payload: "for alice only"), for: "https://h/alice")
        try await cache.store(makeEntry(payload: "for bob only, longer"), for: "https://h/bob")
        cache.close()
        // Copy one sealed value over the other: the LMDB key is the authenticated data.
        try withRawEntries(dir.cachePath) { env, entries in
            let all = try allEntries(env, entries)
            try #require(all.count == 2)
            try env.write { txn in try txn.setValue(all[0].value, forKey: all[1].key, in: entries) }
        }
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        let results = [try cache.entry(for: "https://h/alice"), try cache.entry(for: "https://h/bob")]
        // One entry is intact, the other (now holding a foreign value) is a miss, never the wrong payload.
        #expect(results.compactMap { $0 }.count == 1)
        #expect(cache.statistics.integrityFailures == 1)
        if let alice = results[0] { #expect(alice.payload == Data("for alice only".utf8)) }
        if let bob = results[1] { #expect(bob.payload == Data("for bob only, longer".utf8)) }
    }

    @Test func noPlaintextURLHeaderOrPayloadIsInTheFiles() async throws {
        let url = "https://example.invalid/service/SecretEntitySet?$filter=Name%20eq%20'Marker'"
        let headerName = "X-Private-Header-Name"
        let headerValue = "header-value-marker-7f3a"
        let payloadMarker = "payload-marker-91c2"
        let entry = CacheEntry(status: 200, headers: [HTTPField.Name(headerName)!: headerValue, .eTag: "\"etag-marker\""],
                               payload: Data(String(repeating: payloadMarker + " ", count: 50).utf8))
        let markers = [url, "SecretEntitySet", headerName, headerValue, payloadMarker, "etag-marker"].map { Data($0.utf8) }

        for encrypted in [true, false] {
            let dir = TemporaryDirectory()
            defer { dir.remove() }
            let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration(durability: .full))
            try cache.open(encryption: encrypted ? .key("k") : .disabled)
            try await cache.store(entry, for: url)
            try await cache.refresh(for: url, with304Headers: [HTTPField.Name(headerName)!: headerValue])
            #expect(try cache.entry(for: url)?.payload == entry.payload)
            cache.close()
            let files = try filesContent(dir.cachePath)
            #expect(files.contains { $0.0 == "data.mdb" })
            for (name, content) in files {
                // The URL is never on disk, not even without encryption (the key is a hash).
                #expect(content.range(of: markers[0]) == nil, "URL in \(name)")
                #expect(content.range(of: markers[1]) == nil, "URL part in \(name)")
            }
            let data = try #require(files.first { $0.0 == "data.mdb" }?.1)
            if encrypted {
                for (name, content) in files {
                    for marker in markers.dropFirst(2) {
                        #expect(content.range(of: marker) == nil, "\(String(decoding: marker, as: UTF8.self)) in \(name)")
                    }
                }
            } else {
                // The control: without encryption the same search does find the payload and headers.
                #expect(data.range(of: Data(payloadMarker.utf8)) != nil)
                #expect(data.range(of: Data(headerValue.utf8)) != nil)
            }
        }
    }

    @Test func tenThousandRandomWritesKeepTheBudgetAndEvictInLRUOrder() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let limit = 256 << 10
        let configuration = testConfiguration(sizeLimit: limit, lowWaterMark: 0.8)
        let lowWater = Int(Double(limit) * 0.8)
        let cache = try ResponseCache(directory: dir.cachePath, configuration: configuration)
        try cache.open(encryption: .key("k"))
        defer { cache.close() }
        var random = SeededGenerator(state: 20_261_122)
        let urls = (0..<400).map { "https://h/svc/Set(\($0))" }
        // The model: URLs from least to most recently used, their payload seeds and stored sizes.
        var order: [String] = []
        var seeds: [String: Int] = [:]
        var sizes: [String: Int] = [:]
        var evictionsSeen = 0

        for write in 0..<10_000 {
            let url = urls[Int.random(in: 0..<urls.count, using: &random)]
            let payloadSize = Int.random(in: 0...12_000, using: &random)
            let before = cache.statistics
            try await cache.store(CacheEntry(status: 200, headers: [HTTPField.Name("W")!: "\(write)"],
                                       payload: patternPayload(index: write, count: payloadSize)), for: url)
            let after = cache.statistics
            let evicted = after.evictions - before.evictions
            let previousSize = sizes[url] ?? 0
            order.removeAll { $0 == url }
            sizes[url] = nil
            let victims = Array(order.prefix(evicted))
            order.removeFirst(min(evicted, order.count))
            for victim in victims { sizes[victim] = nil; seeds[victim] = nil }
            order.append(url)
            seeds[url] = write
            let stored = try #require(try cache.entry(for: url), "write \(write)")
            #expect(stored.payload.count == payloadSize)
            sizes[url] = stored.size

            // The budget holds after every write; an eviction goes down to the low-water mark and only
            // happens when the write would have exceeded the limit.
            #expect(after.currentBytes <= limit, "write \(write)")
            if evicted > 0 {
                evictionsSeen += evicted
                #expect(after.currentBytes <= lowWater, "write \(write)")
                #expect(before.currentBytes - previousSize + stored.size > limit, "write \(write) evicted needlessly")
                #expect(evicted == victims.count)
                // The least recently used entries went, nothing else.
                for victim in victims { #expect(try cache.entry(for: victim) == nil, "write \(write): \(victim)") }
            }
            // A random lookup: present exactly when the model says so (this also makes it recent).
            let probe = urls[Int.random(in: 0..<urls.count, using: &random)]
            let found = try cache.entry(for: probe)
            if let seed = seeds[probe] {
                #expect(found?.headerValue(named: "W") == "\(seed)", "write \(write): \(probe) should be cached")
                order.removeAll { $0 == probe }
                order.append(probe)
            } else {
                #expect(found == nil, "write \(write): \(probe) should have been evicted")
            }
        }
        let final = cache.statistics
        #expect(evictionsSeen > 1_000)
        #expect(final.evictions == evictionsSeen)
        #expect(final.entryCount == order.count)
        #expect(final.currentBytes == sizes.values.reduce(0, +))
        #expect(final.oversizeRejects == 0 && final.integrityFailures == 0)
    }
}
