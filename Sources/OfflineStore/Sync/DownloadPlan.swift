import ODataCore

/// The decisions of a download (``OfflineODataProvider/download(definingQueries:)``), pure as ``UploadMachine`` is:
/// which read each defining query gets, what becomes of its delta link, and what each staged answer does to the local
/// copy of an entity. The provider performs the reads and the writes and tells the plan what came back; nothing here
/// reads the network or the store, or waits.
///
/// A defining query the last download knew and gave a delta link is read through that link; an expired link (the
/// back end's `410`) has the delta's staged changes discarded and the query read in full. Every other chosen query is
/// read in full. A query's new delta link is the one its read ended with; a read that ended with none drops the link
/// (the next download reads that query in full). Defining queries removed since the last download lose their links.
struct DownloadPlan: Sendable {
    /// What the provider does next.
    enum Action: Sendable, Hashable {
        /// Read the changes behind `link` (``OfflineODataProvider/deltaRead(_:link:store:)``), then
        /// ``DownloadPlan/read(_:endedWith:)`` or ``DownloadPlan/deltaExpired(_:)``.
        case readDelta(OfflineODataDefiningQuery, link: String)
        /// Drop what the expired delta staged for the query, then ``DownloadPlan/discarded(_:)``.
        case discardStagedDelta(OfflineODataDefiningQuery)
        /// Read the query in full (``OfflineODataProvider/fullRead(_:store:)``), then ``DownloadPlan/read(_:endedWith:)``.
        case readFull(OfflineODataDefiningQuery)
    }

    /// Where the current query stands.
    private enum Step: Sendable, Hashable {
        case start, readingDelta, expired, discarded, readingFull
    }

    /// The defining queries this download reads, in the provider's order.
    let chosen: [OfflineODataDefiningQuery]
    /// The queries read in full (a full read releases what it no longer brings).
    private(set) var fullQueries: Set<String> = []
    /// The queries the last download had and the provider no longer has (their entities are released).
    let removedQueries: Set<String>
    private let known: Set<String>
    private let definingQueries: [OfflineODataDefiningQuery]
    private let lastLinks: [String: String]
    private var newLinks: [String: String] = [:]
    private var index = 0
    private var step = Step.start

    /// A plan for the queries named (all when nil).
    ///
    /// - Parameters:
    ///   - names: The defining queries to download; nil for all of them.
    ///   - definingQueries: The provider's defining queries now.
    ///   - configuration: The store's configuration, as the last download left it.
    init(names: [String]?, definingQueries: [OfflineODataDefiningQuery], configuration: StoreConfiguration) {
        chosen = definingQueries.filter { names?.contains($0.name) ?? true }
        known = Set(configuration.definingQueries.map(\.name))
        removedQueries = known.subtracting(definingQueries.map(\.name))
        self.definingQueries = definingQueries
        lastLinks = configuration.deltaLinks
    }

    /// The next read, or nil once every chosen query is read.
    mutating func next() -> Action? {
        guard index < chosen.count else { return nil }
        let query = chosen[index]
        switch step {
        case .start:
            if known.contains(query.name), let link = lastLinks[query.name] {
                step = .readingDelta
                return .readDelta(query, link: link)
            }
            fallthrough
        case .discarded:
            step = .readingFull
            fullQueries.insert(query.name)
            return .readFull(query)
        case .expired:
            return .discardStagedDelta(query)
        case .readingDelta, .readingFull:
            preconditionFailure("DownloadPlan.next() while \(query.name)'s read is under way")
        }
    }

    /// The current query's read ended, with the delta link the back end gave last (nil for none).
    mutating func read(_ query: OfflineODataDefiningQuery, endedWith deltaLink: String?) {
        precondition(current == query && (step == .readingDelta || step == .readingFull), "DownloadPlan: no read of \(query.name) is under way")
        newLinks[query.name] = deltaLink
        index += 1
        step = .start
    }

    /// The current query's delta link expired: its staged changes are discarded next, then it is read in full.
    mutating func deltaExpired(_ query: OfflineODataDefiningQuery) {
        precondition(current == query && step == .readingDelta, "DownloadPlan: no delta read of \(query.name) is under way")
        step = .expired
    }

