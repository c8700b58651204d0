internal import CCurl
import Foundation
import HTTPTypes
import ODataCore

/// One libcurl easy handle with its error buffer, header list and the response being received.
///
/// Not `Sendable`: it is created, configured, driven and destroyed on the transport's loop thread only.
/// Between transfers `curl_easy_reset` clears its options; the connections, DNS entries and TLS sessions it
/// used stay in the multi handle's caches and are reused by the next transfer.
final class CurlEasyHandle {
    /// The `CURL *`.
    let raw: UnsafeMutableRawPointer
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var headerList: HeaderList?

    // The response being received.
    private var status = 0
    private var headerFields = HTTPFields()
    private var headersComplete = false
    private var body = Data()
    private var reservedCapacity = false
    private var maxBodySize: Int?
    /// Where a 2xx body goes instead of `body` (``TransportRequest/responseBodySink``, or a ``FileBodySink`` for
    /// ``TransportRequest/responseBodyFile``).
    private var responseSink: (any ResponseBodySink)?
    /// Whether this transfer began the sink's body (``ResponseBodySink/begin()``).
    private var sinkBegun = false
    /// Where a request body is read from (``TransportRequest/bodySource``, or a ``FileBodySource`` for
    /// ``TransportRequest/bodyFile``).
    private var requestSource: (any RequestBodySource)?
    /// The body of a request that must not be sent twice, handed to libcurl by `CURLOPT_READFUNCTION`, and how
    /// much of it libcurl has taken.
    private var uploadBody = Data()
    private var uploadOffset = 0
    /// The error a callback recorded; it wins over libcurl's `CURLE_WRITE_ERROR`.
    private var callbackError: CurlError?

    /// Makes a new easy handle, or returns `nil` when libcurl cannot.
    init?() {
        guard let raw = curl_easy_init() else { return nil }
        self.raw = raw
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        curl_easy_cleanup(raw)
        errorBuffer.deallocate()
    }

    // MARK: Configuring a transfer

    /// Resets the handle and sets every option for `request`.
    ///
    /// - Parameters:
    ///   - request: The request (already validated by `RequestValidation`).
    ///   - configuration: The transport's configuration.
    /// - Throws: `CurlError` when libcurl rejects an option.
    func prepare(_ request: TransportRequest, configuration: CurlConfiguration) throws(CurlError) {
        curl_easy_reset(raw)
        clearResponse()
        headerList = nil
        maxBodySize = configuration.maxResponseBodySize
        responseSink = request.responseBodySink ?? request.responseBodyFile.map { FileBodySink(path: $0) }

        try set(CURLOPT_ERRORBUFFER, pointer: UnsafeRawPointer(errorBuffer))
        // > CURLOPT_NOSIGNAL … If this option is set to 1, libcurl will not use any functions that install
        // > signal handlers or any functions that cause signals to be sent to the process.
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_URL, string: request.url)
        try set(CURLOPT_PROTOCOLS_STR, string: "http,https")
        try set(CURLOPT_REDIR_PROTOCOLS_STR, string: "http,https")
        try set(CURLOPT_TCP_KEEPALIVE, 1)
        // A 64 KiB receive buffer (libcurl's default is 16 KiB): fewer reads and callbacks for larger bodies.
        // Best effort: libcurl 7.88 refuses to resize (CURLE_BAD_FUNCTION_ARGUMENT) while a reused handle
        // still holds the buffer of an earlier transfer, which then serves as it is.
        _ = CCurl_easy_setopt_long(raw, CURLOPT_BUFFERSIZE, 64 * 1024)

        let userdata = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
        try check(CCurl_easy_setopt_write_function(raw, CURLOPT_WRITEFUNCTION) { curlWriteCallback($0, $1, $2, $3) }, "CURLOPT_WRITEFUNCTION")
        try set(CURLOPT_WRITEDATA, pointer: userdata)
        try check(CCurl_easy_setopt_write_function(raw, CURLOPT_HEADERFUNCTION) { curlHeaderCallback($0, $1, $2, $3) }, "CURLOPT_HEADERFUNCTION")
        try set(CURLOPT_HEADERDATA, pointer: userdata)

