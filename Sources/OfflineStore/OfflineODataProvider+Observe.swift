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
    /// nested `$expand` or a `$filter` that reads other entities: a navigation, a lambda, `$root`), `RequestQueue` and
    /// `ErrorArchive` for theirs. A commit of other sets costs one set comparison per observer. A commit that wrote
    /// rows of one of them makes the query run again — except for a read of a whole entity set with no other option
    /// than `$filter` (on the entity's own properties) and `$select`, without paging: its answer is kept row by row,
    /// and a commit that wrote a few of its rows (up to 64) changes it by reading those rows alone, by key, on the
    /// committing thread, so that the cost of a new answer does not grow with the set. An answer equal to the last
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
        let parsed = try LocalRequest(request: request)
        let sets = try Self.observedSets(parsed, model: model)
        let shape = try LiveAnswer.shape(parsed, model: model, serviceRoot: serviceRoot, pageSize: parameters.pageSize)
        let (answers, continuation) = AsyncThrowingStream.makeStream(of: ODataResponse.self, bufferingPolicy: .bufferingNewest(1))
        let emitter = LockedValue<Emitter>(Emitter())
        let give = { @Sendable (answer: ODataResponse, state: inout Emitter) in
            if answer.statusCode != state.last?.statusCode || answer.payload != state.last?.payload {
                continuation.yield(answer)
                state.last = answer
            }
        }
        // A commit that needs the query run again signals the task (a burst of commits, one run).
        let (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        // Observing before the first read: a commit between the two runs the query again, never goes unseen.
        let observer = ChangeFeed.Observer(sets: sets, signal: { change in
            // The rows of a commit change a kept answer at once, on the committing thread (a few key reads); what
            // needs the query run again goes to the task below, and so does a commit while the task runs it: the
            // committing thread never waits for a query (the lock guards a few rows' work at most).
            // Until the task has run it, the commits after go to the task too: no answer applies rows to an older one.
            if let shape, emitter.withLock({ state in
                guard !state.running, var live = state.live, let keys = change.keys(of: shape.set) else {
                    state.live = nil
                    return false
                }
                do {
                    if try live.apply(keys, store: store, query: LocalQuery(store: store, model: model)) { give(live.response, &state) }
                    state.live = live
                    return true
                } catch {
                    state.live = nil  // the task runs the query again, and reports what fails
                    return false
                }
            }) { return }
            signal.yield()
        }, end: { signal.finish() })
        guard let id = store.changeFeed.add(observer) else {
            throw OfflineODataError(.notOpen, "the offline store is not open")
        }
        do {
            let first = try read(request)
            emitter.withLock { give(first, &$0) }
        } catch {
            store.changeFeed.remove(id)
            throw error
        }
        let rerun = Task { [weak self] in
            for await _ in signals {
                guard let self, !Task.isCancelled else { break }
                do {
                    store.changeFeed.queriesRunAgain.withLock { $0 += 1 }
                    if let shape {
                        // Run outside the lock; a commit meanwhile finds `running` and signals this task again.
                        emitter.withLock { $0.running = true }
                        let built: LiveAnswer
                        do { built = try LiveAnswer(shape: shape, query: LocalQuery(store: store, model: model)) } catch {
                            emitter.withLock { $0.running = false }
                            throw error
                        }
                        emitter.withLock { state in
                            state.live = built
                            state.running = false
                            give(built.response, &state)
                        }
                    } else {
                        let answer = try self.read(request)
                        emitter.withLock { give(answer, &$0) }
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

    /// An observation's answer kept row by row and the last answer given, under one lock (answers are given under it,
    /// so none is older than the one before).
    struct Emitter: Sendable {
        var live: LiveAnswer?
        var last: ODataResponse?
        /// The observer's task is running the query (outside the lock): commits meanwhile go to it.
        var running = false
    }

    /// When the open store last committed a change of its data (`DispatchTime.now().uptimeNanoseconds` right after
    /// the commit; 0 before the first or when closed): what a benchmark measures the latency from a commit to a live
    /// query's answer with.
    @_spi(Instrumentation)
    public nonisolated var lastCommitUptimeNanoseconds: UInt64 {
        (try? readSnapshot.opened().0.changeFeed.lastPublished) ?? 0
    }

    /// How many observers the open store has (0 when closed): what a test proves a cancelled observation gone with.
    nonisolated var observerCount: Int {
        (try? readSnapshot.opened().0.changeFeed.count) ?? 0
    }

    /// The entity sets a read depends on (see ``observe(_:)``), or `nil` for every set.
    static func observedSets(_ parsed: LocalRequest, model: ServiceModel) throws(OfflineODataError) -> Set<String>? {
        guard let first = parsed.path.segments.first else { return nil }
        var set = first.name
        var sets: Set<String> = [set]
        for segment in parsed.path.segments.dropFirst() where !segment.name.hasPrefix("$") {
            guard let next = model.targetSet(from: set, navigation: segment.name) else { return nil }
            set = next
            sets.insert(next)
        }
        // A filter that reads other entities (a navigation, a lambda, `$root`) may change with any set.
        if parsed.options.contains(where: { $0.name == "$filter" }), let filter = try LocalQuery.options(parsed.options).filter,
           let type = model.entityType(ofSet: set), !LiveAnswer.readsItsRowOnly(filter, navigation: Set(type.navigation.keys)) {
            return nil
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
