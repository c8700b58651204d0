public import ODataCore

extension OfflineODataProvider: DataServiceProvider {
    /// Executes a request against the local store (``execute(_:)``): reads answer locally, changes are
    /// applied locally and queued for upload.
    /// - Parameter request: the request.
    /// - Returns: the local response.
    /// - Throws: ``OfflineODataError``.
    public nonisolated(nonsending) func executeRequest(_ request: ODataRequest) async throws -> ODataResponse? {
        try await execute(request)
    }

    /// Reads a local next link (``execute(nextLink:)``).
    /// - Parameter nextLink: the link from an earlier local read.
    /// - Returns: the next page.
    /// - Throws: ``OfflineODataError``.
    public nonisolated(nonsending) func executeNextLink(_ nextLink: String) async throws -> ODataResponse? {
        try await execute(nextLink: nextLink)
    }
}