    /// What the expired delta of the current query staged is gone: its full read is next.
    mutating func discarded(_ query: OfflineODataDefiningQuery) {
        precondition(current == query && step == .expired, "DownloadPlan: \(query.name)'s delta did not expire")
        step = .discarded
    }

    private var current: OfflineODataDefiningQuery? { index < chosen.count ? chosen[index] : nil }

    /// The configuration the download commits: each chosen query's new delta link (or none), the removed queries'
    /// links gone, the provider's defining queries.
    func configuration(after configuration: StoreConfiguration) -> StoreConfiguration {
        var configuration = configuration
        for query in chosen { configuration.deltaLinks[query.name] = newLinks[query.name] }
        for name in removedQueries { configuration.deltaLinks[name] = nil }
        configuration.definingQueries = definingQueries
        return configuration
    }
}

extension DownloadPlan {
    /// What an apply does to one stored entity.
    enum RecordChange: Sendable, Hashable {
        /// Nothing: a write would change no byte.
        case none
        /// Write the record.
        case put(EntityRecord)
        /// Delete the record.
        case remove
    }

    /// A record some defining queries no longer hold: those queries dropped; a downloaded record no query holds goes.
    static func released(_ record: EntityRecord, from queries: Set<String>) -> RecordChange {
        var record = record
        record.queries.removeAll { queries.contains($0) }
        return record.queries.isEmpty && !record.hasLocalState ? .remove : .put(record)
    }

    /// A record held by a query read in full or by a removed query: released from both unless the full read brought
    /// it again (then from the removed queries only; nothing when there are none).
    static func held(_ record: EntityRecord, readAgainInFull: Bool, fullQueries: Set<String>, removedQueries: Set<String>) -> RecordChange {
        if readAgainInFull { return removedQueries.isEmpty ? .none : released(record, from: removedQueries) }
        return released(record, from: fullQueries.union(removedQueries))
    }

    /// A staged entity over the stored one (nil: a new entity, whose order the caller gives). A record with local
    /// state keeps it and is marked to be read again once released; otherwise a full read replaces the properties and
    /// a delta's changed entity — which carries the properties that changed (OData JSON 4.01 §15.3) — is merged in,
    /// unless a full read of the same download brought the entity too. Links are merged; the queries added.
    static func arrived(_ incoming: EntityRecord, kind: EntityStore.StagedKind, over stored: EntityRecord?, alsoReadInFull: Bool) -> RecordChange {
        guard var record = stored else { return .put(incoming) }
        for name in incoming.queries where !record.queries.contains(name) { record.queries.append(name) }
        if record.hasLocalState {
            record.needsRefresh = true
        } else {
            if kind == .delta && !alsoReadInFull {
                for (name, value) in incoming.entity { record.entity[name] = value }
            } else {
                record.entity = incoming.entity
            }
            for (name, value) in incoming.links { record.links[name] = value }
            record.needsRefresh = false
        }
        // An entity the back end did not change costs a read, not a write (a full re-download brings mostly those;
        // a write re-encrypts its pages and its indexes' pages).
        return record == stored ? .none : .put(record)
    }

    /// An OData 4.0 added or deleted link (§15.5.2) on its source: the navigation gains or loses the target (a deleted
    /// link with no target empties it). A source with local state keeps its links.
    static func linked(_ record: EntityRecord, _ change: EntityStore.StagedLink) -> RecordChange {
        guard !record.hasLocalState else { return .none }
        var record = record
        var targets = record.links[change.relationship]?.arrayValue ?? []
        if change.isRemoved {
            targets.removeAll { change.target == nil || $0.stringValue == change.target }
        } else if let target = change.target, !targets.contains(where: { $0.stringValue == target }) {
            targets.append(.string(target))
        }
        record.links[change.relationship] = .array(targets)
        return .put(record)
    }

    /// An entity read again by key (see ``EntityStore/recordsNeedingRefresh()``): the back end's copy replaces the
    /// properties and its links are merged; gone on the back end (nil), it goes. One that gained local state since
    /// stays as it is.
    static func refreshed(_ record: EntityRecord, with fresh: EntityRecord?) -> RecordChange {
        guard !record.hasLocalState else { return .none }
        guard let fresh else { return .remove }
        var record = record
        record.entity = fresh.entity
        for (name, value) in fresh.links { record.links[name] = value }
        record.needsRefresh = false
        return .put(record)
    }
}
