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

    /// Appends one header line (libcurl copies the string).
    ///
    /// > curl_slist_append … returns a null pointer if anything went wrong, otherwise the new list pointer.
    ///
    /// - Parameter line: The line, such as `"Accept: application/json"`.
    /// - Throws: `CurlError` of kind `.other` when libcurl could not allocate the entry.
    func append(_ line: String) throws(CurlError) {
        guard let next = line.withCString({ curl_slist_append(pointer, $0) }) else {
            throw CurlError(kind: .other, message: "curl_slist_append failed (out of memory)")
        }
        pointer = next
    }
}
