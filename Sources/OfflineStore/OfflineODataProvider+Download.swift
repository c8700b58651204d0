import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import ODataQuery

extension OfflineODataProvider {
    /// The headers every back-end request carries: `Accept`, the parameters' headers, and the
    /// current user's credentials.
    func backEndHeaders(accept: String = "application/json") -> HTTPFields {
        var fields = HTTPFields()
        fields[.accept] = accept
        fields[HTTPField.Name("OData-Version")!] = "4.0"
        var extra = parameters.httpHeaders
        if let user = credentialsUser ?? parameters.currentUser, let credentials = parameters.credentials[user] {
            extra.merge(credentials) { _, new in new }
        }
        for (name, value) in extra.sorted(by: { $0.key < $1.key }) {
            if let fieldName = HTTPField.Name(name) { fields[fieldName] = value }
        }
        return fields
    }

    /// GETs `url` and returns the body of a 200 answer.
    func fetch(_ url: String, accept: String = "application/json", trackChanges: Bool = false) async throws -> Data {
        // Without `missingIsNil` a 404 throws, so the answer is never nil.
        try await fetch(url, accept: accept, trackChanges: trackChanges, missingIsNil: false)!
    }

    /// Reads `url` from the back end; with `missingIsNil`, a 404 or 410 answers `nil`.
    ///
    /// - Throws: `OfflineODataError.downloadFailed` for a transport error or any other status than 200.
    func fetch(_ url: String, accept: String = "application/json", trackChanges: Bool = false, missingIsNil: Bool) async throws -> Data? {
        var response: TransportResponse
        do {
            var headers = backEndHeaders(accept: accept)
            if trackChanges { headers[HTTPField.Name("Prefer")!] = "odata.track-changes" }
            response = try await transport().send(TransportRequest(method: "GET", url: url, headerFields: headers))
            if trackChanges && (response.status == 400 || response.status == 501) {
                // Change tracking is a preference (RFC 7240), yet some producers (mock-sap, for a set
                // without a change timestamp) refuse the request: ask again without it; the set is then
                // downloaded in full each time, as for a producer that ignores the preference.
                headers[HTTPField.Name("Prefer")!] = nil
                response = try await transport().send(TransportRequest(method: "GET", url: url, headerFields: headers))
            }
        } catch {
            throw OfflineODataError(.downloadFailed, "GET \(url) failed: \(error)")
        }
        if missingIsNil && (response.status == 404 || response.status == 410) { return nil }
        guard response.status == 200 else {
            let serviceError = ODataServiceError.parse(response.body, statusCode: response.status)
            throw OfflineODataError(.downloadFailed, "GET \(url) answered \(response.status): \(serviceError.code) \(serviceError.message)",
                                    httpStatus: response.status)
        }
        return response.body
    }

