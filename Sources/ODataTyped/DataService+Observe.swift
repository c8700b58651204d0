import Foundation
import HTTPTypes
import ODataCore

extension DataService {
    /// The entities of `set` matching `query`, again after every change that can change them: the offline store's
    /// live query (`OfflineODataProvider.observe(_:)`) over generated types. The current page at once, then a new
    /// one after every committed local change, download or upload that writes a set the query reads; coalesced (a
    /// slow consumer gets the newest page, never an older one after a newer one); ending when the iterating task is
    /// cancelled or the store closes.
    ///
    /// Each element is one page, as ``executeQuery(_:)`` reads it: with a store that pages its answers
    /// (`OfflineODataParameters.pageSize`), give the query a `top` it fits in, or read on with ``nextPage(of:)``.
    ///
    /// ```swift
    /// for try await page in try service.observe(service.products, matching: DataQuery().filter(Product.unitsInStock < 10)) {
    ///     show(page.entities)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - set: the entity set.
    ///   - query: the query (its own set, if any, is replaced by `set`).
    /// - Returns: the pages.
    /// - Throws: ``DataServiceError`` `.invalidQuery` for a provider that cannot observe (the online store: use its
    ///   `observe(_:every:)`) or a query the version cannot express; the store's error for the first answer. A later
    ///   page that does not fit `E` ends the sequence with `.typeMismatch`.
    public func observe<E>(_ set: EntitySet<E>, matching query: DataQuery<E> = DataQuery()) throws -> AsyncThrowingStream<QueryResult<E>, any Error> {
        guard let live = provider as? any ObservingDataServiceProvider else {
            throw DataServiceError(.invalidQuery, "\(type(of: provider)) cannot observe a query: only the offline store keeps answers live")
        }
        let request = ODataRequest(method: .get, resourcePath: set.name, queryOptions: try query.from(set).queryOptions(for: version))
        let answers = try live.observe(request)
        let (pages, continuation) = AsyncThrowingStream.makeStream(of: QueryResult<E>.self, bufferingPolicy: .bufferingNewest(1))
        let forward = Task {
            do {
                for try await answer in answers {
                    try Self.check(answer)
                    continuation.yield(try QueryResult.decode(answer.payload, entitySet: set.name))
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in forward.cancel() }
        return pages
    }
}
