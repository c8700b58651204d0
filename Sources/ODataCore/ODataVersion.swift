/// The OData protocol version a service speaks: it decides how literals are written in URLs
/// (`datetime'…'` and `guid'…'` in V2) and how payloads are shaped (`{"d": …}` in V2).
public enum ODataVersion: String, Sendable, Hashable, CaseIterable {
    /// OData V2 (and V1): EDMX 1.0, the SAP Gateway dialect.
    case v2
    /// OData V4 and 4.01: EDMX 4.0.
    case v4
}
