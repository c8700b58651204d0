import Foundation

/// One cached response: status, headers, payload and bookkeeping times.
///
/// `nil` from ``ResponseCache/entry(for:)`` means "never cached (or evicted)"; an entry whose
/// ``payload`` is empty is a cached response without content. Credentials are never kept:
/// ``headers`` drops `Authorization`, `Cookie`, `Set-Cookie` and `Proxy-Authorization` whenever it is set.
public struct CacheEntry: Sendable, Equatable {
    /// One header line: a name and its value, in the order the server sent them.
    public struct Header: Sendable, Hashable {
        /// The header's name, as sent (compare case-insensitively).
        public var name: String
        /// The header's value.
        public var value: String

        /// Creates a header line.
        ///
        /// - Parameters:
        ///   - name: The header's name.
        ///   - value: The header's value.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Header names (lowercased) that are never stored.
    public static let credentialHeaderNames: Set<String> = ["authorization", "cookie", "set-cookie", "proxy-authorization"]

    /// The HTTP status code of the stored response.
    public var status: Int
    /// The response headers, without credentials.
    public var headers: [Header] {
        get { storedHeaders }
        set { storedHeaders = Self.withoutCredentials(newValue) }
    }
    private var storedHeaders: [Header]
    /// The response body (may be empty).
    public var payload: Data
    /// When the response was stored or last refreshed by a 304.
    public var storedAt: Date
    /// When the entry was last stored or returned by a lookup.
    public var lastUsedAt: Date
    /// The bytes the entry takes in the cache (sealed value, key and metadata); 0 until stored.
    public internal(set) var size: Int

    /// Creates an entry; credentials in `headers` are dropped.
    ///
    /// - Parameters:
    ///   - status: The HTTP status code.
    ///   - headers: The response headers in order.
    ///   - payload: The body.
    ///   - storedAt: When the response was received. The default is now.
    public init(status: Int, headers: [Header], payload: Data, storedAt: Date = Date()) {
        self.status = status
        self.storedHeaders = Self.withoutCredentials(headers)
        self.payload = payload
        self.storedAt = storedAt
        self.lastUsedAt = storedAt
        self.size = 0
    }

    /// The first value of the header `name` (case-insensitive).
    ///
    /// - Parameter name: The header's name.
    /// - Returns: Its first value, or `nil`.
    public func headerValue(named name: String) -> String? {
        storedHeaders.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The `ETag` header: the validator sent back as `If-None-Match`.
    public var etag: String? { headerValue(named: "ETag") }
    /// The `Last-Modified` header: the validator sent back as `If-Modified-Since`.
    public var lastModified: String? { headerValue(named: "Last-Modified") }

    static func withoutCredentials(_ headers: [Header]) -> [Header] {
        headers.filter { !credentialHeaderNames.contains($0.name.lowercased()) }
    }

    /// Merges the headers of a 304 response (RFC 9111 §4.3.4): each name in `newHeaders` replaces the
    /// stored lines of that name, except the framing headers that describe the stored body.
    mutating func refresh(with newHeaders: [Header], at date: Date) {
        let keep: Set<String> = ["content-length", "content-encoding", "content-type", "transfer-encoding", "content-range"]
        let incoming = Self.withoutCredentials(newHeaders).filter { !keep.contains($0.name.lowercased()) }
        let replaced = Set(incoming.map { $0.name.lowercased() })
        storedHeaders = storedHeaders.filter { !replaced.contains($0.name.lowercased()) } + incoming
        storedAt = date
    }
}

/// The plaintext layout of a stored entry, chosen so that decoding never copies the payload:
/// `payload ‖ metadata ‖ UInt32(metadata count)`, metadata being
/// `version, UInt16 status, UInt64 storedAt (ms), UInt32 header count, (name, value)…`.
enum EntryCodec {
    static let version: UInt8 = 1

    static func encode(_ entry: CacheEntry) -> Data {
        var meta = ByteWriter(capacity: 64 + entry.headers.count * 48)
        meta.append(version)
        meta.append(UInt16(clamping: entry.status))
        meta.append(UInt64(bitPattern: Int64(entry.storedAt.timeIntervalSince1970 * 1000)))
        meta.append(UInt32(entry.headers.count))
        for header in entry.headers {
            meta.appendString(header.name)
            meta.appendString(header.value)
        }
        var plaintext = Data(capacity: entry.payload.count + meta.data.count + 4)
        plaintext.append(entry.payload)
        plaintext.append(meta.data)
        withUnsafeBytes(of: UInt32(meta.data.count).bigEndian) { plaintext.append(contentsOf: $0) }
        return plaintext
    }

    static func decode(_ plaintext: Data) throws(CacheError) -> CacheEntry {
        let bad = CacheError.corruptRecord.with(detail: "a cache entry could not be decoded")
        let count = plaintext.count
        guard count >= 4 else { throw bad }
        let base = plaintext.startIndex
        var metaCount = 0
        for index in (base + count - 4)..<(base + count) { metaCount = metaCount << 8 | Int(plaintext[index]) }
        guard metaCount <= count - 4 else { throw bad }
        let payloadCount = count - 4 - metaCount
        var reader = ByteReader(plaintext[(base + payloadCount)..<(base + count - 4)])
        guard reader.uint8() == version, let status = reader.uint16(), let stored = reader.uint64(),
              let headerCount = reader.uint32(), Int(headerCount) <= metaCount / 8
        else { throw bad }
        var headers: [CacheEntry.Header] = []
        headers.reserveCapacity(Int(headerCount))
        for _ in 0..<headerCount {
            guard let name = reader.string(), let value = reader.string() else { throw bad }
            headers.append(.init(name: name, value: value))
        }
        guard reader.isAtEnd else { throw bad }
        let storedAt = Date(timeIntervalSince1970: Double(Int64(bitPattern: stored)) / 1000)
        // `prefix` of a zero-based Data shares its storage and stays zero-based.
        let payload = base == 0 ? plaintext.prefix(payloadCount) : Data(plaintext[base..<(base + payloadCount)])
        return CacheEntry(status: Int(status), headers: headers, payload: payload, storedAt: storedAt)
    }
}
