import Foundation
import Logging
import ODataTelemetry
import ODataCore

extension OfflineODataProvider {
    /// Brings the store up to date with the back end.
    ///
    /// Each defining query is read again: through its delta link when the back end gave one
    /// (changed entities are applied, `@removed` ones go), else in full and merged by key (entities
    /// the back end no longer returns go). An expired delta link (410) falls back to a full read.
    /// Entities with pending local requests or in error state keep their local state; once released
    /// (uploaded, or their ErrorArchive entry deleted) the next download reads them again. Defining
    /// queries added since the last download are read in full; the data of removed ones goes
    /// (unless another defining query still holds it).
    ///
    /// Memory holds one page at a time, whatever the sets' sizes: each page is spooled as it arrives into
    /// a staging table of the store's (encrypted) database, in a small transaction of its own. Everything is
    /// applied from there in one write transaction at the end, which reads the staging table back in chunks
    /// and empties it, so a download that fails half way changes nothing (what it staged is dropped when the
    /// next download begins); local changes made while the download runs are kept.
    ///
    /// It runs on the background threads (``OfflineODataParameters/backgroundExecutor``), at their lower priority,
    /// beside the process's other work; the caller is resumed where it runs.
    ///
    /// - Parameter names: The defining queries to download, by name; `nil` for all of them.
    /// - Throws: `OfflineODataError` — `.notOpen`, `.invalidRequest` while an upload or download runs,
    ///   `.invalidDefiningQuery` for an unknown name,
    ///   `.downloadFailed` when the back end cannot be read, `.invalidNextLink` naming the entity set and the page
    ///   whose next link cannot be read (nothing is applied), `.storage`.
    public nonisolated func download(definingQueries names: [String]? = nil) async throws {
        try await parameters.backgroundExecutor.run { try await self.performDownload(names) }
    }

    /// ``download(definingQueries:)``, on the actor.
    private func performDownload(_ names: [String]?) async throws {
        let store = try openStore()
        guard var configuration else { throw OfflineODataError(.notOpen, "the offline store is not open") }
        guard currentState == .open else { throw OfflineODataError(.invalidRequest, "an upload or download is already running") }
        if let names {
            for name in names where !definingQueryList.contains(where: { $0.name == name }) {
                throw OfflineODataError(.invalidDefiningQuery, "there is no defining query named '\(name)'")
            }
        }
        setState(.downloading)
        defer { setState(.open) }
        try await reported(.download) {
            do {
                try await downloadQueries(names, configuration: &configuration, store: store)
            } catch {
                // Not needed for correctness (the next download empties it before anything reads it): frees the space
                // now. A store that cannot be written is left as it is; the error above is what the caller gets, and
                // this one is logged.
                do {
                    try await store.write { changes in try changes.clearStaging() }
                } catch let cleanup {
                    parameters.telemetry.logger.warning("offline download: the staged pages of the failed download stay until the next one", metadata: [
                        "store": .string(parameters.storeName), "error": .string(String(describing: cleanup)),
                    ])
                }
                throw error
            }
        }
    }

