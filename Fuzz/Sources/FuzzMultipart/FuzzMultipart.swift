import Foundation
import ODataCore

/// libFuzzer entry: multipart `$batch` request and response decoding. The first line of the input
/// is the `Content-Type` (so the fuzzer also plays boundary games); the rest is the body.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let all = Data(bytes: data, count: size)
    let newline = all.firstIndex(of: 0x0A) ?? all.endIndex
    let contentType = String(decoding: all[all.startIndex..<newline], as: UTF8.self)
    let body = newline < all.endIndex ? Data(all[(newline + 1)...]) : Data()
    _ = try? MultipartBatch.decodeRequest(body, contentType: contentType)
    _ = try? MultipartBatch.decodeResponse(body, contentType: contentType)
    return 0
}
