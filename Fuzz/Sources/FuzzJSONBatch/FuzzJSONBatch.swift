import Foundation
import ODataCore

/// libFuzzer entry: JSON `$batch` request and response decoding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Data(bytes: data, count: size)
    _ = try? JSONBatch.decodeRequest(body)
    _ = try? JSONBatch.decodeResponse(body)
    return 0
}
