import ODataCore
/// A failed request has one type, the ErrorArchive's entry: the delegate and the upload's result report the entry the
/// archive holds.
@_exported public import struct ODataTyped.ErrorArchiveEntry

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
    /// The entities the back end announced for the whole query (`@odata.count`, V2 `__count`), when the defining
    /// query asked for the count (`$count=true`, V2 `$inlinecount=allpages`) in a full read; `nil` when no count
    /// came — a delta read, or a query that did not ask. Never estimated.
    public var total: Int?

    /// Creates a progress report.
    ///
    /// - Parameters:
    ///   - definingQuery: The defining query's name.
    ///   - entities: Entities received so far.
    ///   - bytes: Bytes received so far.
    ///   - isComplete: Whether the query is complete.
    ///   - total: The entities the back end announced for the whole query, if it did.
    public init(definingQuery: String, entities: Int, bytes: Int, isComplete: Bool, total: Int? = nil) {
        self.definingQuery = definingQuery
        self.entities = entities
        self.bytes = bytes
        self.isComplete = isComplete
        self.total = total
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

    /// A queued request failed during an upload (called exactly once per failed request).
    ///
    /// - Parameters:
    ///   - provider: The provider.
    ///   - failure: The request and its error: the entry the `ErrorArchive` holds for it, committed before this call.
    func offlineODataProvider(_ provider: OfflineODataProvider, requestDidFail failure: ErrorArchiveEntry)

    /// An upload made progress (after each queued request is settled).
    ///
    /// - Parameters:
    ///   - provider: The provider.
    ///   - progress: Requests settled so far and the queue length at the start.
    func offlineODataProvider(_ provider: OfflineODataProvider, didUpdateUploadProgress progress: OfflineODataUploadProgress)

    /// An upload resolved a conflict by ``OfflineODataParameters/conflictPolicy`` without archiving it (called once
    /// per resolved request, after its store change is committed). A conflict it could not resolve is a failure
    /// (``offlineODataProvider(_:requestDidFail:)``) like any other.
    ///
    /// - Parameters:
    ///   - provider: The provider.
    ///   - resolved: The three versions and what was done.
    func offlineODataProvider(_ provider: OfflineODataProvider, didResolveConflict resolved: OfflineODataResolvedConflict)
}

/// Progress of an upload.
public struct OfflineODataUploadProgress: Sendable, Hashable {
    /// Requests settled so far (accepted or failed) in this upload.
    public var settled: Int
    /// Requests queued when the upload started (requests queued during it are added as they come).
    public var total: Int
    /// The ID of the request just settled.
    public var requestID: Int64

    /// Creates a progress value.
    ///
    /// - Parameters:
    ///   - settled: Requests settled so far.
    ///   - total: Requests to settle.
    ///   - requestID: The request just settled.
    public init(settled: Int, total: Int, requestID: Int64) {
        self.settled = settled
        self.total = total
        self.requestID = requestID
    }
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

    /// Does nothing.
    ///
    /// - Parameters:
    ///   - provider: The provider.
    ///   - failure: The failure.
    public func offlineODataProvider(_ provider: OfflineODataProvider, requestDidFail failure: ErrorArchiveEntry) {}

    /// Does nothing.
    ///
    /// - Parameters:
    ///   - provider: The provider.
    ///   - progress: The progress.
    public func offlineODataProvider(_ provider: OfflineODataProvider, didUpdateUploadProgress progress: OfflineODataUploadProgress) {}

    /// Does nothing.
    ///
    /// - Parameters:
    ///   - provider: The provider.
    ///   - resolved: The resolution.
    public func offlineODataProvider(_ provider: OfflineODataProvider, didResolveConflict resolved: OfflineODataResolvedConflict) {}
}
