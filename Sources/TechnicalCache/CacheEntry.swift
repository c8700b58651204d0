import Foundation
import HTTPTypes

/// One cached response: status, headers, payload and bookkeeping times.
///
/// `nil` from ``ResponseCache/entry(for:)`` means "never cached (or evicted)"; an entry whose
/// ``payload`` is empty is a cached response without content. Credentials are never kept:
/// ``headers`` drops `Authorization`, `Cookie`, `Set-Cookie` and `Proxy-Authorization` whenever it is set.
public struct CacheEntry: Sendable, Equatable {
    /// Header names (lowercased) that are never stored.
    public static let credentialHeaderNames: Set<String> = ["authorization", "cookie", "set-cookie", "proxy-authorization"]

    /// The HTTP status code of the stored response.
    public var status: Int
    /// The response headers, without credentials.
    public var headers: HTTPFields {
        get { parts.headers }
        set {
            let headers = Self.withoutCredentials(newValue)
            let parts = uniqueParts()
            parts.lines = Lines(of: headers)
            parts.headers = headers
        }
    }
    /// The response body (may be empty).
    public var payload: Data {
        get { parts.payload }
        _modify {
            let parts = uniqueParts()
            yield &parts.payload
        }
    }
    /// The header lines as stored (credentials already dropped).
    private var storedHeaders: HTTPFields {
        get { parts.headers }
        _modify {
            let parts = uniqueParts()
            yield &parts.headers
        }
    }
    /// Where the lines an active read uses are in ``headers``, found once when the lines are set (see ``Lines``).
    private var lines: Lines {
        get { parts.lines }
        _modify {
            let parts = uniqueParts()
            yield &parts.lines
        }
    }
    /// The headers, their line positions and the payload: the entry's parts that hold references, behind one.
    private var parts: Parts
    /// When the response was stored or last refreshed by a 304; a writer that orders its writes
    /// (`keepingNewer`) sets it to the time its request was sent. `maxAge` measures age from it.
    public var storedAt: Date
    /// When the entry was last stored or returned by a lookup.
    public var lastUsedAt: Date
    /// The bytes the entry takes in the cache (sealed value, key and metadata); 0 until stored.
    public internal(set) var size: Int
    /// The last 16 bytes of the sealed value a lookup opened (its AES-GCM tag): the same bytes stored later
    /// are the same sealed value, so a 304's refresh can tell, without opening it again, that the entry it
    /// confirmed is still the one stored. `nil` for entries not read from an encrypted cache.
    var sealedTag: SealedTag?
    /// Where a lookup read this entry: the opening of the cache, the environment's last transaction ID, the URL,
    /// the key generation and the LMDB key the URL hashed to. With the same opening and key and an unchanged
    /// transaction ID, nothing was written since (by any process), so it is still the one stored; with the same
    /// URL and generation, the key need not be hashed again.
    var readAt: ReadAt?

    /// The positions of the lines every active read of the entry uses, found in one pass when its lines are set (stored,
    /// decoded, merged): its validators (read by the conditional request, the 304's check and the refresh's), its first
    /// `Cache-Control` line, and how many of its last lines a 304 merged. With many URLs, an entry's lines are seldom in
    /// the CPU's cache when it is read again: each scan by name touched every line (and retained its name).
    struct Lines: Sendable {
        var etag: Int16 = -1
        var lastModified: Int16 = -1
        var cacheControl: Int16 = -1
        /// The count of the last lines that are the last 304's merged lines (no line before them has one of their
        /// names); 0 when not known (an entry stored or decoded: its next 304 finds out).
        var mergedTail: UInt16 = 0

        init(of headers: HTTPFields) {
            let etagName = HTTPField.Name.eTag.canonicalName
            let lastModifiedName = HTTPField.Name.lastModified.canonicalName
            let cacheControlName = HTTPField.Name.cacheControl.canonicalName
            var index = 0
            // `HTTPFields` holds fewer than `UInt16.max` lines; the positions looked for are within `Int16` in any
            // response this cache stores (a line past that is found by a scan, as before).
            while index < min(headers.endIndex, Int(Int16.max)) {
                let name = headers[index].name.canonicalName
                switch name.utf8.count {
                case 4 where etag < 0 && name == etagName: etag = Int16(index)
                case 13 where lastModified < 0 && name == lastModifiedName: lastModified = Int16(index)
                case 13 where cacheControl < 0 && name == cacheControlName: cacheControl = Int16(index)
                default: break
                }
                index += 1
            }
            if headers.endIndex > Int(Int16.max) {
                etag = -2
                lastModified = -2
                cacheControl = -2
            }
        }
    }

