import HTTPTypes
import ODataCore

/// Checks a request before it reaches libcurl, so bad input gets an error naming what was wrong.
enum RequestValidation {
    /// Validates method and URL.
    ///
    /// - Parameter request: The request to check.
    /// - Throws: `CurlError` of kind `.invalidRequest` naming the bad part.
    static func validate(_ request: TransportRequest) throws(CurlError) {
        guard HTTPRequest.Method(request.method) != nil else {
            throw CurlError(kind: .invalidRequest, message: "invalid HTTP method \(request.method.debugDescription)")
        }
        let url = request.url
        guard url.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            throw CurlError(kind: .invalidRequest, message: "URL contains a space or control character: \(url.debugDescription)")
        }
        guard isHTTPS(url) || hasPrefix(url, "http://") else {
            throw CurlError(kind: .invalidRequest, message: "URL must be absolute http:// or https://, got \(url.debugDescription)")
        }
    }

    /// Whether the URL's scheme is `https` (case-insensitive).
    static func isHTTPS(_ url: String) -> Bool { hasPrefix(url, "https://") }

    private static func hasPrefix(_ url: String, _ prefix: String) -> Bool {
        url.utf8.count > prefix.utf8.count
            && zip(url.utf8, prefix.utf8).allSatisfy { a, b in a | 0x20 == b || a == b }
    }
}
