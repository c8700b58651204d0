import Foundation
import HTTPTypes
import Testing
import TechnicalCache

/// A fresh directory under the system temporary directory; `remove()` deletes it.
struct TemporaryDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "cache-tests-" + UUID().uuidString
    }

    /// A cache directory inside this one (so the cache creates it with 0700).
    var cachePath: String { path + "/cache" }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A cheap key derivation: tests open caches many times.
let cheapDerivation = KeyDerivation.pbkdf2(rounds: 1_000)

func testConfiguration(
    sizeLimit: Int = 8 << 20,
    lowWaterMark: Double = 0.8,
    maxEntryFraction: Double = 1.0,
    partition: String? = nil,
    durability: CacheDurability = .periodic(interval: .seconds(3600))
) -> CacheConfiguration {
    CacheConfiguration(
        sizeLimit: sizeLimit, lowWaterMark: lowWaterMark, maxEntryFraction: maxEntryFraction,
        partition: partition, keyDerivation: cheapDerivation, durability: durability)
}

func makeEntry(payload: String, etag: String? = nil, lastModified: String? = nil, extraHeaders: HTTPFields = [:]) -> CacheEntry {
    var headers: HTTPFields = [.contentType: "application/json"]
    if let etag { headers.append(HTTPField(name: .eTag, value: etag)) }
    if let lastModified { headers.append(HTTPField(name: .lastModified, value: lastModified)) }
    return CacheEntry(status: 200, headers: headers + extraHeaders, payload: Data(payload.utf8))
}

/// Deterministic payload bytes for entry `index` of size `count`.
func patternPayload(index: Int, count: Int) -> Data {
    var bytes = [UInt8](repeating: 0, count: count)
    var state = UInt64(truncatingIfNeeded: index) &* 0x9E37_79B9_7F4A_7C15 | 1
    for position in bytes.indices {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        bytes[position] = UInt8(truncatingIfNeeded: state)
    }
    return Data(bytes)
}

func permissions(_ path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.posixPermissions] as? Int) ?? -1
}