    /// The headers, their line positions and the payload, behind one reference: a copy of the entry (a lookup's answer from
    /// the entries held in memory) retains one object instead of the headers' storage and the payload's — with many URLs,
    /// each a line seldom in the CPU's cache. Copied on write: changed only while one entry refers to it
    /// (``uniqueParts()``), which is what makes it safe to send (as an array's storage is).
    private final class Parts: @unchecked Sendable {
        var headers: HTTPFields
        var lines: Lines
        var payload: Data

        init(headers: HTTPFields, lines: Lines, payload: Data) {
            self.headers = headers
            self.lines = lines
            self.payload = payload
        }
    }

    /// The parts, copied first when another entry refers to them too.
    private mutating func uniqueParts() -> Parts {
        if !isKnownUniquelyReferenced(&parts) {
            parts = Parts(headers: parts.headers, lines: parts.lines, payload: parts.payload)
        }
        return parts
    }

    /// Where a lookup read an entry (see ``readAt``).
    struct ReadAt: Sendable {
        var cache: UInt64
        var transaction: UInt64
        var url: String
        var generation: UInt64
        /// The LMDB key, as words (an entry key is an HMAC-SHA256, 32 bytes: `CacheCrypto.entryKey`): kept without a reference,
        /// so that a held entry's key array, seldom in the CPU's cache, is not retained.
        var key: TouchKey
    }

    /// An AES-GCM tag (16 bytes) as two words.
    struct SealedTag: Sendable, Equatable {
        let high: UInt64
        let low: UInt64

        /// The last 16 bytes of a sealed value; `nil` when shorter.
        init?(of stored: UnsafeRawBufferPointer) {
            guard stored.count >= 16 else { return nil }
            high = stored.loadUnaligned(fromByteOffset: stored.count - 16, as: UInt64.self)
            low = stored.loadUnaligned(fromByteOffset: stored.count - 8, as: UInt64.self)
        }
    }

    /// Entries are equal in their response (headers line by line: the same names as sent and values, in the
    /// same order), times and size; how one was read does not matter.
    public static func == (lhs: CacheEntry, rhs: CacheEntry) -> Bool {
        lhs.status == rhs.status && sameLines(lhs.storedHeaders, rhs.storedHeaders) && lhs.payload == rhs.payload
            && lhs.storedAt == rhs.storedAt && lhs.lastUsedAt == rhs.lastUsedAt && lhs.size == rhs.size
    }

    /// Creates an entry; credentials in `headers` are dropped.
    ///
    /// - Parameters:
    ///   - status: The HTTP status code.
    ///   - headers: The response headers in order (names as sent, duplicates kept).
    ///   - payload: The body.
    ///   - storedAt: When the response was received. The default is now.
    public init(status: Int, headers: HTTPFields, payload: Data, storedAt: Date = Date()) {
        self.status = status
        let headers = Self.withoutCredentials(headers)
        self.parts = Parts(headers: headers, lines: Lines(of: headers), payload: payload)
        self.storedAt = storedAt
        self.lastUsedAt = storedAt
        self.size = 0
    }

    /// An entry decoded from the cache: its headers were filtered when it was stored.
    init(status: Int, trustedHeaders: HTTPFields, payload: Data, storedAt: Date) {
        self.status = status
        self.parts = Parts(headers: trustedHeaders, lines: Lines(of: trustedHeaders), payload: payload)
        self.storedAt = storedAt
        self.lastUsedAt = storedAt
        self.size = 0
    }

    /// Whether two header lists hold the same lines in the same order, names as sent (stricter than
    /// `HTTPFields`' `==`, which ignores the case of names and the order of differently named fields): what
    /// is stored is the same.
    static func sameLines(_ lhs: HTTPFields, _ rhs: HTTPFields) -> Bool {
        lhs.elementsEqual(rhs) { $0.name.rawName == $1.name.rawName && $0.value == $1.value }
    }

    /// The first value of the header `name` (case-insensitive; `headers[name]` joins all of them).
    ///
    /// - Parameter name: The header's name.
    /// - Returns: Its first value, or `nil` (also when `name` is not a valid field name).
    public func headerValue(named name: String) -> String? {
        HTTPField.Name(name).flatMap(firstValue)
    }

    private func firstValue(_ name: HTTPField.Name) -> String? {
        Self.firstIndex(of: name, in: storedHeaders).map { storedHeaders[$0].value }
    }

    /// The first line at `position` (from ``Lines``): `nil` for none, a scan by `name` past `Int16`'s positions.
    private func line(at position: Int16, named name: HTTPField.Name) -> HTTPField? {
        if position >= 0 { return storedHeaders[Int(position)] }
        if position == -1 { return nil }
        return Self.firstIndex(of: name, in: storedHeaders).map { storedHeaders[$0] }
    }

