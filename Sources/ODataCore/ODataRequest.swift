import Foundation
public import HTTPTypes

/// A request to an OData service, shared by the online and the offline store.
///
/// The resource path is relative to the service root (`Customers('ALFKI')/Orders`); query options
/// are rendered in the order given. Reads use the technical cache by default (``useCache``).
public struct ODataRequest: Sendable, Hashable {
    /// The HTTP method (`GET`, `POST`, `PATCH`, `PUT`, `DELETE`, `MERGE`…).
    public var method: HTTPRequest.Method
    /// The resource path relative to the service root, e.g. `Customers('ALFKI')`.
    public var resourcePath: String
    /// The query options, rendered in this order.
    public var queryOptions: [QueryOption]
    /// Request headers (case-insensitive names; repeated fields kept).
    public var headerFields: HTTPFields
    /// The body, for creates and updates.
    public var body: Data?
    /// Whether a read may use and fill the technical cache. The default is `true` for reads.
    public var useCache: Bool
    /// A tag of the application's, carried into callbacks and error records.
    public var customTag: String?

    /// Creates a request.
    /// - Parameters:
    ///   - method: the HTTP method; the default is `GET`.
    ///   - resourcePath: the path relative to the service root.
    ///   - queryOptions: the query options, in order.
    ///   - headerFields: extra headers.
    ///   - body: the body, if any.
    ///   - useCache: whether a read uses the cache; the default is `true` for `GET`, `false` otherwise.
    ///   - customTag: the application's tag.
    public init(
        method: HTTPRequest.Method = .get,
        resourcePath: String,
        queryOptions: [QueryOption] = [],
        headerFields: HTTPFields = [:],
        body: Data? = nil,
        useCache: Bool? = nil,
        customTag: String? = nil
    ) {
        self.method = method
        self.resourcePath = resourcePath
        self.queryOptions = queryOptions
        self.headerFields = headerFields
        self.body = body
        self.useCache = useCache ?? (method == .get)
        self.customTag = customTag
    }

    /// Whether the request only reads (`GET` or `HEAD`).
    public var isRead: Bool { method == .get || method == .head }

    /// Whether the request may be answered from and stored in the technical cache.
    public var isCacheable: Bool { method == .get && useCache }

    /// The path and query relative to the service root, percent-encoded: `Customers?$top=2`.
    /// - Throws: ``ODataError`` for an unusable path or query option.
    public func relativeURL() throws(ODataError) -> String {
        try Self.validate(resourcePath: resourcePath)
        var text = PercentEncoding.encodePath(resourcePath)
        if !queryOptions.isEmpty {
            var pieces: [String] = []
            pieces.reserveCapacity(queryOptions.count)
            for option in queryOptions { pieces.append(try option.rendered()) }
            text += "?" + pieces.joined(separator: "&")
        }
        return text
    }

    /// The absolute URL of the request under a service root.
    /// - Parameter serviceRoot: the service root, e.g. `https://host/sap/opu/odata4/svc/`.
    /// - Returns: the absolute URL, percent-encoded.
    /// - Throws: ``ODataError`` `.invalidURL` for a service root that is not an absolute http(s) URL,
    ///   or a path or option that cannot be used.
    public func url(serviceRoot: String) throws(ODataError) -> String {
        try Self.join(serviceRoot: serviceRoot, relative: relativeURL())
    }

    /// Joins a service root and a relative URL with exactly one slash between them.
    /// - Parameters:
    ///   - serviceRoot: an absolute `http` or `https` URL.
    ///   - relative: a relative path and query.
    /// - Returns: the absolute URL.
    /// - Throws: ``ODataError`` `.invalidURL` when the root is not an absolute http(s) URL.
    public static func join(serviceRoot: String, relative: String) throws(ODataError) -> String {
        guard let components = URLComponents(string: serviceRoot), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty,
            components.query == nil, components.fragment == nil
        else {
            throw ODataError(.invalidURL, "the service root '\(serviceRoot)' is not an absolute http(s) URL without query")
        }
        let root = serviceRoot.hasSuffix("/") ? serviceRoot : serviceRoot + "/"
        let tail = relative.hasPrefix("/") ? String(relative.dropFirst()) : relative
        return root + tail
    }

    private static func validate(resourcePath: String) throws(ODataError) {
        if resourcePath.hasPrefix("http://") || resourcePath.hasPrefix("https://") {
            throw ODataError(.invalidURL, "the resource path must be relative to the service root, got '\(resourcePath)'")
        }
        // Every byte looked for is ASCII, which in UTF-8 is never part of another character: the bytes are scanned
        // in place, and the offset (in Unicode scalars) is counted only for a path that fails.
        var path = resourcePath
        guard let position = path.withUTF8({ $0.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") || $0 < 0x20 || $0 == 0x7F } }) else {
            return
        }
        let index = resourcePath.utf8.index(resourcePath.utf8.startIndex, offsetBy: position)
        let byte = resourcePath.utf8[index]
        let offset = resourcePath.unicodeScalars[..<index].count
        if byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") {
            throw ODataError(.invalidURL, "'\(Character(Unicode.Scalar(byte)))' is not allowed in a resource path; use query options", offset: offset)
        }
        throw ODataError(.invalidURL, "control character in the resource path", offset: offset)
    }
}

extension ODataRequest {
    /// A read of a resource path with query options.
    /// - Parameters:
    ///   - resourcePath: the path relative to the service root.
    ///   - options: query options, in order.
    /// - Returns: the request.
    public static func get(_ resourcePath: String, _ options: QueryOption...) -> ODataRequest {
        ODataRequest(resourcePath: resourcePath, queryOptions: options)
    }
}
