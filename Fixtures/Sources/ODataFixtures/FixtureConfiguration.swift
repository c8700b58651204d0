import Foundation

/// How a ``FixtureServer`` starts: port, service root, paging and where its data comes from.
///
/// The server always listens on 127.0.0.1 only.
public struct FixtureConfiguration: Sendable {
    /// The TCP port; 0 picks a free one (read it from ``FixtureServer/baseURL``). The default is 0.
    public var port: Int
    /// The path of the service root under the server root, starting and ending with `/`.
    /// The default is `/`, so entity sets are at `http://127.0.0.1:PORT/Customers`.
    public var serviceRootPath: String
    /// The page size of server-driven paging when the client states no `odata.maxpagesize`;
    /// `nil` sends whole collections. The default is 100.
    public var defaultPageSize: Int?
    /// The largest page the server sends even when a client prefers a larger one. The default is 1000.
    public var maximumPageSize: Int
    /// A directory holding a CSDL document (`*.xml`) and one `<EntitySet>.json` collection
    /// payload per entity set (in it or its subdirectories); `nil` uses the bundled Northwind
    /// data with Events. The default is `nil`.
    public var dataDirectory: URL?
    /// Whether the control endpoint `/$fixture/...` (faults, counters, reset) answers over HTTP.
    /// The default is `true`.
    public var controlEndpoint: Bool
    /// How delta answers identify changed and removed entities. The default is
    /// ``DeltaIdentification/keyProperties``.
    public var deltaIdentification: DeltaIdentification = .keyProperties
    /// The OData version the producer speaks. The default is ``ProtocolVersion/v4``.
    public var protocolVersion: ProtocolVersion = .v4
    /// How a V2 collection page writes its next link, at start (``FixtureServer/v2NextLink`` changes it while the
    /// server runs). The default is ``V2NextLink/string``.
    public var v2NextLink: V2NextLink = .string

    /// How a delta answer identifies its members: each is a form the OData JSON Format allows (4.01 §15.3 and
    /// §15.4), and clients must read them all.
    public enum DeltaIdentification: String, Sendable, CaseIterable {
        /// Key properties, with a relative `@id`; tombstones `{"@removed": {...}, "@id": …, key properties}`.
        case keyProperties
        /// Only a relative `@id` (`Orders(5)`): changed entities and tombstones without their key properties.
        case relativeID
        /// Only an absolute `@id` with percent-encoded key values (`http://…/Customers(%27ALFKI%27)`).
        case absoluteID
        /// OData 4.0: `@odata.id` on changed entities (without key properties), deleted entities as
        /// `{"@odata.context": "#Set/$deletedEntity", "id": …, "reason": …}`.
        case odata40
    }

    /// Creates a configuration.
    /// - Parameters:
    ///   - port: the TCP port, 0 for any free one.
    ///   - serviceRootPath: the service root's path, `/` by default.
    ///   - defaultPageSize: the page size without `odata.maxpagesize`, 100 by default.
    ///   - maximumPageSize: the largest page size, 1000 by default.
    ///   - dataDirectory: the data to serve, the bundled data by default.
    ///   - controlEndpoint: whether `/$fixture/...` answers, `true` by default.
    public init(
        port: Int = 0, serviceRootPath: String = "/", defaultPageSize: Int? = 100, maximumPageSize: Int = 1000,
        dataDirectory: URL? = nil, controlEndpoint: Bool = true
    ) {
        self.port = port
        self.serviceRootPath = serviceRootPath
        self.defaultPageSize = defaultPageSize
        self.maximumPageSize = maximumPageSize
        self.dataDirectory = dataDirectory
        self.controlEndpoint = controlEndpoint
    }

    func validated() throws(FixtureError) -> FixtureConfiguration {
        guard (0...65_535).contains(port) else { throw FixtureError(.invalidArgument, "port \(port) is not within 0...65535") }
        guard serviceRootPath.hasPrefix("/"), serviceRootPath.hasSuffix("/"), !serviceRootPath.contains("?") else {
            throw FixtureError(.invalidArgument, "serviceRootPath must start and end with '/', got '\(serviceRootPath)'")
        }
        if let size = defaultPageSize, size < 1 {
            throw FixtureError(.invalidArgument, "defaultPageSize must be at least 1 or nil, got \(size)")
        }
        guard maximumPageSize >= 1 else { throw FixtureError(.invalidArgument, "maximumPageSize must be at least 1") }
        return self
    }
}
