import Foundation
import HTTPTypes

/// A store that executes requests of the shared request model: `OnlineODataStore` (through its cache
/// and the network) and `OfflineODataProvider` (against its local store) both adopt it, so the typed
/// `DataService` of `ODataTyped` works over either. What is specific to a store (cache modes and listeners,
/// upload, download) stays on the store.
public protocol DataServiceProvider: Sendable {
    /// The service root every request path is relative to, ending with `/`.
    var serviceRoot: String { get }

    /// Executes one request and returns its final response.
    /// - Parameter request: the request; its path is relative to ``serviceRoot``.
    /// - Returns: the response; `nil` when a read has no answer (passive mode with nothing cached).
    /// - Throws: the store's error: the back end's ``ODataServiceError``, a transport error, a local error.
    ///
    /// Called on the caller's executor (`nonisolated(nonsending)`): a store that answers locally (the offline store's
    /// reads) answers without a hop to another executor and back; a plain `async` implementation still satisfies it.
    nonisolated(nonsending) func executeRequest(_ request: ODataRequest) async throws -> ODataResponse?

    /// Reads the page a response's next link names.
    /// - Parameter nextLink: the `@odata.nextLink` (V2 `__next`) of an earlier page, absolute or relative.
    /// - Returns: the next page.
    /// - Throws: as ``executeRequest(_:)``.
    nonisolated(nonsending) func executeNextLink(_ nextLink: String) async throws -> ODataResponse?
}

/// A store whose answers to a read can be observed as they change: the offline store
/// (`OfflineODataProvider.observe(_:)`), so the typed `DataService.observe(_:matching:)` works over it.
public protocol ObservingDataServiceProvider: DataServiceProvider {
    /// The answers to a read: the current one at once, then a new one after every change that can change it,
    /// coalesced (never an older answer after a newer one); ending when the iterating task is cancelled or the store
    /// closes.
    /// - Parameter request: a `GET` request; its path is relative to ``serviceRoot``.
    /// - Returns: the answers.
    /// - Throws: the store's error for a request it cannot answer.
    func observe(_ request: ODataRequest) throws -> AsyncThrowingStream<ODataResponse, any Error>
}

extension DataServiceProvider {
    /// Reads a next link as a GET of its path and query, relative to the service root.
    public nonisolated(nonsending) func executeNextLink(_ nextLink: String) async throws -> ODataResponse? {
        try await executeRequest(try ODataRequest(link: nextLink, serviceRoot: serviceRoot))
    }
}

extension ODataRequest {
    /// A GET of a link a service gave (a next link, an edit link): absolute under `serviceRoot`, or relative
    /// to it; its path is percent-decoded by ``PercentDecoding`` (a `+` stays a plus), its query is kept exactly
    /// as sent.
    /// - Parameters:
    ///   - link: the link.
    ///   - serviceRoot: the service root, ending with `/`.
    /// - Throws: ``ODataError`` `.invalidURL` for an absolute link outside the service root, or a path with a `%`
    ///   that starts no `%XX` or that decodes to bytes that are not UTF-8 (with the offset in the path).
    public init(link: String, serviceRoot: String) throws(ODataError) {
        var relative = link
        if link.hasPrefix("http://") || link.hasPrefix("https://") {
            guard link.hasPrefix(serviceRoot) else { throw ODataError(.invalidURL, "the link is not under the service root") }
            relative = String(link.dropFirst(serviceRoot.count))
        } else if relative.hasPrefix("/") {
            guard let rootPath = serviceRoot.firstRange(of: "://").flatMap({ serviceRoot[$0.upperBound...].firstIndex(of: "/") }),
                  relative.hasPrefix(serviceRoot[rootPath...]) else {
                throw ODataError(.invalidURL, "the link is not under the service root")
            }
            relative = String(relative.dropFirst(serviceRoot[rootPath...].count))
        }
        let parts = relative.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let options = parts.count > 1 ? parts[1].split(separator: "&").map { QueryOption.encoded(String($0)) } : []
        let path: String
        do { path = try PercentDecoding.decodeString(String(parts[0])) } catch {
            throw ODataError(.invalidURL, "the path of the link '\(link)': \(error.message)", offset: error.offset)
        }
        self.init(method: .get, resourcePath: path, queryOptions: options)
    }
}