    /// Whether the entry's `Cache-Control` lines carry `directive` (``CachePolicy/hasDirective(_:in:)``), read from the
    /// first of them: an entry without one answers at once.
    func hasDirective(_ directive: String) -> Bool {
        guard lines.cacheControl != -1 else { return false }
        return CachePolicy.hasDirective(directive, in: storedHeaders, from: max(Int(lines.cacheControl), 0))
    }

    /// Whether the entry has a validator to revalidate with (an `ETag` or a `Last-Modified` line).
    var hasValidators: Bool {
        if lines.etag >= 0 || lines.lastModified >= 0 { return true }
        if lines.etag == -1 && lines.lastModified == -1 { return false }
        return etag != nil || lastModified != nil  // past `Int16`'s positions: found by a scan
    }

    /// Appends the conditional lines of a revalidation to `fields`: the stored `ETag` line as `If-None-Match` and the
    /// `Last-Modified` line as `If-Modified-Since` (RFC 9110 §13.1.2, §13.1.3), the stored lines renamed — their values
    /// were checked when they were stored and are not scanned again.
    func appendConditionalLines(to fields: inout HTTPFields) {
        // Room for both at once: the caller's fields are usually shared (the request as the caller made it), and the first
        // append copies them — into room for one more line only, the second append would copy them again.
        if lines.etag != -1 && lines.lastModified != -1 { fields.reserveCapacity(fields.count + 2) }
        if var etag = line(at: lines.etag, named: .eTag) {
            etag.name = .ifNoneMatch
            fields.append(etag)
        }
        if var lastModified = line(at: lines.lastModified, named: .lastModified) {
            lastModified.name = .ifModifiedSince
            fields.append(lastModified)
        }
    }

    /// The position of the first line named `name` in `headers`, read by position with the names' lengths compared
    /// first: `first(where:)` copies every line it passes (a retain and a release of each of its strings — in a
    /// held entry, memory no other part of the read touches, which with many URLs is seldom in the CPU's cache).
    static func firstIndex(of name: HTTPField.Name, in headers: HTTPFields, from start: Int = 0) -> Int? {
        let canonical = name.canonicalName
        let length = canonical.utf8.count
        var index = start
        while index < headers.endIndex {
            if headers[index].name.canonicalName.utf8.count == length && headers[index].name.canonicalName == canonical { return index }
            index += 1
        }
        return nil
    }

    /// Tokens (a method, a `Cache-Control` directive's name) compared with ASCII letters without regard to
    /// case, byte by byte, without Foundation's locale-aware comparison (which was a measured cost of every 304).
    static func namesEqual(_ lhs: String, _ rhs: String) -> Bool {
        guard lhs.utf8.count == rhs.utf8.count else { return false }
        var lhs = lhs
        var rhs = rhs
        return lhs.withUTF8 { left in
            rhs.withUTF8 { right in
                guard left.count == right.count else { return false }
                for index in 0..<left.count where left[index] != right[index] {
                    // ASCII letters differ in case by 0x20 only.
                    let a = left[index] | 0x20
                    guard a == right[index] | 0x20, a >= UInt8(ascii: "a"), a <= UInt8(ascii: "z") else { return false }
                }
                return true
            }
        }
    }

    /// The `ETag` header: the validator sent back as `If-None-Match`.
    public var etag: String? { line(at: lines.etag, named: .eTag)?.value }
    /// The `Last-Modified` header: the validator sent back as `If-Modified-Since`.
    public var lastModified: String? { line(at: lines.lastModified, named: .lastModified)?.value }

    static func withoutCredentials(_ headers: HTTPFields) -> HTTPFields {
        guard headers.contains(where: isCredential) else { return headers }
        var kept = headers
        kept.removeAll(where: isCredential)
        return kept
    }

    /// ``credentialHeaderNames`` as field names: compared without hashing each incoming name.
    private static let credentialNames = credentialHeaderNames.compactMap { HTTPField.Name($0) }

    private static func isCredential(_ field: HTTPField) -> Bool {
        credentialNames.contains(field.name)
    }

    /// Whether two field names are the same, their lengths compared first: most names differ in length, and
    /// then no string comparison runs (a 304's merge compares every stored name with every new one).
    static func sameName(_ lhs: HTTPField.Name, _ rhs: HTTPField.Name) -> Bool {
        lhs.canonicalName.utf8.count == rhs.canonicalName.utf8.count && lhs.canonicalName == rhs.canonicalName
    }

    /// Headers that describe the stored body: a 304 never replaces them.
    private static let framingHeaderNames: [HTTPField.Name] = [.contentLength, .contentEncoding, .contentType, .transferEncoding, .contentRange]

