internal import CCurl

/// Runs `curl_global_init` once per process, before the first handle is made.
///
/// > curl_global_init … must be called at least once within a program before the program calls any other
/// > function in libcurl. (curl_global_init(3))
///
/// A `static let` initializer runs exactly once and is thread-safe, which libcurl 7.88's own init is not.
enum CurlGlobal {
    private static let initResult: Int = Int(curl_global_init(Int(CURL_GLOBAL_ALL)).rawValue)

    /// Initializes libcurl if this is the first call.
    ///
    /// - Throws: `CurlError` of kind `.invalidConfiguration` when `curl_global_init` failed.
    static func ensureInitialized() throws(CurlError) {
        if initResult != 0 {
            throw CurlError(kind: .invalidConfiguration, curlCode: initResult, message: "curl_global_init failed")
        }
    }
}

extension CurlError {
    /// The error for a failed transfer: its kind from the `CURLcode`, and the error-buffer text or, when that is
    /// empty, `curl_easy_strerror`.
    init(code: CURLcode, errorBuffer: String, requestSent: Bool = true) {
        var text = errorBuffer.isEmpty ? String(cString: curl_easy_strerror(code)) : errorBuffer
        if code == CURLE_SEND_FAIL_REWIND {
            // Only a request that must not be sent twice has a body libcurl cannot rewind
            // (`TransportRequest.allowsAutomaticResend`).
            text = "the request went out, and libcurl would have had to send it again (the reused connection closed "
                + "before any answer, or a redirect); it was not sent again, and the server may have executed it"
        }
        self.init(kind: CurlError.kind(of: code), curlCode: Int(code.rawValue), message: text, requestSent: requestSent)
    }

    /// The classification of a `CURLcode`.
    static func kind(of code: CURLcode) -> CurlError {
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_FAILED_INIT, CURLE_INTERFACE_FAILED:
            return .connectFailed
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .couldNotResolveHost
        case CURLE_OPERATION_TIMEDOUT:
            return .timedOut
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
            CURLE_SSL_ENGINE_INITFAILED, CURLE_USE_SSL_FAILED, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CRL_BADFILE,
            CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
            CURLE_SSL_CLIENTCERT:
            return .tls
        case CURLE_FILESIZE_EXCEEDED:
            return .tooLarge
        case CURLE_ABORTED_BY_CALLBACK:
            return .cancelled
        case CURLE_WEIRD_SERVER_REPLY, CURLE_BAD_CONTENT_ENCODING, CURLE_HTTP2, CURLE_HTTP2_STREAM,
            CURLE_RANGE_ERROR, CURLE_UNSUPPORTED_PROTOCOL:
            // The scheme was checked before the request reached libcurl, so an unsupported protocol is an
            // HTTP/0.9 reply ("Received HTTP/0.9 when not allowed") or a redirect to a disallowed scheme.
            return .malformedResponse
        case CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_SEND_FAIL_REWIND:
            return .connectionClosed
        case CURLE_TOO_MANY_REDIRECTS:
            return .tooManyRedirects
        case CURLE_URL_MALFORMAT:
            return .invalidRequest
        case CURLE_UNKNOWN_OPTION, CURLE_NOT_BUILT_IN, CURLE_BAD_FUNCTION_ARGUMENT:
            return .invalidConfiguration
        default:
            return .other
        }
    }
}
