/// The state of an offline store.
public enum OfflineODataStoreState: String, Sendable, Hashable {
    /// Not open.
    case closed
    /// `open()` runs (including the initial download).
    case opening
    /// Open and usable.
    case open
    /// A download runs.
    case downloading
    /// An upload runs.
    case uploading
}

/// Progress of a download: per defining query, the entities and bytes received so far.
public struct OfflineODataDownloadProgress: Sendable, Hashable {
    /// The defining query's name.
    public var definingQuery: String
    /// Entities received so far for that query.
    public var entities: Int
    /// Payload bytes received so far for that query.
    public var bytes: Int
    /// Whether that query is complete.
    public var isComplete: Bool

    /// Creates a progress report.
    ///
    /// - Parameters:
    ///   - definingQuery: The defining query's name.
    ///   - entities: Entities received so far.
    ///   - bytes: Bytes received so far.
    ///   - isComplete: Whether the query is complete.
    public init(definingQuery: String, entities: Int, bytes: Int, isComplete: Bool) {
        self.definingQuery = definingQuery
        self.entities = entities
        self.bytes = bytes
        self.isComplete = isComplete
    }
}

/// Receives an offline store's state changes and progress. Calls arrive on the provider's
/// executor, in order; keep them short.
public protocol OfflineODataDelegate: AnyObject, Sendable {
    /// The store's state changed.
    ///
    /// - Parameters:
    ///   - provider: The provider.
    ///   - state: The new state.
    func offlineODataProvider(_ provider: OfflineODataProvider, didChangeState state: OfflineODataStoreState)

    /// A download made progress.
    ///
    /// - Parameters:
    ///   - provider: The provider.
    ///   - progress: Entities and bytes so far for one defining query.
    func offlineODataProvider(_ provider: OfflineODataProvider, didUpdateDownloadProgress progress: OfflineODataDownloadProgress)
}

extension OfflineODataDelegate {
    /// Does nothing.
    ///
    /// - Parameters:
    ///   - provider: The provider.
    ///   - state: The new state.
    public func offlineODataProvider(_ provider: OfflineODataProvider, didChangeState state: OfflineODataStoreState) {}

    /// Does nothing.
    ///
    /// - Parameters:
    ///   - provider: The provider.
    ///   - progress: The progress.
    public func offlineODataProvider(_ provider: OfflineODataProvider, didUpdateDownloadProgress progress: OfflineODataDownloadProgress) {}
}
