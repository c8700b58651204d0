import Foundation
import ODataCore

/// libFuzzer entry: the JSON parser and both payload decoders (V4 and V2 shapes, delta members, links and
/// tombstones included; seeds in Fuzz/Corpus/FuzzJSON) on the same bytes.
/// A typed `ODataError` is a fine answer; a crash or a hang is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    if let value = try? JSON.parse(bytes) {
        // Whatever parses must print and parse back to the same value.
        let again = try? JSON.parse(JSON.serialize(value))
        if again != value, case .some = again { fatalError("JSON round trip changed the value") }
    }
    if let set = try? ODataPayload.decodeEntitySet(bytes) {
        for entity in set.entities { _ = (entity.id, entity.contextEntitySet, entity.isRemoved, entity.jsonV4) }
        for link in set.links where !link.isRemoved && link.target == nil { fatalError("an added link without a target") }
    }
    _ = try? ODataPayload.decodeEntity(bytes)
    return 0
}
