public import ODataCore

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

/// A queued request that failed during an upload, reported once to the delegate and kept in the
/// `ErrorArchive`.
public struct OfflineODataFailedRequest: Sendable, Hashable {
    /// The queued request's ID.
    public var requestID: Int64
    /// The HTTP method.
    public var method: String
    /// The URL relative to the service root, as sent (or as it would have been sent).
    public var url: String
    /// The body, if any.
    public var body: String?
    /// The application's tag of the request.
    public var customTag: String?
    /// The HTTP status of the back end's answer; `nil` for a transport error or a request not sent.
    public var statusCode: Int?
    /// The back end's OData error, when it gave one.
    public var serviceError: ODataServiceError?
    /// What went wrong, for a person (the OData message, the transport error, or the failed request
    /// this one depended on).
    public var message: String
    /// `Set(key)` of the entity the request affected.
    public var affectedEntity: String

    /// Creates a report.
    ///
    /// - Parameters:
    ///   - requestID: The request's ID.
    ///   - method: The HTTP method.
    ///   - url: The relative URL.
    ///   - body: The body.
    ///   - customTag: The application's tag.
    ///   - statusCode: The HTTP status, if an answer came.
    ///   - serviceError: The OData error, if any.
    ///   - message: What went wrong.
    ///   - affectedEntity: The affected entity's reference.
    public init(requestID: Int64, method: String, url: String, body: String?, customTag: String?, statusCode: Int?,
                serviceError: ODataServiceError?, message: String, affectedEntity: String) {
        self.requestID = requestID
        self.method = method
        self.url = url
        self.body = body
        self.customTag = customTag
        self.statusCode = statusCode
        self.serviceError = serviceError
        self.message = message
        self.affectedEntity = affectedEntity
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
    ///   - failure: The request and its error.
    func offlineODataProvider(_ provider: OfflineODataProvider, requestDidFail failure: OfflineODataFailedRequest)

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
    public func offlineODataProvider(_ provider: OfflineODataProvider, requestDidFail failure: OfflineODataFailedRequest) {}

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
