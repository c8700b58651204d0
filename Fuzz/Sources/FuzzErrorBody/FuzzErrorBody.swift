import Foundation
import ODataCore

/// libFuzzer entry: `ODataServiceError.parse` never throws and must return for any body.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let error = ODataServiceError.parse(Data(bytes: data, count: size), statusCode: 500)
    if error.statusCode != 500 { fatalError("status lost") }
    return 0
}
