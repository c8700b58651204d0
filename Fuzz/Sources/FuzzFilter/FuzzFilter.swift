import Foundation
import ODataCore
import ODataQuery

/// libFuzzer entry: `$filter` parsing and compiling, and whole query strings through `QueryOptions.parse`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = try? FilterExpression.parse(text)
    _ = try? CompiledFilter(parsing: text)
    _ = try? QueryOptions.parse(text)
    return 0
}
