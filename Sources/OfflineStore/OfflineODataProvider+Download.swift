import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore

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
            throw OfflineODataError(.downloadFailed, "GET \(url) answered \(response.status): \(serviceError.code) \(serviceError.message)")
        }
        return response.body
    }

    /// Downloads every defining query and stores the result in one write transaction, so a
    /// download that fails half way leaves nothing behind.
    func initialDownload(store: EntityStore) async throws {
        guard !definingQueryList.isEmpty else {
            throw OfflineODataError(.invalidDefiningQuery, "a new offline store needs at least one defining query")
        }
        let metadataBytes = try await fetch(serviceRoot + "$metadata", accept: "application/xml")
        let model = try ServiceModel.parse(metadataBytes)
        self.model = model
        var ingest = Ingest(model: model)
        var deltaLinks: [String: String] = [:]
        for query in definingQueryList {
            if let link = try await fullRead(query, into: &ingest) { deltaLinks[query.name] = link }
        }
        let configuration = StoreConfiguration(serviceRoot: serviceRoot, definingQueries: definingQueryList, downloadComplete: true,
                                               deltaLinks: deltaLinks, metadata: String(decoding: metadataBytes, as: UTF8.self),
                                               user: parameters.currentUser)
        var counters = StoreCounters()
        counters.nextOrder = ingest.nextOrder
        let records = Array(ingest.records.values)
        let finalCounters = counters
        try await store.write { changes in
            try changes.wipeEntities()
            try changes.clearQueue()
            for record in records { try changes.put(record) }
            try changes.putCounters(finalCounters)
            try changes.putConfiguration(configuration)
        }
        self.configuration = configuration
        self.counters = counters
    }

    /// Reads one defining query completely (following next links, asking for change tracking)
    /// into `ingest`, reporting progress.
    ///
    /// - Returns: The delta link the back end gave, if any.
    func fullRead(_ query: OfflineODataDefiningQuery, into ingest: inout Ingest) async throws -> String? {
        let parsed = try ParsedQuery(query.query, serviceRoot: serviceRoot)
        guard let set = try ingest.targetSet(of: parsed.path) else {
            throw OfflineODataError(.invalidDefiningQuery, "defining query '\(query.name)': '\(parsed.rawPath)' does not name an entity set of the service")
        }
        let single = parsed.path.segments.last?.key != nil
            || (parsed.path.segments.count == 2 && model.entityType(ofSet: parsed.path.segments[0].name)?.navigation[parsed.path.segments[1].name]?.isCollection == false)
        var next: String? = serviceRoot + parsed.relativeURL()
        var entities = 0
        var bytes = 0
        var deltaLink: String?
        while let url = next {
            let body = try await fetch(url, trackChanges: !single)
            bytes += body.count
            next = nil
            do {
                if single {
                    _ = try ingest.add(try ODataPayload.decodeEntity(body).jsonV4, set: set, query: query.name)
                    entities += 1
                } else {
                    let page = try ODataPayload.decodeEntitySet(body)
                    for entity in page.entities { _ = try ingest.add(entity.jsonV4, set: set, query: query.name) }
                    entities += page.entities.count
                    if let link = page.nextLink { next = try absolute(link) }
                    if let link = page.deltaLink { deltaLink = link }
                }
            } catch let error as ODataError {
                throw OfflineODataError(.downloadFailed, "defining query '\(query.name)': the answer of GET \(url) is not an OData payload: \(error.message)")
            }
            reportProgress(OfflineODataDownloadProgress(definingQuery: query.name, entities: entities, bytes: bytes, isComplete: next == nil))
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

    init(model: ServiceModel) {
        self.model = model
    }

    /// The entity set a defining query's path leads to.
    func targetSet(of path: LocalPath) throws -> String? {
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
        var links = JSONObject()
        for (name, value) in object {
            if name.hasPrefix("@") {
                if name == "@odata.etag" { properties.append(value, forKey: name) }
                continue
            }
            if name.contains("@") { continue }
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
        if var existing = records[reference] {
            var merged = existing.entity
            for (name, value) in properties { merged[name] = value }
            existing.entity = merged
            for (name, value) in links { existing.links[name] = value }
            if !existing.queries.contains(query) { existing.queries.append(query) }
            records[reference] = existing
        } else {
            records[reference] = EntityRecord(set: set, key: key, order: nextOrder, state: .downloaded, entity: properties, original: nil,
                                              links: links, queries: [query])
            nextOrder += 1
        }
        return reference
    }
}
