import Foundation
import ODataCore

/// libFuzzer entry: the JSON parser and both payload decoders (V4 and V2 shapes) on the same bytes.
/// A typed `ODataError` is a fine answer; a crash or a hang is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    if let value = try? JSON.parse(bytes) {
        // Whatever parses must print and parse back to the same value.
        let again = try? JSON.parse(JSON.serialize(value))
        if again != value, case .some = again { fatalError("JSON round trip changed the value") }
    }
    _ = try? ODataPayload.decodeEntitySet(bytes)
    _ = try? ODataPayload.decodeEntity(bytes)
    return 0
}
