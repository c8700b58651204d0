import Crypto
import Foundation
import HTTPTypes
import Testing
@testable import TechnicalCache

@Suite struct InternalsTests {
    /// A 304's merge (RFC 9111 §4.3.4): the stored lines of each name it brings go, except the framing headers and
    /// credentials; the lines kept stay in order, the new ones follow in theirs — whether the 304 brings as many lines as
    /// it replaces, fewer, or more.
    @Test func aNotModifiedMergesItsHeadersInOrder() throws {
        func name(_ text: String) throws -> HTTPField.Name { try #require(HTTPField.Name(text)) }
        let stored: HTTPFields = [.server: "nginx", .date: "D1", .contentType: "application/json", .contentLength: "10",
                                  .eTag: "\"a\"", try name("X-Twice"): "1", try name("X-Twice"): "2", try name("Accept-Ranges"): "bytes"]
        func lines(_ headers: HTTPFields) -> [String] { headers.map { "\($0.name.canonicalName): \($0.value)" } }
        var same = CacheEntry(status: 200, headers: stored, payload: Data())
        same.refresh(with: [.server: "nginx", .date: "D2", .eTag: "\"a\"", .contentLength: "0"], at: Date())
        #expect(lines(same.headers) == ["content-type: application/json", "content-length: 10", "x-twice: 1", "x-twice: 2",
                                        "accept-ranges: bytes", "server: nginx", "date: D2", "etag: \"a\""])
        var fewer = CacheEntry(status: 200, headers: stored, payload: Data())
        fewer.refresh(with: [try name("X-Twice"): "3"], at: Date())
        #expect(lines(fewer.headers) == ["server: nginx", "date: D1", "content-type: application/json", "content-length: 10",
                                         "etag: \"a\"", "accept-ranges: bytes", "x-twice: 3"])
        var more = CacheEntry(status: 200, headers: [.eTag: "\"a\""], payload: Data())
        more.refresh(with: [.eTag: "\"a\"", .cacheControl: "max-age=60", .date: "D3", .contentType: "text/plain", .setCookie: "s=1"], at: Date())
        #expect(lines(more.headers) == ["etag: \"a\"", "cache-control: max-age=60", "date: D3"])
    }

    /// A 304 merged into an entry a 304 refreshed before (what a lookup returns while a refresh is held) gives the same
    /// lines as merged into the stored one: the same 304 again changes only the time; a changed value, fewer lines, or a
    /// line of the same name before them go through the whole merge.
    @Test func aNotModifiedMergedAgainGivesTheSameLines() throws {
        func lines(_ headers: HTTPFields) -> [String] { headers.map { "\($0.name.rawName): \($0.value)" } }
        let stored: HTTPFields = [.server: "nginx", .date: "D1", .contentType: "application/json", .eTag: "\"a\"", .lastModified: "L"]
        let notModified: HTTPFields = [.server: "nginx", .date: "D2", .eTag: "\"a\"", .lastModified: "L"]
        var once = CacheEntry(status: 200, headers: stored, payload: Data(), storedAt: Date(timeIntervalSince1970: 1))
        once.refresh(with: notModified, at: Date(timeIntervalSince1970: 2))
        let expected = ["Content-Type: application/json", "Server: nginx", "Date: D2", "ETag: \"a\"", "Last-Modified: L"]
        #expect(lines(once.headers) == expected)
        var twice = once
        twice.refresh(with: notModified, at: Date(timeIntervalSince1970: 3))
        #expect(lines(twice.headers) == expected)
        #expect(twice.storedAt == Date(timeIntervalSince1970: 3))
        var later = once
        later.refresh(with: [.server: "nginx", .date: "D3", .eTag: "\"a\"", .lastModified: "L"], at: Date(timeIntervalSince1970: 4))
        #expect(lines(later.headers) == ["Content-Type: application/json", "Server: nginx", "Date: D3", "ETag: \"a\"", "Last-Modified: L"])
        var fewer = once
        fewer.refresh(with: [.date: "D2", .eTag: "\"a\""], at: Date(timeIntervalSince1970: 5))
        #expect(lines(fewer.headers) == ["Content-Type: application/json", "Server: nginx", "Last-Modified: L", "Date: D2", "ETag: \"a\""])
        var duplicated = CacheEntry(status: 200, headers: [.date: "D0", .contentType: "application/json", .date: "D2", .eTag: "\"a\""],
                                    payload: Data())
        duplicated.refresh(with: [.date: "D2", .eTag: "\"a\""], at: Date())
        #expect(lines(duplicated.headers) == ["Content-Type: application/json", "Date: D2", "ETag: \"a\""])
    }

    /// An entry's headers and payload sit behind one shared reference (a held entry's copy retains one object): a copy
    /// changed in any way — payload, headers, a 304's whole merge, its in-place write of a changed value — leaves the
    /// entry it was copied from as it was: lines, their positions and payload.
    @Test func aChangedCopyLeavesItsOriginalAlone() throws {
        func lines(_ headers: HTTPFields) -> [String] { headers.map { "\($0.name.rawName): \($0.value)" } }
        let stored: HTTPFields = [.server: "nginx", .date: "D1", .contentType: "application/json", .eTag: "\"a\"", .lastModified: "L"]
        var original = CacheEntry(status: 200, headers: stored, payload: Data("body".utf8), storedAt: Date(timeIntervalSince1970: 1))
        original.refresh(with: [.server: "nginx", .date: "D2", .eTag: "\"a\"", .lastModified: "L"], at: Date(timeIntervalSince1970: 2))
        let expected = lines(original.headers)
        func unchanged(_ step: String) {
            #expect(lines(original.headers) == expected, "\(step)")
            #expect(original.payload == Data("body".utf8) && original.etag == "\"a\"" && original.lastModified == "L", "\(step)")
            #expect(original.storedAt == Date(timeIntervalSince1970: 2) && !original.hasDirective("no-store"), "\(step)")
        }
        var payload = original
        payload.payload.append(contentsOf: [1, 2])
        #expect(payload.payload.count == 6)
        unchanged("payload")
        var headers = original
        headers.headers = [.cacheControl: "no-store"]
        #expect(headers.hasDirective("no-store") && headers.etag == nil)
        unchanged("headers")
        var changedValue = original  // the last merge's names, a new value: written in place
        changedValue.refresh(with: [.server: "nginx", .date: "D3", .eTag: "\"a\"", .lastModified: "L"], at: Date(timeIntervalSince1970: 3))
        #expect(changedValue.headerValue(named: "Date") == "D3")
        unchanged("a value written in place")
        var merged = original  // other names: the whole merge
        merged.refresh(with: [.date: "D4", .eTag: "\"b\""], at: Date(timeIntervalSince1970: 4))
        #expect(merged.etag == "\"b\"" && merged.headerValue(named: "Date") == "D4")
        unchanged("a whole merge")
    }

    /// An entry finds its validator and `Cache-Control` lines, and the last 304's merged lines, once when its lines are set:
    /// after every 304 of a run (the same again, a changed value, other names, fewer, more, duplicates, a `no-store`
    /// arriving) its lines are those the whole merge gives an entry that knows nothing of the last one, and its validators,
    /// its `no-store` and its conditional lines are those a scan of its lines finds.
    @Test func anEntrysLinePositionsFollowEveryMerge() throws {
        func name(_ text: String) throws -> HTTPField.Name { try #require(HTTPField.Name(text)) }
        func lines(_ headers: HTTPFields) -> [String] { headers.map { "\($0.name.rawName): \($0.value)" } }
        let runs: [HTTPFields] = [
            [.server: "nginx", .date: "D1", .eTag: "\"a\"", .lastModified: "L"],
            [.server: "nginx", .date: "D1", .eTag: "\"a\"", .lastModified: "L"],
            [.server: "nginx", .date: "D2", .eTag: "\"a\"", .lastModified: "L"],
            [.server: "nginx", .date: "D3", .eTag: "W/\"a\"", .lastModified: "L", .contentLength: "0"],
            [.date: "D4", .eTag: "\"a\""],
            [.date: "D4", .eTag: "\"a\"", try name("X-Twice"): "1", try name("X-Twice"): "2"],
            [.date: "D5", .eTag: "\"a\"", try name("X-Twice"): "1", try name("X-Twice"): "3"],
            [.date: "D5", .cacheControl: "max-age=0, no-store", .eTag: "\"b\""],
            [.date: "D6", .cacheControl: "max-age=60", .eTag: "\"b\""],
            [.lastModified: "M"],
        ]
        var entry = CacheEntry(status: 200, headers: [.contentType: "application/json", .date: "D0", .eTag: "\"a\"", .contentLength: "2"],
                               payload: Data())
        for (step, notModified) in runs.enumerated() {
            var reference = CacheEntry(status: 200, headers: entry.headers, payload: Data())
            reference.refresh(with: notModified, at: Date(timeIntervalSince1970: Double(step)))
            entry.refresh(with: notModified, at: Date(timeIntervalSince1970: Double(step)))
            #expect(lines(entry.headers) == lines(reference.headers), "304 \(step)")
            #expect(entry.storedAt == Date(timeIntervalSince1970: Double(step)))
            #expect(entry.etag == entry.headerValue(named: "ETag") && entry.lastModified == entry.headerValue(named: "Last-Modified"))
            #expect(entry.hasDirective("no-store") == CachePolicy.hasDirective("no-store", in: entry.headers), "304 \(step)")
            var conditional = HTTPFields()
            entry.appendConditionalLines(to: &conditional)
            #expect(conditional[.ifNoneMatch] == entry.etag && conditional[.ifModifiedSince] == entry.lastModified && conditional.count <= 2)
        }
        #expect(lines(entry.headers).last == "Last-Modified: M")
        // Lines set through `headers` are found again (and what the last 304 merged is forgotten).
        entry.headers = [.cacheControl: "no-store", .lastModified: "N"]
        #expect(entry.etag == nil && entry.lastModified == "N" && entry.hasDirective("no-store") && entry.hasValidators)
        entry.headers = [.server: "nginx"]
        #expect(!entry.hasValidators && !entry.hasDirective("no-store"))
        #expect(CachePolicy.decision(for: CacheRequest(method: "GET"), stored: entry, mode: .active) == .fetch)
        // Lines past `Int16`'s positions are found by a scan.
        var many = HTTPFields()
        many.reserveCapacity(Int(Int16.max) + 2)
        for _ in 0...Int(Int16.max) { many.append(HTTPField(name: .server, value: "s")) }
        var large = CacheEntry(status: 200, headers: many, payload: Data())
        #expect(!large.hasValidators && large.etag == nil && !large.hasDirective("no-store"))
        many.append(HTTPField(name: .eTag, value: "\"z\""))
        large.headers = many
        #expect(large.hasValidators && large.etag == "\"z\"" && large.lastModified == nil)
        #expect(CachePolicy.decision(for: CacheRequest(method: "GET"), stored: large, mode: .active) == .revalidate(conditionalHeaders: [.ifNoneMatch: "\"z\""]))
    }

    /// The precomputed-pad HMAC used for entry keys equals swift-crypto's HMAC-SHA256.
    @Test(arguments: [nil, "", "alice", "a partition with ünïcode"])
    func entryKeyIsHMACSHA256(partition: String?) {
        let key = SymmetricKey(size: .bits256)
        let crypto = CacheCrypto(sealer: nil, indexKey: key, generation: 0)
        for url in ["", "https://h/svc/Products?$top=2", String(repeating: "x", count: 300)] {
            let text = Array((partition ?? "").utf8)
            var message = withUnsafeBytes(of: UInt32(text.count).bigEndian) { Array($0) }
            message += text + Array(url.utf8)
            let expected = Array(HMAC<SHA256>.authenticationCode(for: message, using: key))
            #expect(crypto.entryKey(for: url, partition: partition) == expected)
        }
        // Partitions separate keys.
        #expect(crypto.entryKey(for: "u", partition: "a") != crypto.entryKey(for: "u", partition: "b"))
        #expect(crypto.entryKey(for: "u", partition: nil) == crypto.entryKey(for: "u", partition: ""))
    }

    /// Both stored layouts round-trip, and the predicted size matches what is stored.
    @Test(arguments: [0, 1, 1000, SealedEntry.combinedLimit, SealedEntry.combinedLimit + 1, 300_000])
    func sealedEntriesRoundTrip(payloadCount: Int) throws {
        let key = [UInt8](repeating: 9, count: 32)
        let entry = CacheEntry(status: 203, headers: [HTTPField.Name("A")!: "1", HTTPField.Name("B")!: ""],
                               payload: patternPayload(index: payloadCount, count: payloadCount),
                               storedAt: Date(timeIntervalSince1970: 1_700_000_000.123))
        for sealer in [Sealer(key: .random()), nil] {
            let crypto = CacheCrypto(sealer: sealer, indexKey: SymmetricKey(size: .bits256), generation: 0)
            let sealed = try crypto.seal(entry, key: key)
            #expect(sealed.format == (payloadCount <= SealedEntry.combinedLimit ? SealedEntry.combinedFormat : SealedEntry.splitFormat))
            var stored = [UInt8](repeating: 0, count: sealed.byteCount)
            stored.withUnsafeMutableBytes { sealed.write(into: $0) }
            let opened = try #require(stored.withUnsafeBytes { crypto.open($0, key: key) })
            #expect(opened.payload == entry.payload)
            #expect(opened.payload.startIndex == 0)
            #expect(opened.headers == entry.headers)
            #expect(opened.status == 203)
            #expect(opened.storedAt == Date(timeIntervalSince1970: 1_700_000_000.123))
            #expect(opened.size == stored.count + OpenCache.perEntryOverhead)
            if sealer != nil {
                // The other key's authenticated data, a truncation or a flipped byte: no entry.
                #expect(stored.withUnsafeBytes { crypto.open($0, key: [UInt8](repeating: 8, count: 32)) } == nil)
                #expect(stored.dropLast().withUnsafeBytes { crypto.open($0, key: key) } == nil)
                for position in [5, stored.count / 2, stored.count - 1] {
                    var damaged = stored
                    damaged[position] ^= 0x40
                    #expect(damaged.withUnsafeBytes { crypto.open($0, key: key) } == nil)
                }
            }
            // Garbage never crashes.
            #expect([UInt8]([2, 0, 0, 0, 0]).withUnsafeBytes { crypto.open($0, key: key) } == nil)
            #expect([UInt8]([1, 255, 255, 255, 255, 0]).withUnsafeBytes { crypto.open($0, key: key) } == nil)
            #expect([UInt8]([7]).withUnsafeBytes { crypto.open($0, key: key) } == nil)
        }
    }
}

