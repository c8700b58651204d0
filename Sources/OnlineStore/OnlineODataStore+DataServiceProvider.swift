public import ODataCore

extension OnlineODataStore: DataServiceProvider {
    /// Executes a request in the calling task (``response(for:listener:)``): in active mode the server's
    /// answer (a `304` delivers the revalidated cached copy), in passive mode the cached copy or `nil`.
    /// - Parameter request: the request.
    /// - Returns: the final response.
    /// - Throws: the failure the execution reported (`ODataServiceError` for an error status).
    public func executeRequest(_ request: ODataRequest) async throws -> ODataResponse? {
        try await response(for: request)
    }
}
