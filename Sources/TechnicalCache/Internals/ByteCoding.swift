import Foundation
import HTTPTypes
import ODataKeys

extension UInt64 {
    /// The big-endian bytes (so byte order equals numeric order in LMDB).
    var bigEndianBytes: [UInt8] {
        withUnsafeBytes(of: bigEndian) { Array($0) }
    }

    init?(bigEndianBytes bytes: some Collection<UInt8>) {
        guard bytes.count == 8 else { return nil }
        self = bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// The plaintext layout of an entry's metadata:
/// `version, UInt16 status, UInt64 storedAt (ms), UInt32 header count, (UInt32-prefixed name, value)…`.
/// The payload is sealed on its own (see `SealedEntry`), so large bodies are never copied into a
/// combined plaintext.
enum EntryCodec {
    static let version: UInt8 = 1

    static func encodeMeta(_ entry: CacheEntry) -> Data {
        var meta = ByteWriter(capacity: metaCapacity(entry))
        writeMeta(entry, into: &meta)
        return meta.data
    }

    /// About the bytes `writeMeta` writes for `entry` (a writer's initial capacity).
    static func metaCapacity(_ entry: CacheEntry) -> Int { 32 + entry.headers.count * 48 }

    /// Writes the metadata `encodeMeta` returns into `meta`, after what it holds.
    static func writeMeta(_ entry: CacheEntry, into meta: inout ByteWriter) {
        meta.append(version)
        meta.append(UInt16(clamping: entry.status))
        meta.append(UInt64(bitPattern: Int64(entry.storedAt.timeIntervalSince1970 * 1000)))
        meta.append(UInt32(entry.headers.count))
        for field in entry.headers {
            meta.appendString(field.name.rawName)
            meta.appendString(field.value)
        }
    }

    /// The metadata of `raw`; `nil` when it does not decode, including a header name that is not an HTTP
    /// field name or more headers than `HTTPFields` holds (a damaged or foreign value): the callers treat
    /// it as damaged.
    static func decodeMeta(_ raw: UnsafeRawBufferPointer) -> (status: Int, storedAt: Date, headers: HTTPFields)? {
        var reader = RawReader(raw)
        guard reader.uint8() == version, let status = reader.uint16(), let stored = reader.uint64(),
              let headerCount = reader.uint32(), Int(headerCount) <= raw.count / 8,
              headerCount < UInt16.max  // more than `HTTPFields` holds
        else { return nil }
        var headers = HTTPFields()
        headers.reserveCapacity(Int(headerCount))
        for _ in 0..<headerCount {
            guard let rawName = reader.string(), let name = HTTPField.Name(rawName), let value = reader.string() else { return nil }
            headers.append(HTTPField(name: name, value: value))
        }
        guard reader.isAtEnd else { return nil }
        return (Int(status), Date(timeIntervalSince1970: Double(Int64(bitPattern: stored)) / 1000), headers)
    }
}

/// Reads big-endian integers and length-prefixed UTF-8 strings from raw memory, `nil` past the end.
struct RawReader {
    let buffer: UnsafeRawBufferPointer
    var offset = 0

    init(_ buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
    }

    var isAtEnd: Bool { offset == buffer.count }

    mutating func uint8() -> UInt8? {
        guard offset < buffer.count else { return nil }
        defer { offset += 1 }
        return buffer[offset]
    }

    private mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
        let size = MemoryLayout<T>.size
        guard buffer.count - offset >= size else { return nil }
        defer { offset += size }
        return T(bigEndian: buffer.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    mutating func uint16() -> UInt16? { integer(UInt16.self) }
    mutating func uint32() -> UInt32? { integer(UInt32.self) }
    mutating func uint64() -> UInt64? { integer(UInt64.self) }

    mutating func string() -> String? {
        guard let count = uint32().map(Int.init), buffer.count - offset >= count else { return nil }
        defer { offset += count }
        return String(decoding: UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + count)]), as: UTF8.self)
    }
}