/// Values written by the encoder before the cache's headers were `HTTPFields` (its output for
/// `earlierLayoutEntry`, unencrypted, taken from commit 8519861's `EntryCodec` and `SealedEntry`): the
/// layout must not change, so caches written then still read.
enum EarlierLayout {
    /// Status 200, stored at 1_700_000_000.123, payload `{"value":[]}`, headers (the `Set-Cookie` given
    /// to the old encoder was dropped before encoding) as `fields`.
    static let combined = bytes(hex: """
        02000000007b2276616c7565223a5b5d7d0100c80000018bcfe5687b000000050000000c436f6e74656e742d54797065000000276170706c6963\
        6174696f6e2f6a736f6e3b6f646174612e6d657461646174613d6d696e696d616c000000044554616700000005572f22372200000007582d4f7264\
        6572000000013100000007782d6f7264657200000001320000000d43616368652d436f6e74726f6c0000000a6d61782d6167653d36300000009a
        """)
    static let split = bytes(hex: """
        010000009a0100c80000018bcfe5687b000000050000000c436f6e74656e742d54797065000000276170706c69636174696f6e2f6a736f6e3b6f\
        646174612e6d657461646174613d6d696e696d616c000000044554616700000005572f22372200000007582d4f72646572000000013100000007\
        782d6f7264657200000001320000000d43616368652d436f6e74726f6c0000000a6d61782d6167653d36307b2276616c7565223a5b5d7d
        """)
    static let fields: HTTPFields = [
        .contentType: "application/json;odata.metadata=minimal",
        .eTag: "W/\"7\"",
        HTTPField.Name("X-Order")!: "1",
        HTTPField.Name("x-order")!: "2",
        .cacheControl: "max-age=60",
    ]
    static let entry = CacheEntry(status: 200, headers: fields, payload: Data("{\"value\":[]}".utf8),
                                  storedAt: Date(timeIntervalSince1970: 1_700_000_000.123))

