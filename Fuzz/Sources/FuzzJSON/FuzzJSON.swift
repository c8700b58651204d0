import Foundation
import NorthwindProxies
import ODataCore
import ODataTyped

/// libFuzzer entry: the JSON parser, the pull reader (which must agree with it exactly), both payload decoders
/// (V4 and V2 shapes, delta members, links and tombstones included; seeds in Fuzz/Corpus/FuzzJSON) and the typed
/// decoding of generated types, on the same bytes.
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
    // The pull reader accepts exactly what the tree parser accepts, and refuses the rest at the same offset.
    let tree = Result { () throws(ODataError) in try JSON.parse(bytes) }
    let pulled = Result { () throws(ODataError) in
        try JSON.withReader(bytes) { (reader: inout JSONReader) throws(ODataError) in
            try reader.skipValue()
            try reader.end()
        }
    }
    switch (tree, pulled) {
    case (.success, .success), (.failure, .failure): break
    default: fatalError("the pull reader and the parser disagree: \(tree) vs \(pulled)")
    }
    _ = try? QueryResult<Customer>.decode(bytes)
    _ = try? QueryResult<Order>.decode(bytes)
    _ = try? Employee.decode(bytes)
    return 0
}