    /// Reads the defining queries named (all when nil) into the staging table and applies them (see
    /// ``download(definingQueries:)``): the reads and writes ``DownloadPlan`` decides.
    private func downloadQueries(_ names: [String]?, configuration: inout StoreConfiguration, store: EntityStore) async throws {
        var plan = DownloadPlan(names: names, definingQueries: definingQueryList, configuration: configuration)

        // Network first, page by page into the staging table; the entity tables are not written until every answer is in.
        try await store.beginStaging()
        while let action = plan.next() {
            switch action {
            case .readDelta(let query, let link):
                do {
                    plan.read(query, endedWith: try await deltaRead(query, link: link, store: store))
                } catch is DeltaExpired {
                    plan.deltaExpired(query)
                }
            case .discardStagedDelta(let query):
                // What the delta staged goes (its removals and link changes too); the query is read in full next.
                try await store.discardStagedChanges(of: query.name)
                plan.discarded(query)
            case .readFull(let query):
                plan.read(query, endedWith: try await fullRead(query, store: store))
            }
        }
        let refreshed = try await readFlaggedRecords(store: store)
        let firstOrder = self.counters.nextOrder
        let (fullNames, removedNames) = (plan.fullQueries, plan.removedQueries)
        let newConfiguration = plan.configuration(after: configuration)
        configuration = newConfiguration

        let order = try await store.write { changes in
            var counters = try changes.currentCounters()
            var order = max(firstOrder, counters.nextOrder)
            func perform(_ change: DownloadPlan.RecordChange, _ set: String, _ key: String) throws {
                switch change {
                case .none: break
                case .put(let record): try changes.put(record)
                case .remove: try changes.remove(set: set, key: key)
                }
            }
            try changes.forEachStagedRemoval { removal in
                guard let record = try changes.current(set: removal.set, key: removal.key) else { return }
                try perform(DownloadPlan.released(record, from: [removal.query]), record.set, record.key)
            }
            try changes.forEachRecord(heldBy: fullNames.union(removedNames)) { record in
                let again = try changes.isStaged(set: record.set, key: record.key, kind: .full)
                try perform(DownloadPlan.held(record, readAgainInFull: again, fullQueries: fullNames, removedQueries: removedNames), record.set, record.key)
            }
            // The full reads' entities first, then the deltas'.
            for kind in [EntityStore.StagedKind.full, .delta] {
                try changes.forEachStaged(kind) { incoming in
                    let stored = try changes.current(set: incoming.set, key: incoming.key)
                    let alsoFull = try stored != nil && kind == .delta && changes.isStaged(set: incoming.set, key: incoming.key, kind: .full)
                    var change = DownloadPlan.arrived(incoming, kind: kind, over: stored, alsoReadInFull: alsoFull)
                    if stored == nil, case .put(var record) = change {
                        record.order = order
                        order += 1
                        change = .put(record)
                    }
                    try perform(change, incoming.set, incoming.key)
                }
            }
            try changes.forEachStagedLink { link in
                guard let record = try changes.current(set: link.set, key: link.key) else { return }
                try perform(DownloadPlan.linked(record, link), record.set, record.key)
            }
            for (set, key, entity) in refreshed {
                guard let record = try changes.current(set: set, key: key) else { continue }
                try perform(DownloadPlan.refreshed(record, with: entity), set, key)
            }
            counters.nextOrder = order
            try changes.putCounters(counters)
            try changes.putConfiguration(newConfiguration)
            try changes.clearStaging()
            return order
        }
        counters.nextOrder = max(counters.nextOrder, order)
        self.configuration = newConfiguration
        try await downloadMedia(plan.chosen, store: store)
    }

    /// Entities whose local copy may be behind (a download skipped them while they had local state, or their failed
    /// change was given up) and that no answer of this download brings, read again by key (found through the partial
    /// index of flagged rows, not by reading the sets); nil for one the back end no longer has.
    private func readFlaggedRecords(store: EntityStore) async throws -> [(set: String, key: String, entity: EntityRecord?)] {
        var refreshed: [(set: String, key: String, entity: EntityRecord?)] = []
        for record in try store.recordsNeedingRefresh() {
            if try store.isStaged(set: record.set, key: record.key) { continue }
            var single = Ingest(model: model)
            let url = serviceRoot + PercentEncoding.encodePath(record.reference)
            guard let body = try await fetch(url, trackChanges: false, missingIsNil: true) else {
                refreshed.append((record.set, record.key, nil))
                continue
            }
            let reference: String
            do {
                reference = try single.add(try ODataPayload.decodeEntity(body).jsonV4, set: record.set, query: "")
            } catch let error as ODataError {
                throw OfflineODataError(.downloadFailed, "the answer of GET \(url) is not an OData entity: \(error.message)")
            }
            guard reference == record.reference, let fresh = single.records[reference] else {
                throw OfflineODataError(.downloadFailed, "GET \(url) answered the entity \(reference)")
            }
            refreshed.append((record.set, record.key, fresh))
        }
        return refreshed
    }

