import ODataCore

/// The answer to a typed query: the entities of one page, the total count when it was asked for, and the
/// links to the next page and to the changes since.
public struct QueryResult<E: EntityValue>: Sendable {
    /// The entities of this page, in the order the service sent them.
    public var entities: [E]
    /// The total count of matches (`@odata.count`, V2 `__count`), when the query asked for it.
    public var totalCount: Int?
    /// The link to the next page (`@odata.nextLink`, V2 `__next`), when there is one.
    public var nextLink: String?
    /// The delta link (`@odata.deltaLink`, V2 `__delta`), when the service gave one.
    public var deltaLink: String?

    /// The entities of this page.
    /// - Returns: ``entities``.
    public func entityList() -> [E] { entities }

    /// The total count of matches.
    /// - Returns: the count the service sent with the result.
    /// - Throws: ``DataServiceError`` `.noData` when the query did not ask for one (use ``DataQuery/count()``).
    public func count() throws(DataServiceError) -> Int {
        guard let totalCount else { throw DataServiceError(.noData, "the result has no count: ask for one with DataQuery.count()") }
        return totalCount
    }

    /// Reads a collection payload: V4 `{"value": [...], "@odata.count": …, "@odata.nextLink": …}` or V2
    /// `{"d": {"results": [...], "__count": "…", "__next": …}}` / `{"d": [...]}`, straight into `E`. A next link may be a
    /// string or an object with a `uri`; one that is neither fails the decoding.
    /// - Parameters:
    ///   - bytes: the payload.
    ///   - entitySet: the set the entities belong to, remembered in their metadata.
    /// - Returns: the result.
    /// - Throws: ``DataServiceError`` naming the entity property that did not fit.
    public static func decode<Bytes: Collection<UInt8>>(_ bytes: Bytes, entitySet: String? = nil) throws(DataServiceError) -> QueryResult {
        var result = try EntityReader.read(bytes) { (reader: inout EntityReader) throws(DataServiceError) -> QueryResult in
            var result = QueryResult(entities: [])
            var sawEntities = false
            try reader.beginObject("collection")
            while let name = try reader.nextMember() {
                switch name {
                case "value":
                    result.entities = try [E].read(from: &reader)
                    sawEntities = true
                case "@odata.nextLink", "@nextLink", "odata.nextLink": result.nextLink = try readNextLink(&reader)
                case "@odata.deltaLink", "@deltaLink": result.deltaLink = try reader.readString()
                case "@odata.count", "@count": result.totalCount = try readCount(&reader)
                case "d":
                    try readV2(&reader, into: &result)
                    sawEntities = true
                case "__next":  // beside `d`; one inside `d` wins
                    let link = try readNextLink(&reader)
                    if result.nextLink == nil { result.nextLink = link }
                default: try reader.skipValue()
                }
            }
            guard sawEntities else { throw reader.mismatch("expected a collection ('value' or V2 'd'), found none") }
            return result
        }
        if let entitySet {
            for index in result.entities.indices { result.entities[index].odata.entitySet = entitySet }
        }
        return result
    }

    private static func readV2(_ reader: inout EntityReader, into result: inout QueryResult) throws(DataServiceError) {
        if try reader.peek() == .array {
            result.entities = try [E].read(from: &reader)
            return
        }
        var sawResults = false
        try reader.beginObject("collection")
        while let name = try reader.nextMember() {
            switch name {
            case "results":
                result.entities = try [E].read(from: &reader)
                sawResults = true
            case "__next": result.nextLink = try readNextLink(&reader)
            case "__delta": result.deltaLink = try reader.readString()
            case "__count": result.totalCount = try readCount(&reader)
            default: try reader.skipValue()
            }
        }
        guard sawResults else { throw reader.mismatch("expected 'results' in a V2 collection") }
    }

    /// A next link in any form a producer writes it: a URL string, or an object with a `uri` string (a V2
    /// `__next` written as `__deferred` is); `null` is none. Anything else fails, so that a page is never taken
    /// for the last one because its next link could not be read.
    private static func readNextLink(_ reader: inout EntityReader) throws(DataServiceError) -> String? {
        switch try reader.peek() {
        case .null:
            try reader.skipValue()
            return nil
        case .object:
            try reader.beginObject("next link")
            var uri: String?
            while let name = try reader.nextMember() {
                if name == "uri", try reader.peek() == .string { uri = try reader.readString() } else { try reader.skipValue() }
            }
            guard let uri, !uri.isEmpty else { throw reader.mismatch("expected a next link object with a 'uri' string") }
            return uri
        default:
            let link = try reader.readString()
            guard !link.isEmpty else { throw reader.mismatch("expected a next link, found an empty string") }
            return link
        }
    }

    private static func readCount(_ reader: inout EntityReader) throws(DataServiceError) -> Int {
        let text = try reader.readNumberText()
        guard let count = Int(text), count >= 0 else { throw reader.mismatch("'\(text)' is not a count") }
        return count
    }
}
