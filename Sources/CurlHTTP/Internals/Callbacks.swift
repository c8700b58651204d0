internal import CCurl

// The C callbacks. Each one turns the `userdata` pointer back into the `CurlEasyHandle` that registered it
// (`Unmanaged.passUnretained(handle).toOpaque()`; the loop keeps the handle alive for the whole transfer).
// They never trap: on any problem they record a `CurlError` on the handle and return a short count, which
// libcurl answers with `CURLE_WRITE_ERROR`, so the transfer fails and the recorded error is reported.

/// `CURLOPT_WRITEFUNCTION`: receives body bytes.
///
/// > Your callback should return the number of bytes actually taken care of. If that amount differs from the
/// > amount passed to your callback function, it signals an error condition to the library.
func curlWriteCallback(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    guard let userdata else { return 0 }
    let handle = Unmanaged<CurlEasyHandle>.fromOpaque(userdata).takeUnretainedValue()
    let (total, overflow) = size.multipliedReportingOverflow(by: count)
    guard !overflow else { return 0 }
    guard total > 0 else { return 0 }
    guard let buffer else { return 0 }
    return handle.receiveBody(UnsafeRawBufferPointer(start: buffer, count: total))
}

/// `CURLOPT_READFUNCTION`: fills libcurl's buffer with the next bytes of a request body that must not be sent twice, or of
/// a body read from a file.
///
/// > This callback function gets called by libcurl as soon as it needs to read data in order to send it to the
/// > peer … Your function must then return the actual number of bytes that it stored in that memory area.
/// > Returning 0 signals end-of-file to the library and causes it to stop the current transfer.
func curlReadCallback(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    guard let userdata, let buffer else { return Int(CURL_READFUNC_ABORT) }
    let handle = Unmanaged<CurlEasyHandle>.fromOpaque(userdata).takeUnretainedValue()
    let (total, overflow) = size.multipliedReportingOverflow(by: count)
    guard !overflow else { return Int(CURL_READFUNC_ABORT) }
    return handle.sendBody(into: UnsafeMutableRawBufferPointer(start: buffer, count: total))
}

/// `CURLOPT_HEADERFUNCTION`: receives one complete header line (status lines and the blank line included).
///
/// > This function gets called by libcurl as soon as it has received header data. The header callback is
/// > called once for each header and only complete header lines are passed on to the callback.
func curlHeaderCallback(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ userdata: UnsafeMutableRawPointer?
) -> Int {
    guard let userdata else { return 0 }
    let handle = Unmanaged<CurlEasyHandle>.fromOpaque(userdata).takeUnretainedValue()
    let (total, overflow) = size.multipliedReportingOverflow(by: count)
    guard !overflow else { return 0 }
    guard total > 0, let buffer else { return total }
    return handle.receiveHeaderLine(UnsafeRawBufferPointer(start: buffer, count: total))
}

