import Crypto
import Foundation
import Testing
@testable import TechnicalCache

@Suite struct InternalsTests {
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
        let entry = CacheEntry(status: 203, headers: [.init(name: "A", value: "1"), .init(name: "B", value: "")],
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