        // Cleartext stays HTTP/1.1: libcurl 7.88 cannot reuse a prior-knowledge h2c connection (curl#10634).
        if RequestValidation.isHTTPS(request.url), configuration.http2OverTLS {
            try set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
            // > CURLOPT_PIPEWAIT … wait for a connection to confirm or deny that it can do multiplexing.
            try set(CURLOPT_PIPEWAIT, 1)
        } else {
            try set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))
        }

        try setMethodAndBody(request)
        try setHeaders(request)
        try setLimits(request, configuration)
        try setProxyAndTLS(configuration)
    }

    private func setMethodAndBody(_ request: TransportRequest) throws(CurlError) {
        let method = request.method
        if let source = try Self.source(of: request) {
            try streamedBody(source, allowsAutomaticResend: request.allowsAutomaticResend)
            if method != "POST" { try set(CURLOPT_CUSTOMREQUEST, string: method) }
            return
        }
        var body = request.body
        if body == nil, ["POST", "PUT", "PATCH", "MERGE"].contains(method) {
            body = Data()  // send `Content-Length: 0` rather than no length at all
        }
        guard let body else {
            if !request.allowsAutomaticResend { try set(CURLOPT_FRESH_CONNECT, 1) }  // see `readOnceBody`
            switch method {
            case "GET": try set(CURLOPT_HTTPGET, 1)
            case "HEAD": try set(CURLOPT_NOBODY, 1)
            default: try set(CURLOPT_CUSTOMREQUEST, string: method)
            }
            return
        }
        if request.allowsAutomaticResend {
            try copyBody(body)
        } else {
            try readOnceBody(body)
        }
        if method != "POST" {
            try set(CURLOPT_CUSTOMREQUEST, string: method)
        }
    }

    /// Hands libcurl a copy of the body, which it may send again by itself.
    private func copyBody(_ body: Data) throws(CurlError) {
        // > CURLOPT_COPYPOSTFIELDS … If you want to use it with data containing zero bytes, you must first set
        // > CURLOPT_POSTFIELDSIZE.
        try check(CCurl_easy_setopt_off_t(raw, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)), "CURLOPT_POSTFIELDSIZE_LARGE")
        let rc: CURLcode = body.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress, bytes.count > 0 {
                return CCurl_easy_setopt_pointer(raw, CURLOPT_COPYPOSTFIELDS, base)
            }
            return "".withCString { CCurl_easy_setopt_pointer(raw, CURLOPT_COPYPOSTFIELDS, $0) }
        }
        try check(rc, "CURLOPT_COPYPOSTFIELDS")
    }

    /// Hands libcurl the body of a request that must not be executed twice, in a form it cannot send twice.
    ///
    /// libcurl sends a request again on a new connection when a reused one closed before any byte of the answer
    /// (`Curl_retry_request`); if body bytes went out, it first rewinds the body. A body read through
    /// `CURLOPT_READFUNCTION` with no `CURLOPT_SEEKFUNCTION` cannot be rewound, so the transfer ends with
    /// `CURLE_SEND_FAIL_REWIND` rather than a second send. Before any body byte went out the back end cannot have
    /// executed the request, and libcurl's re-send is safe. A request without a body has no such guard: it goes
    /// out on a new connection (`CURLOPT_FRESH_CONNECT`). A connection idle for a second or more is not reused
    /// (`CURLOPT_MAXAGE_CONN`): a back end closing an idle keep-alive is the common reason a reused connection
    /// dies, and this request would then fail rather than be re-sent.
    private func readOnceBody(_ body: Data) throws(CurlError) {
        guard !body.isEmpty else {
            try set(CURLOPT_FRESH_CONNECT, 1)
            try copyBody(body)
            return
        }
        uploadBody = body
        uploadOffset = 0
        try set(CURLOPT_MAXAGE_CONN, 1)
        try set(CURLOPT_POST, 1)
        try check(CCurl_easy_setopt_off_t(raw, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)), "CURLOPT_POSTFIELDSIZE_LARGE")
        try check(CCurl_easy_setopt_write_function(raw, CURLOPT_READFUNCTION) { curlReadCallback($0, $1, $2, $3) }, "CURLOPT_READFUNCTION")
        try set(CURLOPT_READDATA, pointer: UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()))
    }

    /// The request's streamed body: its ``TransportRequest/bodySource``, or its ``TransportRequest/bodyFile`` opened.
    private static func source(of request: TransportRequest) throws(CurlError) -> (any RequestBodySource)? {
        if let source = request.bodySource { return source }
        guard let path = request.bodyFile else { return nil }
        do { return try FileBodySource(path: path) } catch {
            throw CurlError(kind: .invalidRequest, message: Self.describe(error))
        }
    }

    /// What a body source's or sink's error says: an ``ODataError``'s message, anything else as it describes itself.
    private static func describe(_ error: any Error) -> String {
        (error as? ODataError)?.message ?? "the streamed body failed: \(error)"
    }

    /// Hands libcurl a body read a piece at a time from `source` (``TransportRequest/bodySource``,
    /// ``TransportRequest/bodyFile``), through the read callback of ``readOnceBody(_:)``: it cannot be rewound either,
    /// so libcurl never sends it twice once bytes went out.
    private func streamedBody(_ source: any RequestBodySource, allowsAutomaticResend: Bool) throws(CurlError) {
        do { try source.rewind() } catch {
            throw CurlError(kind: .invalidRequest, message: Self.describe(error))
        }
        requestSource = source
        if !allowsAutomaticResend { try set(CURLOPT_MAXAGE_CONN, 1) }  // as for `readOnceBody`
        try set(CURLOPT_POST, 1)
        try check(CCurl_easy_setopt_off_t(raw, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(source.count)), "CURLOPT_POSTFIELDSIZE_LARGE")
        try check(CCurl_easy_setopt_write_function(raw, CURLOPT_READFUNCTION) { curlReadCallback($0, $1, $2, $3) }, "CURLOPT_READFUNCTION")
        try set(CURLOPT_READDATA, pointer: UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()))
    }

    /// Copies the next bytes of the body — from the body file, or from the body held in memory — into libcurl's buffer
    /// (`CURLOPT_READFUNCTION`).
    ///
    /// - Parameter buffer: libcurl's buffer.
    /// - Returns: The number of bytes copied; 0 at the end of the body; `CURL_READFUNC_ABORT` after a read error.
    func sendBody(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        if let source = requestSource {
            do { return try source.read(into: buffer) } catch {
                callbackError = CurlError(kind: .invalidRequest, message: Self.describe(error))
                return Int(CURL_READFUNC_ABORT)
            }
        }
        let count = min(buffer.count, uploadBody.count - uploadOffset)
        guard count > 0 else { return 0 }
        uploadBody.withUnsafeBytes { bytes in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[uploadOffset..<(uploadOffset + count)]))
        }
        uploadOffset += count
        return count
    }

    private func setHeaders(_ request: TransportRequest) throws(CurlError) {
        let list = HeaderList()
        var hasExpect = false
        var hasContentType = false
        for field in request.headerFields {
            // > If you provide a header with no contents on the right side of the colon, the header is removed;
            // > to send a header without contents, use a semicolon: "Header;".
            try list.append(name: field.name.rawName, separator: field.value.isEmpty ? ";" : ": ", value: field.value)
            if field.name == .expect { hasExpect = true } else if field.name == .contentType { hasContentType = true }
        }
        // libcurl adds `Expect: 100-continue` to larger bodies and waits up to a second for the answer;
        // an empty `Expect:` removes it. It also labels POST bodies as form data unless told otherwise.
        if !hasExpect {
            try list.append("Expect:")
        }
        if !hasContentType {
            try list.append("Content-Type:")
        }
        try set(CURLOPT_HTTPHEADER, pointer: list.pointer.map { UnsafeRawPointer($0) })
        headerList = list
    }

    private func setLimits(_ request: TransportRequest, _ configuration: CurlConfiguration) throws(CurlError) {
        if let timeout = configuration.connectTimeout {
            try set(CURLOPT_CONNECTTIMEOUT_MS, timeout.wholeMilliseconds)
        }
        if let timeout = configuration.totalTimeout {
            try set(CURLOPT_TIMEOUT_MS, timeout.wholeMilliseconds)
        }
        if let lowSpeed = configuration.lowSpeed {
            try set(CURLOPT_LOW_SPEED_LIMIT, lowSpeed.bytesPerSecond)
            try set(CURLOPT_LOW_SPEED_TIME, max(1, (lowSpeed.duration.wholeMilliseconds + 999) / 1000))
        }
        if let max = configuration.maxResponseBodySize, responseSink == nil {  // a streamed body is not held in memory
            // An early abort when `Content-Length` already says too much. Compressed bodies get some slack,
            // since gzip can make incompressible data slightly larger; the write callback checks the rest.
            let slack = configuration.acceptEncoding == nil ? 0 : max / 8 + 4096
            let (limit, overflow) = max.addingReportingOverflow(slack)
            if !overflow {
                try check(CCurl_easy_setopt_off_t(raw, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(limit)), "CURLOPT_MAXFILESIZE_LARGE")
            }
        }
        switch configuration.redirects {
        case .never:
            try set(CURLOPT_FOLLOWLOCATION, 0)
        case .safeMethods(let max):
            let safe = request.method == "GET" || request.method == "HEAD"
            try set(CURLOPT_FOLLOWLOCATION, safe && max > 0 ? 1 : 0)
            try set(CURLOPT_MAXREDIRS, max)
        case .always(let max):
            try set(CURLOPT_FOLLOWLOCATION, max > 0 ? 1 : 0)
            try set(CURLOPT_MAXREDIRS, max)
        }
        if let encoding = configuration.acceptEncoding {
            try set(CURLOPT_ACCEPT_ENCODING, string: encoding)
        }
        if let userAgent = configuration.userAgent {
            try set(CURLOPT_USERAGENT, string: userAgent)
        }
    }

    private func setProxyAndTLS(_ configuration: CurlConfiguration) throws(CurlError) {
        switch configuration.proxy {
        case .environment:
            break  // libcurl reads http_proxy, HTTPS_PROXY, ALL_PROXY and NO_PROXY itself
        case .none:
            try set(CURLOPT_PROXY, string: "")
        case .url(let url, let noProxy):
            try set(CURLOPT_PROXY, string: url)
            if let noProxy { try set(CURLOPT_NOPROXY, string: noProxy) }
        }
        try set(CURLOPT_SSL_VERIFYPEER, configuration.verifyPeer ? 1 : 0)
        try set(CURLOPT_SSL_VERIFYHOST, configuration.verifyPeer ? 2 : 0)
        if let caFile = configuration.caFile { try set(CURLOPT_CAINFO, string: caFile) }
        if let caPath = configuration.caPath { try set(CURLOPT_CAPATH, string: caPath) }
        if let client = configuration.clientCertificate {
            try set(CURLOPT_SSLCERT, string: client.certificatePath)
            try set(CURLOPT_SSLCERTTYPE, string: client.certificateType)
            if let key = client.keyPath { try set(CURLOPT_SSLKEY, string: key) }
            try set(CURLOPT_SSLKEYTYPE, string: client.keyType)
            if let password = client.keyPassword { try set(CURLOPT_KEYPASSWD, string: password) }
        }
    }

    // MARK: setopt funnel

    private func set(_ option: CURLoption, _ value: Int) throws(CurlError) {
        try check(CCurl_easy_setopt_long(raw, option, value), option)
    }

    private func set(_ option: CURLoption, string: String) throws(CurlError) {
        try check(string.withCString { CCurl_easy_setopt_pointer(raw, option, $0) }, option)
    }

    private func set(_ option: CURLoption, pointer: UnsafeRawPointer?) throws(CurlError) {
        try check(CCurl_easy_setopt_pointer(raw, option, pointer), option)
    }

    private func check(_ rc: CURLcode, _ option: CURLoption) throws(CurlError) {
        try check(rc, "option \(option.rawValue)")
    }

    /// The one funnel every `curl_easy_setopt` result goes through.
    private func check(_ rc: CURLcode, _ what: String) throws(CurlError) {
        guard rc != CURLE_OK else { return }
        let text = String(cString: curl_easy_strerror(rc))
        throw CurlError(kind: CurlError.kind(of: rc) == .other ? .invalidConfiguration : CurlError.kind(of: rc),
                        curlCode: Int(rc.rawValue), message: "curl_easy_setopt(\(what)) failed: \(text)")
    }

    // MARK: Receiving (called from the C callbacks, on the loop thread)

    /// Drops the response and the header list of a finished or abandoned transfer.
    func discardTransfer() {
        clearResponse()
        headerList = nil
    }

    private func clearResponse() {
        status = 0
        headerFields = HTTPFields()
        headersComplete = false
        body = Data()
        reservedCapacity = false
        callbackError = nil
        responseSink = nil
        sinkBegun = false
        requestSource = nil
        errorBuffer[0] = 0
        uploadBody = Data()
        uploadOffset = 0
    }

    /// Appends body bytes unless that would exceed the body limit.
    ///
    /// - Parameter bytes: The bytes libcurl delivered (decoded when a content encoding was negotiated).
    /// - Returns: `bytes.count` to continue, 0 to abort the transfer.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        if let sink = responseSink, (200..<300).contains(status) {
            do {
                if !sinkBegun { try sink.begin() }
                sinkBegun = true
                try sink.write(bytes)
            } catch {
                callbackError = CurlError(kind: .invalidRequest, message: Self.describe(error))
                return 0
            }
            return bytes.count
        }
        if let max = maxBodySize, bytes.count > max - body.count {
            callbackError = CurlError(
                kind: .tooLarge, message: "response body exceeds maxResponseBodySize (\(max) bytes)")
            return 0
        }
        if !reservedCapacity {
            reservedCapacity = true
            var length: curl_off_t = -1
            if CCurl_easy_getinfo_off_t(raw, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK, length > 0 {
                body.reserveCapacity(Int(min(length, curl_off_t(maxBodySize ?? Int.max), 256 * 1024 * 1024)))
            }
        }
        if let base = bytes.baseAddress {
            body.append(base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        }
        return bytes.count
    }

    /// Parses one header line: a status line starts a new header block (a `100 Continue` or a followed
    /// redirect before the final response), a blank line ends the block, anything else is a field.
    ///
    /// - Parameter line: The raw line, with its CRLF.
    /// - Returns: `line.count` to continue, 0 to abort the transfer.
    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) -> Int {
        var end = line.count
        while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        let content = UnsafeRawBufferPointer(rebasing: line[0..<end])

        if content.starts(with: "HTTP/".utf8) {
            headerFields = HTTPFields()
            headersComplete = false
            status = Self.parseStatus(content) ?? 0
            if status == 0 {
                return abort(.malformedResponse, "invalid status line: \(Self.printable(content))")
            }
            return line.count
        }
        if content.isEmpty {
            headersComplete = true
            return line.count
        }
        if headersComplete {
            return line.count  // a trailer after a chunked body: not part of the response header fields
        }
        if content[0] == 0x20 || content[0] == 0x09 {
            // obs-fold (RFC 9112 §5.2): a continuation of the previous field's value.
            guard !headerFields.isEmpty else {
                return abort(.malformedResponse, "header continuation line without a field")
            }
            let index = headerFields.index(before: headerFields.endIndex)
            var field = headerFields[index]
            let more = String(decoding: content, as: UTF8.self).trimmingCharacters(in: .whitespaces)
            field.value = field.value + " " + more
            headerFields[index] = field
            return line.count
        }
        guard let colon = content.firstIndex(of: 0x3A),
              let name = HTTPField.Name(String(decoding: content[..<colon], as: UTF8.self))
        else {
            return abort(.malformedResponse, "invalid header line: \(Self.printable(content))")
        }
        var valueStart = colon + 1
        while valueStart < content.count, content[valueStart] == 0x20 || content[valueStart] == 0x09 { valueStart += 1 }
        var valueEnd = content.count
        while valueEnd > valueStart, content[valueEnd - 1] == 0x20 || content[valueEnd - 1] == 0x09 { valueEnd -= 1 }
        headerFields.append(HTTPField(name: name, lenientValue: content[valueStart..<valueEnd]))
        return line.count
    }

    private func abort(_ kind: CurlError, _ message: String) -> Int {
        callbackError = CurlError(kind: kind, message: message)
        return 0
    }

    private static func parseStatus(_ line: UnsafeRawBufferPointer) -> Int? {
        // status-line = HTTP-version SP status-code SP [ reason-phrase ]; HTTP/2 lines are "HTTP/2 200".
        guard let space = line.firstIndex(of: 0x20), line.count >= space + 4 else { return nil }
        var code = 0
        for i in (space + 1)...(space + 3) {
            let digit = Int(line[i]) - 0x30
            guard (0...9).contains(digit) else { return nil }
            code = code * 10 + digit
        }
        if line.count > space + 4, line[space + 4] != 0x20 { return nil }
        return code >= 100 ? code : nil
    }

    private static func printable(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: bytes.prefix(80), as: UTF8.self).debugDescription
    }

    // MARK: Completion

    /// The outcome of the finished transfer; moves the body out of the handle.
    ///
    /// - Parameter result: The `CURLcode` from `curl_multi_info_read`.
    /// - Returns: The response, or the error (a callback's recorded error first).
    func finish(result: CURLcode) -> Result<TransportResponse, CurlError> {
        defer { clearResponse(); headerList = nil }
        if var error = callbackError {
            if result != CURLE_OK {
                error = CurlError(kind: error, curlCode: Int(result.rawValue), message: error.message)
            }
            return .failure(error)
        }
        guard result == CURLE_OK else {
            let text = String(cString: errorBuffer)
            var requestBytes = 0
            _ = CCurl_easy_getinfo_long(raw, CURLINFO_REQUEST_SIZE, &requestBytes)
            return .failure(CurlError(code: result, errorBuffer: text, requestSent: requestBytes > 0))
        }
        if let sink = responseSink, (200..<300).contains(status) {
            do {
                if !sinkBegun { try sink.begin() }
                try sink.finish()
            } catch {
                return .failure(CurlError(kind: .invalidRequest, message: Self.describe(error)))
            }
        }
        var responseCode = 0
        _ = CCurl_easy_getinfo_long(raw, CURLINFO_RESPONSE_CODE, &responseCode)
        var headerSize = 0
        _ = CCurl_easy_getinfo_long(raw, CURLINFO_HEADER_SIZE, &headerSize)
        var connects = 0
        _ = CCurl_easy_getinfo_long(raw, CURLINFO_NUM_CONNECTS, &connects)
        var version = 0
        _ = CCurl_easy_getinfo_long(raw, CURLINFO_HTTP_VERSION, &version)
        var redirects = 0
        _ = CCurl_easy_getinfo_long(raw, CURLINFO_REDIRECT_COUNT, &redirects)
        var downloaded: curl_off_t = 0
        _ = CCurl_easy_getinfo_off_t(raw, CURLINFO_SIZE_DOWNLOAD_T, &downloaded)
        var totalMicroseconds: curl_off_t = 0
        _ = CCurl_easy_getinfo_off_t(raw, CURLINFO_TOTAL_TIME_T, &totalMicroseconds)

        let httpVersion: TransferMetrics.HTTPVersion = switch version {
        case Int(CURL_HTTP_VERSION_1_0): .http1_0
        case Int(CURL_HTTP_VERSION_1_1): .http1_1
        case Int(CURL_HTTP_VERSION_2_0): .http2
        case Int(CURL_HTTP_VERSION_3): .http3
        default: .unknown
        }
        let metrics = TransferMetrics(
            headerBytes: headerSize, bodyBytes: Int(downloaded), totalTime: .microseconds(totalMicroseconds),
            connectionReused: connects == 0, newConnections: connects, httpVersion: httpVersion,
            redirectCount: redirects)
        let response = TransportResponse(
            status: responseCode != 0 ? responseCode : status, headerFields: headerFields, body: body,
            metrics: metrics)
        return .success(response)
    }
}