    /// Downloads every defining query, committing each page as it arrives (memory stays bounded by a
    /// page), and resumes an initial download that did not finish — failed, or its process killed — at
    /// the first page not committed.
    ///
    /// Until the last page is in, the configuration says where to go on (``DownloadResume``) and the
    /// store does not count as downloaded: `open()` resumes (same service root and defining queries; else
    /// it starts over), nothing else reads it. A resumed link the back end no longer accepts starts
    /// the download over at the next `open()`.
    ///
    /// The rows go in with their key alone; the other indexes are built once the last page is in, one pass each
    /// (`EntityStore+Indexes.swift`; an index a killed process did not build is built at the next `open()`).
    func initialDownload(store: EntityStore) async throws {
        guard !definingQueryList.isEmpty else {
            throw OfflineODataError(.invalidDefiningQuery, "a new offline store needs at least one defining query")
        }
        var configuration: StoreConfiguration
        var counters: StoreCounters
        let resumed: Bool
        if let (stored, storedCounters) = try store.configuration(), !stored.downloadComplete, stored.resume != nil,
           stored.serviceRoot == serviceRoot, stored.definingQueries == definingQueryList {
            model = try ServiceModel.parse(Data(stored.metadata.utf8))
            configuration = stored
            counters = storedCounters
            resumed = true
        } else {
            let metadataBytes = try await fetch(serviceRoot + "$metadata", accept: "application/xml")
            model = try ServiceModel.parse(metadataBytes)
            configuration = StoreConfiguration(serviceRoot: serviceRoot, definingQueries: definingQueryList, downloadComplete: false,
                                               deltaLinks: [:], metadata: String(decoding: metadataBytes, as: UTF8.self),
                                               user: parameters.currentUser, resume: DownloadResume(query: 0))
            counters = StoreCounters()
            let (start, startCounters) = (configuration, counters)
            try await store.write { changes in
                try changes.wipeEntities()
                try changes.clearQueue()
                try changes.putCounters(startCounters)
                try changes.putConfiguration(start)
            }
            resumed = false
        }
        store.deferringIndexes.withLock { $0 = true }
        defer { store.deferringIndexes.withLock { $0 = false } }
        var firstRead = true
        while var resume = configuration.resume {
            let query = definingQueryList[resume.query]
            do {
                try await readPages(query, from: resume.next, entities: resume.entities, bytes: resume.bytes) { page in
                    firstRead = false
                    var ingest = Ingest(model: self.model, nextOrder: counters.nextOrder)
                    for entity in page.entities { _ = try ingest.add(entity, set: page.set, query: query.name) }
                    counters.nextOrder = ingest.nextOrder
                    resume.next = page.next
                    (resume.entities, resume.bytes) = (page.totalEntities, page.totalBytes)
                    if let link = page.deltaLink { configuration.deltaLinks[query.name] = link }
                    if page.next == nil {
                        let following = resume.query + 1
                        resume = DownloadResume(query: following)
                        configuration.resume = following < self.definingQueryList.count ? resume : nil
                        configuration.downloadComplete = configuration.resume == nil
                    } else {
                        configuration.resume = resume
                    }
                    let records = ingest.inArrivalOrder
                    let (pageConfiguration, pageCounters) = (configuration, counters)
                    try await store.write { changes in
                        for record in records { try changes.putDownloaded(record) }
                        try changes.putCounters(pageCounters)
                        try changes.putConfiguration(pageConfiguration)
                    }
                }
            } catch let error as OfflineODataError where resumed && firstRead && resume.next != nil && error.httpStatus.map({ (400..<500).contains($0) }) == true {
                // The back end refuses the stored link (an expired skip token): start over next time.
                var abandoned = configuration
                abandoned.resume = nil
                let restart = abandoned
                try await store.write { changes in try changes.putConfiguration(restart) }
                throw OfflineODataError(.downloadFailed, "the initial download could not resume (\(error.message)); the next open starts it over")
            }
        }
        store.deferringIndexes.withLock { $0 = false }
        try store.buildMissingIndexes(model: model)
        self.configuration = configuration
        self.counters = counters
    }

    /// One page of a defining query's answer, as ``readPages(_:from:entities:bytes:_:)`` hands it on.
    struct DownloadedPage {
        /// The entity set the defining query reads.
        var set: String
        /// The page's entities (V4 JSON with annotations and expanded navigation properties).
        var entities: [JSONObject]
        /// The absolute URL of the next page; nil on the last page.
        var next: String?
        /// The delta link of the last page, if the back end gave one.
        var deltaLink: String?
        /// Entities and bytes of this defining query so far, this page included.
        var totalEntities: Int
        var totalBytes: Int
    }

    /// Reads a defining query page by page (following next links, asking for change tracking) from `next`
    /// (nil: its first page), hands each page to `body` and reports progress after it.
    func readPages(
        _ query: OfflineODataDefiningQuery, from next: String?, entities: Int = 0, bytes: Int = 0,
        _ body: (DownloadedPage) async throws -> Void
    ) async throws {
        let parsed = try LocalRequest(query.query, serviceRoot: serviceRoot)
        guard let set = try Ingest(model: model).targetSet(of: parsed.path) else {
            throw OfflineODataError(.invalidDefiningQuery, "defining query '\(query.name)': '\(parsed.rawPath)' does not name an entity set of the service")
        }
        let single = parsed.path.segments.last?.key != nil
            || (parsed.path.segments.count == 2 && model.entityType(ofSet: parsed.path.segments[0].name)?.navigation[parsed.path.segments[1].name]?.isCollection == false)
        var next: String? = next ?? serviceRoot + parsed.relativeURL()
        var (entities, bytes) = (entities, bytes)
        while let url = next {
            let answer = try await fetch(url, trackChanges: !single)
            bytes += answer.count
            var page = DownloadedPage(set: set, entities: [], totalEntities: 0, totalBytes: bytes)
            do {
                if single {
                    page.entities = [try ODataPayload.decodeEntity(answer).jsonV4]
                } else {
                    let decoded = try ODataPayload.decodeEntitySetAsV4(answer)
                    page.entities = decoded.entities
                    page.next = try decoded.nextLink.map(absolute)
                    page.deltaLink = decoded.deltaLink
                }
            } catch let error as ODataError {
                throw OfflineODataError(.downloadFailed, "defining query '\(query.name)': the answer of GET \(url) is not an OData payload: \(error.message)")
            }
            entities += page.entities.count
            page.totalEntities = entities
            next = page.next
            try await body(page)
            reportProgress(OfflineODataDownloadProgress(definingQuery: query.name, entities: entities, bytes: bytes, isComplete: next == nil))
        }
    }

