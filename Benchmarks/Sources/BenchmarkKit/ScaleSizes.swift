import Foundation

/// A deterministic 64-bit mix (SplitMix64's finalizer): the same N gives the same sizes and keys.
public func splitMix(_ value: UInt64) -> UInt64 {
    var z = value &+ 0x9E37_79B9_7F4A_7C15
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
}

/// The payload size of key `index`: log-uniform between 0.5 and 64 KiB.
public func scalePayloadSize(_ index: Int) -> Int {
    let unit = Double(splitMix(UInt64(index)) >> 11) / Double(1 << 53)
    return Int(512 * pow(128, unit))
}
