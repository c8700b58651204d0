import Foundation

/// Appends fixed-width big-endian integers and byte runs.
///
/// The bytes grow in an array and become `Data` once, at the end: `Data`'s own appends cost ~900 instructions each
/// (its representation's checks), 32 of them per stored entry's header lines.
package struct ByteWriter {
    private var bytes: [UInt8] = []

    package init(capacity: Int = 64) {
        bytes.reserveCapacity(capacity)
    }

    /// What was written.
    package var data: Data { Data(bytes) }

    /// What was written, as the array it grew in (no copy into a `Data`).
    package var array: [UInt8] { bytes }

    /// The number of bytes written.
    package var count: Int { bytes.count }

    package mutating func append(_ value: UInt8) { bytes.append(value) }

    package mutating func append(_ value: UInt16) { appendBigEndian(value) }

    package mutating func append(_ value: UInt32) { appendBigEndian(value) }

    package mutating func append(_ value: UInt64) { appendBigEndian(value) }

    package mutating func append(_ other: some Sequence<UInt8>) { bytes.append(contentsOf: other) }

    /// A length-prefixed (UInt32) UTF-8 string, its bytes copied at once.
    package mutating func appendString(_ string: String) {
        var copy = string
        copy.withUTF8 { utf8 in
            append(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    private mutating func appendBigEndian(_ value: some FixedWidthInteger) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }
}

/// Reads what `ByteWriter` wrote; every read returns `nil` past the end instead of trapping.
package struct ByteReader {
    package let data: Data
    package private(set) var offset: Int

    package init(_ data: Data) {
        self.data = data
        self.offset = data.startIndex
    }

    package var isAtEnd: Bool { offset == data.endIndex }

    package mutating func uint8() -> UInt8? {
        guard offset < data.endIndex else { return nil }
        defer { offset += 1 }
        return data[offset]
    }

    private mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
        let size = MemoryLayout<T>.size
        guard data.endIndex - offset >= size else { return nil }
        var value: T = 0
        for index in offset..<(offset + size) { value = value << 8 | T(data[index]) }
        offset += size
        return value
    }

    package mutating func uint16() -> UInt16? { integer(UInt16.self) }
    package mutating func uint32() -> UInt32? { integer(UInt32.self) }
    package mutating func uint64() -> UInt64? { integer(UInt64.self) }

    package mutating func bytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, data.endIndex - offset >= count else { return nil }
        defer { offset += count }
        return [UInt8](data[offset..<(offset + count)])
    }

    package mutating func string() -> String? {
        guard let count = uint32().map(Int.init), data.endIndex - offset >= count else { return nil }
        defer { offset += count }
        return String(bytes: data[offset..<(offset + count)], encoding: .utf8)
    }

    /// The rest of the data, sharing storage (no copy).
    package mutating func rest() -> Data {
        defer { offset = data.endIndex }
        return data[offset..<data.endIndex]
    }
}

