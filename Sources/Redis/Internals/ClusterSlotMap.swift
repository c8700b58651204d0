/// Which master serves each of a Redis Cluster's 16,384 slots, read from `CLUSTER SLOTS`, and the key-slot
/// function (CRC16 of the key, or of its hash tag) of the Redis Cluster specification.
struct ClusterSlotMap: Sendable {
    static let slotCount = 16384

    /// The masters, by index.
    private(set) var masters: [RedisNodeAddress] = []
    /// For each slot the index of its master in ``masters``, or -1 when no master serves it.
    private var owners = [Int16](repeating: -1, count: slotCount)
    /// Every node the map named (masters and replicas): where the next map can be read.
    private(set) var nodes: [RedisNodeAddress] = []

    /// The master of `slot`, or `nil` when the map has none.
    func master(of slot: Int) -> RedisNodeAddress? {
        let owner = owners[slot]
        return owner < 0 ? nil : masters[Int(owner)]
    }

    /// Records a `MOVED` redirect: `slot` is served by `address` from now on.
    mutating func assign(_ slot: Int, to address: RedisNodeAddress) {
        if let index = masters.firstIndex(of: address) {
            owners[slot] = Int16(index)
        } else {
            masters.append(address)
            if !nodes.contains(address) { nodes.append(address) }
            owners[slot] = Int16(masters.count - 1)
        }
    }

    /// The map in a `CLUSTER SLOTS` reply: `[[start, end, [host, port, id, …], replica…], …]`. A node
    /// without a host (`""` or `?`) is on the host that answered, `answeredBy`.
    static func parse(_ reply: RedisReply, answeredBy: RedisNodeAddress) -> ClusterSlotMap? {
        guard case .array(let ranges) = reply else { return nil }
        var map = ClusterSlotMap()
        for range in ranges {
            guard case .array(let fields) = range, fields.count >= 3,
                  case .integer(let start) = fields[0], case .integer(let end) = fields[1],
                  0 <= start, start <= end, end < slotCount
            else { return nil }
            var addresses: [RedisNodeAddress] = []
            for node in fields.dropFirst(2) {
                guard case .array(let parts) = node, parts.count >= 2, let hostBytes = parts[0].bytes,
                      case .integer(let port) = parts[1], (1...65535).contains(port)
                else { continue }
                let host = String(decoding: hostBytes, as: UTF8.self)
                addresses.append(RedisNodeAddress(host: host.isEmpty || host == "?" ? answeredBy.host : host, port: Int(port)))
            }
            guard let master = addresses.first else { return nil }
            for slot in Int(start)...Int(end) { map.assign(slot, to: master) }
            for address in addresses.dropFirst() where !map.nodes.contains(address) { map.nodes.append(address) }
        }
        return map
    }

    /// The slot of `key`: CRC16 (XMODEM) of the key modulo 16,384 — of only the part between the first `{`
    /// and the next `}` when that part is not empty (a hash tag).
    static func slot(of key: [UInt8]) -> Int {
        if let open = key.firstIndex(of: UInt8(ascii: "{")),
           let close = key[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1 {
            return Int(crc16(key[(open + 1)..<close]) & 0x3FFF)
        }
        return Int(crc16(key[...]) & 0x3FFF)
    }

    /// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, as the Redis Cluster specification defines it.
    static func crc16(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        }
        return crc
    }
}

/// A cluster's answer that the router acts on: `MOVED slot host:port`, `ASK slot host:port` or `CLUSTERDOWN …`.
enum ClusterRedirect: Equatable {
    case moved(slot: Int, RedisNodeAddress)
    case ask(slot: Int, RedisNodeAddress)
    case clusterDown

    /// The redirect in a server error's text, or `nil` for any other error.
    init?(_ error: RedisError) {
        guard error == .serverError, let detail = error.detail else { return nil }
        if detail.hasPrefix("CLUSTERDOWN") { self = .clusterDown; return }
        let words = detail.split(separator: " ")
        guard words.count == 3, let slot = Int(words[1]), (0..<ClusterSlotMap.slotCount).contains(slot),
              let colon = words[2].lastIndex(of: ":"), let port = Int(words[2][words[2].index(after: colon)...])
        else { return nil }
        let address = RedisNodeAddress(host: String(words[2][..<colon]), port: port)
        switch words[0] {
        case "MOVED": self = .moved(slot: slot, address)
        case "ASK": self = .ask(slot: slot, address)
        default: return nil
        }
    }
}
