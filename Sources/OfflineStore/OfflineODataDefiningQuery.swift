/// A query whose result the offline store downloads and keeps: `Customers`,
/// `Orders?$filter=ShipCountry eq 'France'`, `Customers?$expand=Orders`.
///
/// The query is relative to the service root, names an entity set first and may carry
/// `$filter`, `$expand`, `$select`, `$orderby`, `$top` and `$skip`, and `$count=true` (V2:
/// `$inlinecount=allpages`) to have the back end announce how many entities come: the download's progress
/// (``OfflineODataDownloadProgress/total``) then has a total. It is checked when it is added to a provider
/// (``OfflineODataProvider/add(definingQuery:)``).
public struct OfflineODataDefiningQuery: Sendable, Hashable {
    /// A name unique within a provider.
    public let name: String
    /// The query, relative to the service root.
    public let query: String
    /// Whether the media resources (`$value`) of the query's media entities (`HasStream`) and the stream properties
    /// (`Edm.Stream`) of its entities are downloaded too, into the encrypted store, a chunk at a time (see
    /// ``OfflineODataProvider/readMedia(of:property:)``).
    public let automaticallyRetrievesStreams: Bool
    /// Primitive properties of the query's entity set that the store indexes, so `$filter` comparisons on them
    /// (`eq`, `ne`, `lt`…`ge`, `in`, `startswith`) and `$orderby` with `$top` read the index instead of the set.
    ///
    /// The key is always indexed. Indexes are created at the next download, or at `open()` for a store that has
    /// the set already; a property that is not a primitive property of the set fails that download with
    /// `OfflineODataError.invalidRequest`. An index costs disk space and time on every write to its set.
    public let indexes: [String]

    /// Creates a defining query.
    ///
    /// - Parameters:
    ///   - name: A name unique within a provider.
    ///   - query: The query relative to the service root, for example `Orders?$expand=Order_Details`.
    ///   - automaticallyRetrievesStreams: Whether media streams are downloaded too. The default is `false`.
    ///   - indexes: Primitive properties of the query's entity set to index, for example `["Country", "OrderDate"]`.
    ///     The default is none (the key only).
    public init(name: String, query: String, automaticallyRetrievesStreams: Bool = false, indexes: [String] = []) {
        self.name = name
        self.query = query
        self.automaticallyRetrievesStreams = automaticallyRetrievesStreams
        self.indexes = indexes
    }
}