    /// Reads the changes behind a delta link, following next and delta links.
    ///
    /// Every form of the OData JSON Format a producer may send is read (docs/notes/payloads.md): changed
    /// entities and tombstones identified by their key properties or only by `@id` / `@odata.id` (absolute or
    /// relative; the key comes from the id through `$metadata`), 4.0 deleted entities (`#Set/$deletedEntity`
    /// with `id`), members of related sets named by their own context URL, 4.0 added and deleted links, V2
    /// `__deleted` / `__metadata.deleted`.
    ///
    /// Each page is spooled into the download's staging table as it arrives (``EntityStore/stage(_:kind:removals:links:)``):
    /// memory holds one page.
    ///
    /// - Returns: The new delta link, if the back end gave one.
    /// - Throws: `DeltaExpired` for a 410 (the caller reads in full), `OfflineODataError.downloadFailed` otherwise —
    ///   for a member that cannot be read, naming the entity set, its position and what is missing; `.invalidNextLink`
    ///   naming the entity set and the page whose next link cannot be read.
    func deltaRead(_ query: OfflineODataDefiningQuery, link: String, store: EntityStore) async throws -> String? {
        var deltaLink: String?
        try await readPages(query, .delta(link: link)) { page in
            var ingest = Ingest(model: self.model)
            var removals: [EntityStore.StagedRemoval] = []
            var links: [EntityStore.StagedLink] = []
            for (position, entity) in page.changes.entities.enumerated() {
                let memberSet = entity.contextEntitySet.flatMap { self.model.entitySets[$0] == nil ? nil : $0 } ?? page.set
                let identity: EntityID
                do throws(OfflineODataError) { identity = try self.identify(entity, set: memberSet) } catch {
                    throw OfflineODataError(.downloadFailed, "entity \(position + 1) of '\(memberSet)' in the delta answer of GET \(page.url) (defining query '\(query.name)'): \(error.message)")
                }
                if entity.isRemoved {
                    removals.append(EntityStore.StagedRemoval(query: query.name, set: identity.set, key: identity.key))
                } else {
                    var object = entity.jsonV4
                    for (name, value) in identity.values where object[name] == nil { object[name] = value }
                    _ = try ingest.add(object, set: identity.set, query: query.name)
                }
            }
            for (position, change) in page.changes.links.enumerated() {
                do throws(OfflineODataError) {
                    let source = try EntityID.resolve(change.source, serviceRoot: self.serviceRoot, model: self.model)
                    let target = try change.target.map { target throws(OfflineODataError) in try EntityID.resolve(target, serviceRoot: self.serviceRoot, model: self.model) }
                    links.append(EntityStore.StagedLink(query: query.name, set: source.set, key: source.key, relationship: change.relationship,
                                                        target: target?.reference, isRemoved: change.isRemoved))
                } catch {
                    throw OfflineODataError(.downloadFailed, "link \(position + 1) in the delta answer of GET \(page.url) (defining query '\(query.name)'): \(error.message)")
                }
            }
            try await store.stage(ingest.inArrivalOrder, kind: .delta, removals: removals, links: links)
            if let link = page.deltaLink { deltaLink = link }
        }
        return deltaLink
    }

    /// Reads one defining query completely, spooling each page into the download's staging table as it
    /// arrives (``EntityStore/stage(_:kind:removals:links:)``: a download writes the entity tables only
    /// when every answer is in; memory holds one page).
    ///
    /// - Returns: The delta link the back end gave, if any.
    func fullRead(_ query: OfflineODataDefiningQuery, store: EntityStore) async throws -> String? {
        var deltaLink: String?
        try await readPages(query, .full(from: nil)) { page in
            var ingest = Ingest(model: self.model)
            for entity in page.entities { _ = try ingest.add(entity, set: page.set, query: query.name) }
            try await store.stage(ingest.inArrivalOrder, kind: .full)
            if let link = page.deltaLink { deltaLink = link }
        }
        return deltaLink
    }

    /// The set and key of a delta member: from all its key properties, else from its entity-id.
    private func identify(_ entity: ODataEntity, set: String) throws(OfflineODataError) -> EntityID {
        guard let type = model.entityType(ofSet: set) else {
            throw OfflineODataError(.downloadFailed, "no entity type is known for '\(set)'")
        }
        if type.key.allSatisfy({ entity.properties[$0].map { !$0.isNull } ?? false }) {
            let key = try CanonicalKey.render(entity.properties, type: type)
            return EntityID(set: set, key: key, values: type.key.map { ($0, CanonicalKey.coerce(entity.properties[$0]!, type: type.propertyTypes[$0])) })
        }
        guard let id = entity.id ?? entity.editLink else {
            let missing = type.key.filter { entity.properties[$0] == nil }
            throw OfflineODataError(.downloadFailed, "it has neither an @id nor its key propert\(missing.count == 1 ? "y" : "ies") \(missing.joined(separator: ", "))")
        }
        return try EntityID.resolve(id, serviceRoot: serviceRoot, model: model)
    }
}