    /// `value` with every `X-Order` name (in any case) replaced by `X Order`, which is no HTTP field name.
    static func withInvalidName(_ value: [UInt8]) -> [UInt8] {
        var damaged = value
        for index in 0..<(damaged.count - 7) where String(decoding: damaged[index..<(index + 7)], as: UTF8.self).lowercased() == "x-order" {
            damaged[index + 1] = UInt8(ascii: " ")
        }
        return damaged
    }

    private static func bytes(hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
    }

    /// Checks an opened entry against `entry`: the same response, headers in the same order with names as sent.
    static func expectMatches(_ opened: CacheEntry?) {
        #expect(opened?.status == 200)
        #expect(opened?.payload == entry.payload)
        #expect(opened?.storedAt == entry.storedAt)
        #expect(opened?.headers.map(\.name.rawName) == ["Content-Type", "ETag", "X-Order", "x-order", "Cache-Control"])
        #expect(opened?.headers.map(\.value) == fields.map(\.value))
        #expect(opened?.headers[values: HTTPField.Name("X-Order")!] == ["1", "2"])
    }
}

@Suite struct StoredLayoutTests {
    /// Values encoded before headers were `HTTPFields` open to the same entry, and the encoder still writes
    /// the same bytes.
    @Test func valuesOfTheEarlierEncoderOpenAndAreWrittenAlike() throws {
        let key = [UInt8](repeating: 9, count: 32)
        let crypto = CacheCrypto(sealer: nil, indexKey: SymmetricKey(size: .bits256), generation: 0)
        EarlierLayout.expectMatches(EarlierLayout.combined.withUnsafeBytes { crypto.open($0, key: key) })
        EarlierLayout.expectMatches(EarlierLayout.split.withUnsafeBytes { crypto.open($0, key: key) })
        #expect(EarlierLayout.entry.headers.count == 5)
        let sealed = try crypto.seal(EarlierLayout.entry, key: key)
        var written = [UInt8](repeating: 0, count: sealed.byteCount)
        written.withUnsafeMutableBytes { sealed.write(into: $0) }
        #expect(written == EarlierLayout.combined)
        let meta = [UInt8](EntryCodec.encodeMeta(EarlierLayout.entry))
        #expect(meta == Array(EarlierLayout.split[5..<(5 + meta.count)]))
    }

    /// A stored header name that is not an HTTP field name (a damaged or foreign value) does not decode:
    /// no entry, no crash.
    @Test func anInvalidStoredHeaderNameIsNoEntry() {
        let key = [UInt8](repeating: 9, count: 32)
        let crypto = CacheCrypto(sealer: nil, indexKey: SymmetricKey(size: .bits256), generation: 0)
        for value in [EarlierLayout.combined, EarlierLayout.split] {
            let damaged = EarlierLayout.withInvalidName(value)
            #expect(damaged != value)
            #expect(damaged.withUnsafeBytes { crypto.open($0, key: key) } == nil)
            #expect(damaged.withUnsafeBytes { crypto.openMeta($0, key: key) } == nil)
        }
    }
}