    /// Reads one defining query completely, spooling each page into the download's staging table as it
    /// arrives (``EntityStore/stage(_:kind:removals:links:)``: a download writes the entity tables only
    /// when every answer is in; memory holds one page).
    ///
    /// - Returns: The delta link the back end gave, if any.
    func fullRead(_ query: OfflineODataDefiningQuery, store: EntityStore) async throws -> String? {
        var deltaLink: String?
        try await readPages(query, from: nil) { page in
            var ingest = Ingest(model: self.model)
            for entity in page.entities { _ = try ingest.add(entity, set: page.set, query: query.name) }
            try await store.stage(ingest.inArrivalOrder, kind: .full)
            if let link = page.deltaLink { deltaLink = link }
        }
        return deltaLink
    }

    /// A next or delta link made absolute under the service root.
    func absolute(_ link: String) throws -> String {
        if link.hasPrefix("http://") || link.hasPrefix("https://") { return link }
        return try ODataRequest.join(serviceRoot: serviceRoot, relative: link)
    }
}

/// Collects downloaded entities into records: properties apart from navigation properties,
/// `$expand`ed entities stored in their own sets, and links kept for navigation.
struct Ingest {
    let model: ServiceModel
    var records: [String: EntityRecord] = [:]
    var nextOrder: Int64 = 1

    /// The records in the order they came (keys in order go into an index in order).
    var inArrivalOrder: [EntityRecord] { records.values.sorted { $0.order < $1.order } }

    init(model: ServiceModel, nextOrder: Int64 = 1) {
        self.model = model
        self.nextOrder = nextOrder
    }

    /// The entity set a defining query's path leads to.
    func targetSet(of path: ResourcePath) throws -> String? {
        guard let first = path.segments.first, model.entitySets[first.name] != nil else { return nil }
        var set = first.name
        for segment in path.segments.dropFirst() {
            guard let next = model.targetSet(from: set, navigation: segment.name) else { return nil }
            set = next
        }
        return set
    }

    /// Adds one entity (V4 JSON with annotations and expanded navigation properties).
    ///
    /// - Returns: The entity's reference, `Set(key)`.
    mutating func add(_ object: JSONObject, set: String, query: String) throws -> String {
        guard let type = model.entityType(ofSet: set) else {
            throw OfflineODataError(.downloadFailed, "no entity type known for the set '\(set)'")
        }
        var properties = JSONObject()
        properties.reserveCapacity(object.count)
        var links = JSONObject()
        for (name, value) in object {
            if name.utf8.first == UInt8(ascii: "@") {
                if name == "@odata.etag" { properties.append(value, forKey: name) }
                continue
            }
            if name.utf8.contains(UInt8(ascii: "@")) { continue }
            if type.navigation[name] != nil {
                guard let target = model.targetSet(from: set, navigation: name) else { continue }
                switch value {
                case .array(let items):
                    var references: [JSONValue] = []
                    for item in items {
                        if let nested = item.objectValue { references.append(.string(try add(nested, set: target, query: query))) }
                    }
                    links.append(.array(references), forKey: name)
                case .object(let nested):
                    links.append(.array([.string(try add(nested, set: target, query: query))]), forKey: name)
                case .null:
                    links.append(.array([]), forKey: name)
                default:
                    break
                }
                continue
            }
            properties.append(value, forKey: name)
        }
        let key: String
        do { key = try CanonicalKey.render(properties, type: type) } catch {
            throw OfflineODataError(.downloadFailed, "an entity of '\(set)' has no complete key: \(error.message)")
        }
        let reference = set + key
        let downloaded = EntityRecord(set: set, key: key, order: nextOrder, state: .downloaded, entity: properties, original: nil,
                                      links: links, queries: [query])
        if let existing = records[reference] {
            records[reference] = existing.merging(downloaded: downloaded)
        } else {
            records[reference] = downloaded
            nextOrder += 1
        }
        return reference
    }
}
