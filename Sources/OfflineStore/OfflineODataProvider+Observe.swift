import Foundation
import ODataCore
import ODataQuery

/// Live queries (``OfflineODataProvider/observe(_:)``): a local read answered again after every committed change
/// that can change it.
extension OfflineODataProvider: ObservingDataServiceProvider {
    /// The answers to a local read as the store changes: the current answer at once, then a new one after every
    /// committed change that can change it — a local create, update or delete, a download, an upload's commits (a
    /// temporary key replaced by the back end's, an entity put into or out of error state), an ErrorArchive entry
    /// deleted.
    ///
    /// A change is matched to the query by the entity sets it reads: the set of its path and those its navigation
    /// segments lead to, the targets of the final set's navigation properties when it has `$expand` (every set for a
    /// nested `$expand`), `RequestQueue` and `ErrorArchive` for theirs. A commit that wrote a row of one of them makes
    /// the query run again (a commit of other sets costs one set comparison per observer); an answer equal to the last
    /// one is not emitted. Coalesced: the query runs again once for a burst of commits, and a consumer slower than
    /// the commits gets the newest answer, never an older one after a newer one (the buffer holds one answer).
    ///
    /// The sequence ends when the task iterating it is cancelled (its observer is removed at once) or the store
    /// closes; it throws when a later run of the query fails (`OfflineODataError.storage`).
    ///
    /// ```swift
    /// for try await answer in try provider.observe(ODataRequest(method: .get, resourcePath: "Products",
    ///                                                           queryOptions: [.filter("UnitsInStock lt 10")])) {
    ///     show(try ODataPayload.decodeEntitySet(answer.payload).entities)
    /// }
    /// ```
    ///
    /// - Parameter request: A `GET` request, as ``read(_:)`` takes it.
    /// - Returns: The answers.
    /// - Throws: As ``read(_:)`` for the first answer: `OfflineODataError.notOpen`, `.invalidRequest`, `.entityNotFound`.
    public nonisolated func observe(_ request: ODataRequest) throws -> AsyncThrowingStream<ODataResponse, any Error> {
        let (store, model) = try readSnapshot.opened()
        let sets = Self.observedSets(try LocalRequest(request: request), model: model)
        let (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        // Observing before the first read: a commit between the two runs the query again, never goes unseen.
        guard let id = store.changeFeed.add(ChangeFeed.Observer(sets: sets, signal: { signal.yield() }, end: { signal.finish() })) else {
            throw OfflineODataError(.notOpen, "the offline store is not open")
        }
        let first: ODataResponse
        do { first = try read(request) } catch {
            store.changeFeed.remove(id)
            throw error
        }
        let (answers, continuation) = AsyncThrowingStream.makeStream(of: ODataResponse.self, bufferingPolicy: .bufferingNewest(1))
        continuation.yield(first)
        let rerun = Task { [weak self] in
            var last = first
            for await _ in signals {
                guard let self, !Task.isCancelled else { break }
                do {
                    let answer = try self.read(request)
                    if answer.statusCode != last.statusCode || answer.payload != last.payload {
                        continuation.yield(answer)
                        last = answer
                    }
                } catch let error as OfflineODataError where error == .notOpen {
                    break  // closed between the commit and this run
                } catch {
                    continuation.finish(throwing: error)
                    store.changeFeed.remove(id)
                    return
                }
            }
            store.changeFeed.remove(id)
            continuation.finish()
        }
        continuation.onTermination = { _ in
            store.changeFeed.remove(id)
            signal.finish()
            rerun.cancel()
        }
        return answers
    }

    /// How many observers the open store has (0 when closed): what a test proves a cancelled observation gone with.
    nonisolated var observerCount: Int {
        (try? readSnapshot.opened().0.changeFeed.count) ?? 0
    }

    /// The entity sets a read depends on (see ``observe(_:)``), or `nil` for every set.
    static func observedSets(_ parsed: LocalRequest, model: ServiceModel) -> Set<String>? {
        guard let first = parsed.path.segments.first else { return nil }
        var set = first.name
        var sets: Set<String> = [set]
        for segment in parsed.path.segments.dropFirst() where !segment.name.hasPrefix("$") {
            guard let next = model.targetSet(from: set, navigation: segment.name) else { return nil }
            set = next
            sets.insert(next)
        }
        if let expand = parsed.options.first(where: { $0.name == "$expand" })?.value {
            if expand.contains("$expand") || expand.contains("*") { return nil }
            for (navigation, _) in model.entityType(ofSet: set)?.navigation ?? [:] {
                guard let target = model.targetSet(from: set, navigation: navigation) else { return nil }
                sets.insert(target)
            }
        }
        return sets
    }
}