    /// The canonical names whose lines a 304 does not merge (credentials, framing), by their length: most names
    /// are told apart by their length alone.
    private static let unmergedByLength: [[String]] = {
        let names = credentialNames.map(\.canonicalName) + framingHeaderNames.map(\.canonicalName)
        var table = Array(repeating: [String](), count: (names.map(\.utf8.count).max() ?? 0) + 1)
        for name in names { table[name.utf8.count].append(name) }
        return table
    }()

    /// Whether a 304's lines of this name replace the stored ones: neither a credential nor a framing header.
    private static func isMerged(_ name: HTTPField.Name) -> Bool {
        let canonical = name.canonicalName
        let length = canonical.utf8.count
        return length >= unmergedByLength.count || !unmergedByLength[length].contains(canonical)
    }

    /// Merges the headers of a 304 response (RFC 9111 §4.3.4): each name in `newHeaders` replaces the
    /// stored lines of that name, except the framing headers that describe the stored body. The stored lines
    /// kept come first, in their order, then the new ones, in theirs.
    ///
    /// Written in place over a copy of the stored fields (`HTTPFields`' subscript is inlined): building the result
    /// with `filter`, `removeAll` and `append` called an unspecialized `insert(_:at:)` per field and compared every
    /// name as a string — most of a 304's cost to the store (callgrind). The usual 304 replaces as many lines as it
    /// brings, so the count stays.
    mutating func refresh(with newHeaders: HTTPFields, at date: Date) {
        storedAt = date
        // The usual 304 of an entry refreshed before (a held refresh is what a lookup returns): its merged lines are the
        // stored entry's last ones — the previous 304's, whose names no line before them has (`Lines.mergedTail`) —, the
        // same names as sent and values in the same order. The merge would build the very same lines: only the time is set,
        // and only those last lines are read.
        // With the same names but a value changed (a new `Date`), the merge would keep the lines before them and put the
        // 304's after them, where they are: the changed lines are written in place.
        if lines.mergedTail > 0 {
            let start = storedHeaders.count - Int(lines.mergedTail)
            var position = start
            var sameNames = true
            var sameValues = true
            for index in newHeaders.indices where Self.isMerged(newHeaders[index].name) {
                guard position < storedHeaders.count, storedHeaders[position].name.rawName == newHeaders[index].name.rawName else {
                    sameNames = false
                    break
                }
                if sameValues && storedHeaders[position].value != newHeaders[index].value { sameValues = false }
                position += 1
            }
            if sameNames && position == storedHeaders.count {
                if !sameValues {
                    position = start
                    for index in newHeaders.indices where Self.isMerged(newHeaders[index].name) {
                        storedHeaders[position] = newHeaders[index]  // an unchanged line is compared and left alone
                        position += 1
                    }
                }
                return
            }
        }
        // Each line of the 304 is looked at once (its name's length, then whether it is merged), not once per stored
        // line; the stored lines are read and compared by position, without copying a field to compare its name.
        var replaced: [(length: Int, name: String, index: Int)] = []
        replaced.reserveCapacity(newHeaders.count)
        for index in newHeaders.indices where Self.isMerged(newHeaders[index].name) {
            let name = newHeaders[index].name.canonicalName
            replaced.append((name.utf8.count, name, index))
        }
        let stored = storedHeaders
        func isReplaced(_ index: Int) -> Bool {
            let length = stored[index].name.canonicalName.utf8.count
            return replaced.contains { $0.length == length && $0.name == stored[index].name.canonicalName }
        }
        // Not known to be the last merge's lines (an entry stored or decoded), they may still be: its lines already close
        // the stored ones, in their order, and no line before them has their names. Then nothing is copied or written, and
        // the next 304 reads only those lines.
        var kept = 0
        while kept < stored.count, !isReplaced(kept) { kept += 1 }
        if stored.count - kept == replaced.count,
           replaced.indices.allSatisfy({ stored[kept + $0].name.rawName == newHeaders[replaced[$0].index].name.rawName
                                            && stored[kept + $0].value == newHeaders[replaced[$0].index].value }) {
            lines.mergedTail = UInt16(replaced.count)
            return
        }
        var merged = stored
        var count = 0
        func put(_ field: HTTPField) {
            if count < merged.count { merged[count] = field } else { merged.append(field) }
            count += 1
        }
        for index in stored.indices where !isReplaced(index) {
            // A line kept where it was is written over itself: skipped (the subscript would compare it).
            if count == index { count += 1 } else { put(stored[index]) }
        }
        for line in replaced {
            put(newHeaders[line.index])
        }
        if count < merged.count { merged.removeSubrange(count...) }
        var mergedLines = Lines(of: merged)
        mergedLines.mergedTail = UInt16(replaced.count)
        let parts = uniqueParts()
        parts.headers = merged
        parts.lines = mergedLines
    }
}
