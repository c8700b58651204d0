internal import CCurl

/// An owned `curl_slist` of header lines, freed when the list is released.
///
/// libcurl does not copy the list passed to `CURLOPT_HTTPHEADER`, so the easy handle keeps this object
/// until its transfer has completed.
final class HeaderList {
    private(set) var pointer: UnsafeMutablePointer<curl_slist>?

    init() {}

    deinit {
        curl_slist_free_all(pointer)
    }

    /// Appends one fixed header line (libcurl copies the string).
    ///
    /// > curl_slist_append … returns a null pointer if anything went wrong, otherwise the new list pointer.
    ///
    /// - Parameter line: The line, such as `"Expect:"`.
    /// - Throws: `CurlError` of kind `.other` when libcurl could not allocate the entry.
    func append(_ line: StaticString) throws(CurlError) {
        try append(UnsafeRawPointer(line.utf8Start).assumingMemoryBound(to: CChar.self))
    }

    /// Appends the line `name` `separator` `value` (libcurl copies it), written into a buffer on the stack: no string
    /// is built for it (an interpolated line grew its string for each part, the longer values twice; a quarter of a
    /// request's preparation, callgrind).
    ///
    /// - Parameters:
    ///   - name: The field's name as sent.
    ///   - separator: `": "`, or `";"` for a field without a value (see `CurlEasyHandle.setHeaders`).
    ///   - value: The field's value.
    /// - Throws: `CurlError` of kind `.other` when libcurl could not allocate the entry.
    func append(name: String, separator: StaticString, value: String) throws(CurlError) {
        let separatorBytes = UnsafeBufferPointer(start: separator.utf8Start, count: separator.utf8CodeUnitCount)
        let count = name.utf8.count + separatorBytes.count + value.utf8.count
        let next = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count + 1) { line in
            var end = line.initialize(fromContentsOf: name.utf8)
            end = UnsafeMutableBufferPointer(rebasing: line[end...]).initialize(fromContentsOf: separatorBytes) + end
            end = UnsafeMutableBufferPointer(rebasing: line[end...]).initialize(fromContentsOf: value.utf8) + end
            line[end] = 0
            return curl_slist_append(pointer, UnsafeRawPointer(line.baseAddress!).assumingMemoryBound(to: CChar.self))
        }
        try take(next)
    }

    private func append(_ line: UnsafePointer<CChar>) throws(CurlError) {
        try take(curl_slist_append(pointer, line))
    }

    private func take(_ next: UnsafeMutablePointer<curl_slist>?) throws(CurlError) {
        guard let next else {
            throw CurlError(kind: .other, message: "curl_slist_append failed (out of memory)")
        }
        pointer = next
    }
}
