import Foundation
import HTTPTypes
import ODataCore
import ODataQuery
import Synchronization

/// The producer itself, without HTTP: takes a request, changes or reads the data, and answers.
///
/// All state sits behind one lock and every request runs under it, so requests are
/// serializable and a change set can run on a copy of the state that is kept or dropped whole.
final class FixtureService: Sendable {
    struct StoredReplay: Sendable {
        let method: String
        let path: String
        let response: OutgoingResponse
    }

    struct State: Sendable {
        var data: FixtureData
        /// Delta tokens below this sequence number are expired (410).
        var deltaFloor: Int64 = 0
        var replays: [String: StoredReplay] = [:]
    }

    let configuration: FixtureConfiguration
    let initialData: FixtureData
    let counters = RequestCounters()
    let faults = FaultInjector()
    /// Distinguishes this instance's delta tokens from any other's.
    let instanceID: String
    private let state: LockedValue<State>
    private let root = LockedValue<String>("http://127.0.0.1/")
    /// How V2 collection pages write `__next` now (``FixtureConfiguration/v2NextLink`` at start).
    let v2NextLink: LockedValue<FixtureConfiguration.V2NextLink>
    /// Whether the producer speaks V2 (``FixtureConfiguration/protocolVersion``).
    var isV2: Bool { configuration.protocolVersion == .v2 }

    init(configuration: FixtureConfiguration, data: FixtureData) {
        self.configuration = configuration
        self.initialData = data
        self.state = LockedValue(State(data: data))
        self.instanceID = String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16)
        self.v2NextLink = LockedValue(configuration.v2NextLink)
    }

    var model: ServiceModel { initialData.model }

    /// The absolute service root URL, ending in `/`.
    var serviceRoot: String {
        get { root.withLock { $0 } }
        set { root.withLock { $0 = newValue } }
    }

    // MARK: Producer-side access

    func withData<Result: Sendable>(_ body: (inout FixtureData) throws -> Result) throws -> Result {
        try state.withLock { state in
            var copy = state.data
            let result = try body(&copy)
            state.data = copy
            return result
        }
    }

    func resetData() {
        state.withLock { state in
            // Keep the change sequence moving forward so old ETags and delta tokens stay invalid.
            let floor = state.data.sequence + 1
            state = State(data: initialData)
            state.deltaFloor = floor
            state.data.advanceSequence(to: floor)
        }
    }

    func expireDeltaTokens() {
        state.withLock { state in
            // Tokens carry the sequence they were issued at; later ones start at the new floor.
            state.data.sequence += 1
            state.deltaFloor = state.data.sequence
        }
    }

    func forgetRepeatableRequests() {
        state.withLock { $0.replays.removeAll() }
    }

    // MARK: Entry point

    /// Handles one request that arrived over HTTP.
    func handle(_ request: IncomingRequest) -> OutgoingResponse {
        state.withLock { state in
            executeOnce(request, state: &state) { execute(request, state: &$0) }
        }
    }

    /// Runs `body` once per `Repeatability-Request-ID`: a request (or `$batch` member) whose ID was
    /// seen before gets the stored response again, marked replayed, without executing anything;
    /// an ID first used for another method or path is refused with 422.
    private func executeOnce(
        _ request: IncomingRequest, state: inout State, _ body: (inout State) -> OutgoingResponse
    ) -> OutgoingResponse {
        guard let id = request.headers[.repeatabilityRequestID], !id.isEmpty else { return body(&state) }
        if let stored = state.replays[id] {
            guard stored.method == request.method, stored.path == request.path else {
                return .error(
                    ServiceFailure(
                        422, "RepeatabilityMismatch",
                        "Repeatability-Request-ID \(id) was first used for \(stored.method) \(stored.path)"))
            }
            counters.recordReplayed(method: request.method, path: request.decodedPath)
            var response = stored.response
            response.headers[.repeatabilityResult] = "accepted"
            response.headers[.fixtureReplayed] = "true"
            return response
        }
        var response = body(&state)
        response.headers[.repeatabilityResult] = "accepted"
        state.replays[id] = StoredReplay(method: request.method, path: request.path, response: response)
        return response
    }

    private func effectiveMethod(_ request: IncomingRequest) -> String {
        if request.method == "POST", let tunnelled = request.headers[.xHTTPMethod], !tunnelled.isEmpty {
            return tunnelled.uppercased()
        }
        return request.method
    }

    /// Executes a request on the given state (the live one, or a change set's copy).
    func execute(_ incoming: IncomingRequest, state: inout State, contentIDs: [String: String] = [:]) -> OutgoingResponse {
        var request = incoming
        request.method = effectiveMethod(incoming)
        do {
            // A change set member may start its path with `$<Content-ID>`.
            if request.path.hasPrefix("$"), !request.path.hasPrefix("$metadata"), !request.path.hasPrefix("$batch") {
                let reference = String(request.path.dropFirst().prefix { $0 != "/" })
                guard let target = contentIDs[reference] else {
                    counters.recordExecuted(method: request.method, path: request.decodedPath)
                    throw ServiceFailure.badRequest("no earlier request in the change set has Content-ID \(reference)")
                }
                request.path = target + request.path.dropFirst(1 + reference.count)
            }
            counters.recordExecuted(method: request.method, path: request.decodedPath)
            switch request.path {
            case "":
                guard request.method == "GET" else { throw methodNotAllowed(request) }
                return serviceDocument()
            case "$metadata":
                guard request.method == "GET" else { throw methodNotAllowed(request) }
                var response = OutgoingResponse(status: 200, body: Array((isV2 ? model.edmx1 : model.csdl).utf8))
                response.headers[.contentType] = "application/xml"
                return response
            case "$batch":
                guard request.method == "POST" else { throw methodNotAllowed(request) }
                return try batch(request, state: &state)
            default:
                return try resource(request, state: &state)
            }
        } catch let failure as ServiceFailure {
            return .error(failure)
        } catch let error as FixtureError {
            return .error(ServiceFailure(error))
        } catch {
            return .error(ServiceFailure(500, "InternalError", "\(error)"))
        }
    }

    private func methodNotAllowed(_ request: IncomingRequest) -> ServiceFailure {
        ServiceFailure(405, "MethodNotAllowed", "\(request.method) is not allowed on '\(request.decodedPath)'")
    }

    private func serviceDocument() -> OutgoingResponse {
        let sets: [JSONValue] = model.entitySets.map { set in
            ["name": .string(set.name), "kind": "EntitySet", "url": .string(set.name)]
        }
        return .json(200, ["@odata.context": .string(serviceRoot + "$metadata"), "value": .array(sets)])
    }

    // MARK: Resources

    /// What a resource path addresses.
    enum Target {
        /// A collection: a whole entity set (`members == nil`) or the entities a navigation leads to.
        case collection(set: String, members: [String]?, parent: Parent?)
        /// One existing entity.
        case entity(set: String, predicate: String)
        /// The entity a single-valued navigation leads to, which is absent (`null`).
        case absent(set: String)
        /// The count of a collection.
        case count(set: String, members: [String]?)
        /// A structural property of an entity, raw with `$value`.
        case property(set: String, predicate: String, name: String, raw: Bool)
        /// The media resource (`$value`) of a media entity (`property` `nil`), or a stream property of an entity.
        case media(set: String, predicate: String, property: String?)
    }

    /// The entity a collection navigation starts from, so a POST to it can link the new entity.
    struct Parent {
        let set: String
        let predicate: String
        let navigation: ServiceModel.NavigationProperty
    }

    func resolve(_ path: String, data: FixtureData) throws -> Target {
        let parsed: ResourcePath
        do { parsed = try ResourcePath.parse(path) } catch {
            throw ServiceFailure.badRequest("the resource path '\(IncomingRequest.decodedForDisplay(path))' is invalid: \(error.message)")
        }
        var segments = parsed.segments[...]
        guard let first = segments.popFirst(), case .name(let setName) = first.kind else {
            throw ServiceFailure.notFound("no resource at '\(path)'")
        }
        guard model.entitySet(setName) != nil else { throw ServiceFailure.notFound("no entity set named \(setName)") }
        var target = Target.collection(set: setName, members: nil, parent: nil)
        if let key = first.key {
            target = .entity(set: setName, predicate: try entityPredicate(key, set: setName, members: nil, data: data))
        }
        while let segment = segments.popFirst() {
            switch (target, segment.kind) {
            case (.collection(let set, let members, _), .count):
                guard segments.isEmpty else { throw ServiceFailure.badRequest("$count must be the last segment") }
                target = .count(set: set, members: members)
            case (.entity(let set, let predicate), .name(let name)):
                let type = try data.entityType(of: set)
                if let navigation = type.navigationProperty(name) {
                    let (targetSet, related) = try self.related(
                        of: data.stored(in: set, predicate: predicate)!.value, in: set, navigation: navigation, data: data)
                    if navigation.isCollection {
                        target = .collection(
                            set: targetSet, members: related,
                            parent: Parent(set: set, predicate: predicate, navigation: navigation))
                        if let key = segment.key {
                            target = .entity(
                                set: targetSet,
                                predicate: try entityPredicate(key, set: targetSet, members: related, data: data))
                        }
                    } else {
                        if segment.key != nil { throw ServiceFailure.badRequest("\(name) is single-valued; it takes no key") }
                        target = related.first.map { .entity(set: targetSet, predicate: $0) } ?? .absent(set: targetSet)
                    }
                } else if type.property(name)?.type == "Edm.Stream" {
                    guard segments.isEmpty else { throw ServiceFailure.badRequest("the stream property \(name) must be the last segment") }
                    target = .media(set: set, predicate: predicate, property: name)
                } else if type.property(name) != nil {
                    target = .property(set: set, predicate: predicate, name: name, raw: false)
                } else {
                    throw ServiceFailure.notFound("\(set) has no property or navigation property named \(name)")
                }
            case (.entity(let set, let predicate), .value) where try data.entityType(of: set).hasStream:
                target = .media(set: set, predicate: predicate, property: nil)
            case (.property(let set, let predicate, let name, false), .value):
                target = .property(set: set, predicate: predicate, name: name, raw: true)
            default:
                throw ServiceFailure.notFound("the path segment '\(segment.name)' addresses nothing here")
            }
        }
        return target
    }

    /// The canonical predicate of a key from the URL; the entity must exist (and be a member).
    func entityPredicate(_ key: KeyPredicate, set: String, members: [String]?, data: FixtureData) throws -> String {
        let type = try data.entityType(of: set)
        var object = JSONObject()
        switch key {
        case .single(let value):
            guard type.keys.count == 1 else {
                throw ServiceFailure.badRequest("\(set) has the composite key \(type.keys.joined(separator: ",")); name each part")
            }
            object[type.keys[0]] = value
        case .named(let parts):
            for part in parts { object[part.name] = part.value }
            guard Set(parts.map(\.name)) == Set(type.keys), parts.count == type.keys.count else {
                throw ServiceFailure.badRequest("\(set) has the key \(type.keys.joined(separator: ",")), got \(key)")
            }
        }
        guard let predicate = EntityKey.predicate(of: object, type: type) else {
            throw ServiceFailure.badRequest("the key \(key) does not fit the key properties of \(set)")
        }
        guard data.stored(in: set, predicate: predicate) != nil, members?.contains(predicate) ?? true else {
            throw ServiceFailure.notFound("no entity \(set)\(predicate)")
        }
        return predicate
    }

    /// The target entity set and the predicates of the entities a navigation property leads to.
    /// - Parameter dependents: where a query that navigates from many entities keeps the dependents of each
    ///   partner constraint's values, built in one pass over the target set (without it every call scans the set).
    func related(
        of entity: JSONObject, in set: String, navigation: ServiceModel.NavigationProperty, data: FixtureData,
        dependents: DependentsIndex? = nil
    ) throws -> (String, [String]) {
        guard let targetSet = model.entitySet(set)?.bindings[navigation.name],
            let targetType = model.entityTypes[navigation.targetType], let storage = data.sets[targetSet]
        else {
            throw ServiceFailure(501, "NotImplemented", "navigation \(set)/\(navigation.name) has no binding to an entity set")
        }
        if !navigation.constraints.isEmpty {
            var key = JSONObject()
            for constraint in navigation.constraints {
                guard let value = entity[constraint.property], !value.isNull else { return (targetSet, []) }
                key[constraint.referencedProperty] = value
            }
            guard let predicate = EntityKey.predicate(of: key, type: targetType), storage.entities[predicate] != nil else {
                return (targetSet, [])
            }
            return (targetSet, [predicate])
        }
        if let partnerName = navigation.partner, let partner = targetType.navigationProperty(partnerName),
            !partner.constraints.isEmpty
        {
            let values = partner.constraints.map { entity[$0.referencedProperty] ?? .null }
            if let dependents {
                return (targetSet, dependents.members(of: targetSet, partner: partner, storage: storage)[values] ?? [])
            }
            let members = storage.order.filter { predicate in
                let dependent = storage.entities[predicate]!.value
                return zip(partner.constraints, values).allSatisfy { dependent[$0.property] == $1 }
            }
            return (targetSet, members)
        }
        // Many-to-many navigations have no join data in the fixture.
        return (targetSet, [])
    }

    private func resource(_ request: IncomingRequest, state: inout State) throws -> OutgoingResponse {
        if let answer = try reference(request, state: &state) { return answer }
        if let answer = try operation(request, state: &state) { return answer }
        let target = try resolve(request.path, data: state.data)
        switch request.method {
        case "GET":
            return try read(target, request: request, state: &state)
        case "POST":
            return try create(in: target, request: request, state: &state)
        case "PATCH" where isV2:
            throw ServiceFailure(400, "MethodNotAllowed", "Method not allowed: PATCH not supported here")
        case "PATCH", "MERGE", "PUT":
            return try update(target, request: request, replace: request.method == "PUT", state: &state)
        case "DELETE":
            return try delete(target, request: request, state: &state)
        default:
            throw methodNotAllowed(request)
        }
    }

    // MARK: Reads

    private func read(_ target: Target, request: IncomingRequest, state: inout State) throws -> OutgoingResponse {
        let data = state.data
        switch target {
        case .collection(let set, let members, let parent):
            let pieces = QueryString.pieces(request.query)
            if try pieces.contains(where: { try QueryString.name(of: $0) == "$deltatoken" }) {
                guard parent == nil else { throw ServiceFailure.badRequest("delta links are offered on entity sets only") }
                return try delta(set: set, request: request, state: state)
            }
            return try readCollection(set: set, members: members, parent: parent, request: request, state: state)
        case .entity(let set, let predicate):
            let stored = data.stored(in: set, predicate: predicate)!
            let etag = ETag.entity(version: stored.version)
            if let ifMatch = request.headers[.ifMatch], !ETag.list(ifMatch, contains: etag) {
                throw ServiceFailure(412, "PreconditionFailed", "If-Match \(ifMatch) does not match the entity's ETag \(etag)")
            }
            var headers = HTTPFields()
            headers[.eTag] = etag
            headers[.lastModified] = HTTPDate.format(stored.modified)
            if notModified(request.headers, etag: etag, modified: stored.modified) {
                return OutgoingResponse(status: 304, headers: headers)
            }
            var entity = annotated(stored, set: set, predicate: predicate)
            let pieces = QueryString.pieces(request.query)
            if !pieces.isEmpty {
                entity = try evaluate(
                    pieces: pieces, entities: [entity], set: set, data: data, allowCollectionOptions: false
                ).entities.first ?? entity
            }
            var body = JSONObject()
            body.append(.string(serviceRoot + "$metadata#\(set)/$entity"), forKey: "@odata.context")
            for (name, value) in entity { body.append(value, forKey: name) }
            if isV2 { body = ["d": .object(V2Envelope.entity(body))] }
            return .json(200, .object(body), headers: headers)
        case .absent:
            return OutgoingResponse(status: 204)
        case .media(let set, let predicate, let property):
            return try readMedia(set: set, predicate: predicate, property: property, request: request, data: data)
        case .count(let set, let members):
            let entities = try collectionEntities(set: set, members: members, data: data)
            let pieces = try QueryString.pieces(request.query).filter { ["$filter", "$search"].contains(try QueryString.name(of: $0)) }
            let count = try evaluate(pieces: pieces, entities: entities, set: set, data: data, allowCollectionOptions: true)
                .entities.count
            var response = OutgoingResponse(status: 200, body: Array(String(count).utf8))
            response.headers[.contentType] = "text/plain"
            return response
        case .property(let set, let predicate, let name, let raw):
            let stored = data.stored(in: set, predicate: predicate)!
            let value = stored.value[name] ?? .null
            var headers = HTTPFields()
            headers[.eTag] = ETag.entity(version: stored.version)
            if raw {
                if value.isNull { return OutgoingResponse(status: 204, headers: headers) }
                var response = OutgoingResponse(status: 200, headers: headers)
                switch value {
                case .string(let text): response.body = Array(text.utf8)
                default: response.body = JSON.serialize(value)
                }
                response.headers[.contentType] = "text/plain;charset=utf-8"
                return response
            }
            if value.isNull { return OutgoingResponse(status: 204, headers: headers) }
            return .json(
                200,
                ["@odata.context": .string(serviceRoot + "$metadata#\(set)\(predicate)/\(name)"), "value": value],
                headers: headers)
        }
    }

    func collectionEntities(set: String, members: [String]?, data: FixtureData) throws -> [JSONObject] {
        let storage = try data.storage(set)
        return (members ?? storage.order).map { annotated(storage.entities[$0]!, set: set, predicate: $0) }
    }

    /// One page of a collection and the `$skiptoken` of the next.
    struct Page {
        var entities: [JSONObject]
        var count: Int?
        var next: Int?
    }

    /// The page of a collection that starts at `offset`.
    ///
    /// When no option needs the whole collection (no `$orderby`, `$search`, `$count`, `$skip` or `$top`), the
    /// page costs what its entities cost: the collection is walked from `offset` in its stored order, a
    /// stretch at a time, until the page is full, and the token is the position after the last entity
    /// looked at (a `$filter` may leave the last page empty). Otherwise the options are applied to the
    /// whole collection and the token is a position in the result.
    private func collectionPage(
        set: String, members: [String]?, pieces: [String], offset: Int, pageSize: Int?, data: FixtureData
    ) throws -> Page {
        let needsWhole = ["$orderby", "$search", "$count", "$skip", "$top"]
        guard let pageSize, try !pieces.contains(where: { needsWhole.contains(try QueryString.name(of: $0)) }) else {
            let entities = try collectionEntities(set: set, members: members, data: data)
            let evaluated = try evaluate(pieces: pieces, entities: entities, set: set, data: data, allowCollectionOptions: true)
            let all = evaluated.entities
            let start = min(offset, all.count)
            let end = pageSize.map { min(start + $0, all.count) } ?? all.count
            return Page(entities: Array(all[start..<end]), count: evaluated.count, next: end < all.count ? end : nil)
        }
        let storage = try data.storage(set)
        let keys = members ?? storage.order
        var position = min(offset, keys.count)
        var entities: [JSONObject] = []
        repeat {  // at least once: options that do not parse fail on an empty collection too
            let end = min(keys.count, position + pageSize - entities.count)
            let stretch = keys[position..<end].map { annotated(storage.entities[$0]!, set: set, predicate: $0) }
            entities += try evaluate(pieces: pieces, entities: stretch, set: set, data: data, allowCollectionOptions: true).entities
            position = end
        } while entities.count < pageSize && position < keys.count
        return Page(entities: entities, count: nil, next: position < keys.count ? position : nil)
    }

    /// An entity with its `@odata.etag` first, then a media entity's `@odata.media…` annotations, then its properties,
    /// then each stream property's `Name@odata.media…` annotations.
    func annotated(_ stored: FixtureData.StoredEntity, set: String, predicate: String) -> JSONObject {
        var object = JSONObject()
        object.append(.string(ETag.entity(version: stored.version)), forKey: "@odata.etag")
        if let media = stored.media {
            for (name, value) in mediaAnnotations(media, set: set, predicate: predicate) { object.append(value, forKey: name) }
        }
        for (name, value) in stored.value { object.append(value, forKey: name) }
        for (property, stream) in stored.streams.sorted(by: { $0.key < $1.key }) {
            for (name, value) in mediaAnnotations(stream, set: set, predicate: predicate, property: property) { object.append(value, forKey: name) }
        }
        return object
    }

    private func notModified(_ headers: HTTPFields, etag: String, modified: Int64) -> Bool {
        if let ifNoneMatch = headers[.ifNoneMatch] { return ETag.list(ifNoneMatch, contains: etag) }
        if let since = headers[.ifModifiedSince].flatMap(HTTPDate.parse) { return modified <= since }
        return false
    }

    private func readCollection(
        set: String, members: [String]?, parent: Parent?, request: IncomingRequest, state: State
    ) throws -> OutgoingResponse {
        let data = state.data
        let preferences = Preferences(request.headers)
        var pieces = QueryString.pieces(request.query)
        var offset = 0
        if let tokenPiece = try pieces.first(where: { try QueryString.name(of: $0) == "$skiptoken" }) {
            let token = try QueryString.value(of: tokenPiece)
            guard let value = Int(token), value >= 0 else {
                throw ServiceFailure.badRequest("the $skiptoken '\(token)' is not one this service issued")
            }
            offset = value
            try pieces.removeAll { try QueryString.name(of: $0) == "$skiptoken" }
        }
        var applied: [String] = []
        let (pageSize, honored) = try self.pageSize(preferences)
        if let honored { applied.append(honored) }
        let page = try collectionPage(
            set: set, members: members, pieces: pieces, offset: offset, pageSize: pageSize, data: data)
        let tracking = preferences["odata.track-changes"] != nil && parent == nil && members == nil && !isV2

        var body = JSONObject()
        body.append(.string(serviceRoot + "$metadata#\(set)"), forKey: "@odata.context")
        if let count = page.count { body.append(.int(Int64(count)), forKey: "@odata.count") }
        body.append(.array(page.entities.map { .object($0) }), forKey: "value")
        let base = serviceRoot + request.path
        if let next = page.next {
            let next = (pieces + ["$skiptoken=\(next)"]).joined(separator: "&")
            body.append(.string(base + "?" + next), forKey: "@odata.nextLink")
        } else if tracking {
            let next = (try pieces.filter { !["$top", "$skip", "$count"].contains(try QueryString.name(of: $0)) }
                + ["$deltatoken=\(deltaToken(state.data.sequence))"]).joined(separator: "&")
            body.append(.string(base + "?" + next), forKey: "@odata.deltaLink")
        }
        if tracking { applied.append("odata.track-changes") }
        if isV2 { body = V2Envelope.collection(body, nextLink: v2NextLink.withLock { $0 }) }

        var response = OutgoingResponse.json(200, .object(body))
        let etag = ETag.payload(response.body)
        let modified = data.sets[set]!.modified
        response.headers[.eTag] = etag
        response.headers[.lastModified] = HTTPDate.format(modified)
        if !applied.isEmpty { response.headers[.preferenceApplied] = applied.joined(separator: ", ") }
        if notModified(request.headers, etag: etag, modified: modified) {
            response.status = 304
            response.body = []
            response.headers[.contentType] = nil
        }
        return response
    }

    // MARK: Delta

    private func deltaToken(_ sequence: Int64) -> String { "\(instanceID)-\(sequence)" }

    /// The page size of a collection or delta answer: `odata.maxpagesize` when the request prefers one (capped by
    /// `maximumPageSize`, and the preference to report as applied), else `defaultPageSize` (nil: no paging).
    private func pageSize(_ preferences: Preferences) throws -> (size: Int?, applied: String?) {
        guard let preferred = preferences["odata.maxpagesize"] else { return (configuration.defaultPageSize, nil) }
        guard let size = Int(preferred), size >= 1 else {
            throw ServiceFailure.badRequest("odata.maxpagesize must be a positive integer, got '\(preferred)'")
        }
        let honored = min(size, configuration.maximumPageSize)
        return (honored, "odata.maxpagesize=\(honored)")
    }

    /// The changes of `set` since the request's delta token, paged as a collection is (`defaultPageSize`, or
    /// `odata.maxpagesize`): each next link names the last change the first page saw, so the pages read one state of
    /// the change log; the last page's delta link starts after it.
    private func delta(set: String, request: IncomingRequest, state: State) throws -> OutgoingResponse {
        let data = state.data
        var pieces = QueryString.pieces(request.query)
        let token = try pieces.first { try QueryString.name(of: $0) == "$deltatoken" }.map(QueryString.value(of:)) ?? ""
        // A page after the first: `upto.offset`, the changes up to `upto` (as the first page saw them) from `offset` on.
        let skip = try pieces.first { try QueryString.name(of: $0) == "$skiptoken" }.map(QueryString.value(of:))
        try pieces.removeAll { ["$deltatoken", "$skiptoken"].contains(try QueryString.name(of: $0)) }
        let parts = token.split(separator: "-")
        guard parts.count == 2, parts[0] == instanceID, let since = Int64(parts[1]), since >= state.deltaFloor,
            since <= data.sequence
        else {
            throw ServiceFailure(410, "DeltaTokenExpired", "the delta token '\(token)' is unknown or expired; read \(set) again")
        }
        var (upto, offset) = (data.sequence, 0)
        if let skip {
            let skipParts = skip.split(separator: ".")
            guard skipParts.count == 2, let last = Int64(skipParts[0]), let from = Int(skipParts[1]), last >= since, last <= data.sequence, from >= 0 else {
                throw ServiceFailure.badRequest("the $skiptoken '\(skip)' is not one this service issued")
            }
            (upto, offset) = (last, from)
        }
        let (pageSize, honored) = try self.pageSize(Preferences(request.headers))
        let type = try data.entityType(of: set)
        var latest: [String: FixtureData.ChangeRecord] = [:]
        var firstChange: [String: FixtureData.ChangeRecord] = [:]
        var order: [String] = []
        for record in data.changeLog where record.sequence > since && record.sequence <= upto && record.set == set {
            if latest[record.predicate] == nil {
                order.append(record.predicate)
                firstChange[record.predicate] = record
            }
            latest[record.predicate] = record
        }
        let filterPieces = try pieces.filter { try QueryString.name(of: $0) == "$filter" }
        let shapePieces = try pieces.filter { ["$select", "$expand"].contains(try QueryString.name(of: $0)) }
        func matches(_ entity: JSONObject) throws -> Bool {
            if filterPieces.isEmpty { return true }
            return !(try evaluate(pieces: filterPieces, entities: [entity], set: set, data: data, allowCollectionOptions: true)
                .entities.isEmpty)
        }
        var value: [JSONValue] = []
        for predicate in order {
            let (first, record) = (firstChange[predicate]!, latest[predicate]!)
            // What the client saw: the entity as it was when the token was issued, if it matched then.
            let clientHadIt = try first.previous.map { try matches($0) } ?? false
            if let stored = data.stored(in: set, predicate: predicate), try matches(stored.value) {
                let entity = annotated(stored, set: set, predicate: predicate)
                let shaped = shapePieces.isEmpty
                    ? entity
                    : try evaluate(pieces: shapePieces, entities: [entity], set: set, data: data, allowCollectionOptions: true)
                        .entities.first ?? entity
                value.append(.object(identified(shaped, set: set, predicate: predicate, key: record.key)))
            } else if clientHadIt {
                let reason = data.stored(in: set, predicate: predicate) == nil ? "deleted" : "changed"
                value.append(.object(tombstone(set: set, predicate: predicate, key: record.key, reason: reason, type: type)))
            }
        }
        var body = JSONObject()
        body.append(.string(serviceRoot + "$metadata#\(set)/$delta"), forKey: "@odata.context")
        // Paged as a collection is (server-driven paging): a next link until the last page, which has the delta link.
        let start = min(offset, value.count)
        let end = pageSize.map { min(value.count, start + $0) } ?? value.count
        body.append(.array(Array(value[start..<end])), forKey: "value")
        if end < value.count {
            let next = (pieces + ["$deltatoken=\(token)", "$skiptoken=\(upto).\(end)"]).joined(separator: "&")
            body.append(.string(serviceRoot + request.path + "?" + next), forKey: "@odata.nextLink")
        } else {
            let next = (pieces + ["$deltatoken=\(deltaToken(upto))"]).joined(separator: "&")
            body.append(.string(serviceRoot + request.path + "?" + next), forKey: "@odata.deltaLink")
        }
        var headers = HTTPFields()
        headers[.preferenceApplied] = (["odata.track-changes"] + (honored.map { [$0] } ?? [])).joined(separator: ", ")
        return .json(200, .object(body), headers: headers)
    }

    /// A removed entity in a delta payload, in the form ``FixtureConfiguration/deltaIdentification`` asks for.
    private func tombstone(
        set: String, predicate: String, key: JSONObject, reason: String, type: ServiceModel.EntityType
    ) -> JSONObject {
        var object = JSONObject()
        switch configuration.deltaIdentification {
        case .keyProperties:
            object.append(["reason": .string(reason)], forKey: "@removed")
            object.append(.string(set + predicate), forKey: "@id")
            for (name, value) in key { object.append(value, forKey: name) }
        case .relativeID:
            object.append(["reason": .string(reason)], forKey: "@removed")
            object.append(.string(set + predicate), forKey: "@id")
        case .absoluteID:
            object.append(["reason": .string(reason)], forKey: "@odata.removed")
            object.append(.string(absoluteID(set: set, predicate: predicate)), forKey: "@odata.id")
        case .odata40:
            object.append(.string("#\(set)/$deletedEntity"), forKey: "@odata.context")
            object.append(.string(set + predicate), forKey: "id")
            object.append(.string(reason), forKey: "reason")
        }
        return object
    }

    /// A changed entity of a delta payload, identified as ``FixtureConfiguration/deltaIdentification`` asks.
    private func identified(_ entity: JSONObject, set: String, predicate: String, key: JSONObject) -> JSONObject {
        var object = JSONObject()
        switch configuration.deltaIdentification {
        case .keyProperties: return entity
        case .relativeID: object.append(.string(set + predicate), forKey: "@id")
        case .absoluteID: object.append(.string(absoluteID(set: set, predicate: predicate)), forKey: "@odata.id")
        case .odata40: object.append(.string(set + predicate), forKey: "@odata.id")
        }
        for (name, value) in entity where key[name] == nil { object.append(value, forKey: name) }
        return object
    }

    private func absoluteID(set: String, predicate: String) -> String {
        serviceRoot + PercentEncoding.encodePath(set + predicate).replacingOccurrences(of: "'", with: "%27")
    }

    // MARK: Changes

    func bodyObject(_ request: IncomingRequest) throws -> JSONObject {
        guard !request.body.isEmpty else { throw ServiceFailure.badRequest("the request needs a JSON entity body") }
        let value: JSONValue
        do { value = try JSON.parse(request.body) } catch {
            throw ServiceFailure.badRequest("the body is not JSON: \(error)")
        }
        guard let object = value.objectValue else { throw ServiceFailure.badRequest("the body must be a JSON object") }
        return object
    }

    /// Applies `Nav@odata.bind` members to the foreign keys of a single-valued navigation, and
    /// drops instance annotations.
    private func resolvingBindings(_ object: JSONObject, set: String, data: FixtureData) throws -> JSONObject {
        let type = try data.entityType(of: set)
        var result = JSONObject()
        for (name, value) in object {
            guard name.contains("@") else {
                result[name] = value
                continue
            }
            guard name.hasSuffix("@odata.bind") else { continue }
            let navigationName = String(name.dropLast("@odata.bind".count))
            guard let navigation = type.navigationProperty(navigationName), !navigation.isCollection,
                !navigation.constraints.isEmpty
            else {
                throw ServiceFailure.badRequest("\(name) must bind a single-valued navigation property with a referential constraint")
            }
            guard var reference = value.stringValue else { throw ServiceFailure.badRequest("\(name) must be a string") }
            if reference.hasPrefix(serviceRoot) { reference = String(reference.dropFirst(serviceRoot.count)) }
            guard case .entity(let targetSet, let predicate) = try resolve(reference, data: data) else {
                throw ServiceFailure.badRequest("\(name) must name one entity, got '\(reference)'")
            }
            let target = data.stored(in: targetSet, predicate: predicate)!.value
            for constraint in navigation.constraints {
                result[constraint.property] = target[constraint.referencedProperty]
            }
        }
        return result
    }

    func entityResponse(
        _ status: Int, set: String, predicate: String, data: FixtureData, extra: HTTPFields = [:]
    ) -> OutgoingResponse {
        let stored = data.stored(in: set, predicate: predicate)!
        var body = JSONObject()
        body.append(.string(serviceRoot + "$metadata#\(set)/$entity"), forKey: "@odata.context")
        for (name, value) in annotated(stored, set: set, predicate: predicate) { body.append(value, forKey: name) }
        var headers = extra
        headers[.eTag] = ETag.entity(version: stored.version)
        headers[.lastModified] = HTTPDate.format(stored.modified)
        return .json(status, .object(body), headers: headers)
    }

    private func create(in target: Target, request: IncomingRequest, state: inout State) throws -> OutgoingResponse {
        guard case .collection(let set, _, let parent) = target else {
            throw ServiceFailure(405, "MethodNotAllowed", "POST creates entities in collections only")
        }
        let isMedia = createsMediaEntity(set: set, request: request, data: state.data)
        var object = isMedia ? JSONObject() : try resolvingBindings(try bodyObject(request), set: set, data: state.data)
        if let parent, let partnerName = parent.navigation.partner,
            let partner = try state.data.entityType(of: set).navigationProperty(partnerName)
        {
            let parentEntity = state.data.stored(in: parent.set, predicate: parent.predicate)!.value
            for constraint in partner.constraints { object[constraint.property] = parentEntity[constraint.referencedProperty] }
        }
        let created = try state.data.insert(object, into: set)
        guard let predicate = EntityKey.predicate(of: created, type: try state.data.entityType(of: set)) else {
            throw ServiceFailure(500, "InternalError", "the created entity has no usable key")
        }
        if isMedia {
            _ = try state.data.replaceMedia(
                in: set, predicate: predicate, property: nil, bytes: request.body,
                contentType: request.headers[.contentType] ?? "application/octet-stream")
        }
        let location = serviceRoot + set + predicate
        var headers = HTTPFields()
        headers[.location] = location
        headers[.odataEntityID] = location
        if Preferences(request.headers)["return"] == "minimal" {
            let stored = state.data.stored(in: set, predicate: predicate)!
            headers[.eTag] = ETag.entity(version: stored.version)
            headers[.preferenceApplied] = "return=minimal"
            return OutgoingResponse(status: 204, headers: headers)
        }
        return entityResponse(201, set: set, predicate: predicate, data: state.data, extra: headers)
    }

    private func checkIfMatch(_ request: IncomingRequest, set: String, predicate: String, data: FixtureData) throws {
        guard let ifMatch = request.headers[.ifMatch] else { return }
        let etag = ETag.entity(version: data.stored(in: set, predicate: predicate)!.version)
        guard ETag.list(ifMatch, contains: etag) else {
            throw ServiceFailure(
                412, "PreconditionFailed", "If-Match \(ifMatch) does not match the current ETag \(etag) of \(set)\(predicate)")
        }
    }

    private func update(_ target: Target, request: IncomingRequest, replace: Bool, state: inout State) throws -> OutgoingResponse {
        if case .media(let set, let predicate, let property) = target {
            guard replace else { throw ServiceFailure(405, "MethodNotAllowed", "a media resource is replaced with PUT") }
            return try replaceMedia(set: set, predicate: predicate, property: property, request: request, state: &state)
        }
        guard case .entity(let set, let predicate) = target else {
            throw ServiceFailure(405, "MethodNotAllowed", "\(request.method) changes single entities only")
        }
        try checkIfMatch(request, set: set, predicate: predicate, data: state.data)
        let object = try resolvingBindings(try bodyObject(request), set: set, data: state.data)
        let key = state.data.stored(in: set, predicate: predicate)!.value
        let type = try state.data.entityType(of: set)
        var keyObject = JSONObject()
        for name in type.keys { keyObject[name] = key[name] }
        if replace {
            try state.data.replace(in: set, key: keyObject, with: object)
        } else {
            try state.data.update(in: set, key: keyObject, changes: object)
        }
        if Preferences(request.headers)["return"] == "representation" {
            var extra = HTTPFields()
            extra[.preferenceApplied] = "return=representation"
            return entityResponse(200, set: set, predicate: predicate, data: state.data, extra: extra)
        }
        let stored = state.data.stored(in: set, predicate: predicate)!
        var headers = HTTPFields()
        headers[.eTag] = ETag.entity(version: stored.version)
        headers[.lastModified] = HTTPDate.format(stored.modified)
        return OutgoingResponse(status: 204, headers: headers)
    }

    private func delete(_ target: Target, request: IncomingRequest, state: inout State) throws -> OutgoingResponse {
        guard case .entity(let set, let predicate) = target else {
            throw ServiceFailure(405, "MethodNotAllowed", "DELETE removes single entities only")
        }
        try checkIfMatch(request, set: set, predicate: predicate, data: state.data)
        let type = try state.data.entityType(of: set)
        let entity = state.data.stored(in: set, predicate: predicate)!.value
        var key = JSONObject()
        for name in type.keys { key[name] = entity[name] }
        try state.data.delete(from: set, key: key)
        return OutgoingResponse(status: 204)
    }

    // MARK: Batch

    /// Executes a `$batch` member unless a fault meant for batch members answers it; a member with
    /// its own `Repeatability-Request-ID` is executed once, like a request of its own.
    private func executeMember(
        _ request: IncomingRequest, state: inout State, contentIDs: [String: String] = [:]
    ) -> OutgoingResponse {
        let method = effectiveMethod(request)
        let decision = faults.decide(method: method, path: request.decodedPath, insideBatch: true)
        if case .fail(let status, let code, let message) = decision.action {
            counters.recordFaulted(method: method, path: request.decodedPath)
            return .error(ServiceFailure(status, code, message))
        }
        return executeOnce(request, state: &state) { execute(request, state: &$0, contentIDs: contentIDs) }
    }

    private func batch(_ request: IncomingRequest, state: inout State) throws -> OutgoingResponse {
        let contentType = request.headers[.contentType] ?? ""
        let isJSON = contentType.lowercased().hasPrefix("application/json")
        let decoded: BatchRequest
        do {
            decoded = isJSON
                ? try JSONBatch.decodeRequest(Data(request.body))
                : try MultipartBatch.decodeRequest(Data(request.body), contentType: contentType)
        } catch {
            throw ServiceFailure.badRequest("the $batch body cannot be read: \(error.message)")
        }
        let rootPath = configuration.serviceRootPath
        var parts: [BatchResponse.Part] = []
        for part in decoded.parts {
            switch part {
            case .request(let member):
                let response = executeMember(IncomingRequest(batchPart: member, serviceRootPath: rootPath), state: &state)
                parts.append(.response(response.odataResponse, contentID: nil))
            case .changeSet(let members) where members.count == 1:
                // One member: runs on the live state, as a request on its own does (copying the
                // state per change set cost O(entities) each).
                let member = members[0]
                let response = executeMember(IncomingRequest(batchPart: member.request, serviceRootPath: rootPath), state: &state)
                parts.append(response.status >= 400
                    ? .response(response.odataResponse, contentID: member.contentID)
                    : .changeSet([(member.contentID, response.odataResponse)]))
            case .changeSet(let members):
                // The change set runs on a copy of the state: all of it is kept, or none.
                var scratch = state
                var contentIDs: [String: String] = [:]
                var responses: [(contentID: String?, response: ODataResponse)] = []
                var failed: (String, OutgoingResponse)?
                for member in members {
                    let incoming = IncomingRequest(batchPart: member.request, serviceRootPath: rootPath)
                    let response = executeMember(incoming, state: &scratch, contentIDs: contentIDs)
                    if response.status >= 400 {
                        failed = (member.contentID, response)
                        break
                    }
                    if let location = response.headers[.location], location.hasPrefix(serviceRoot) {
                        contentIDs[member.contentID] = String(location.dropFirst(serviceRoot.count))
                    }
                    responses.append((member.contentID, response.odataResponse))
                }
                if let (contentID, response) = failed {
                    parts.append(.response(response.odataResponse, contentID: contentID))
                } else {
                    state = scratch
                    parts.append(.changeSet(responses))
                }
            }
        }
        let encoded = BatchResponse(parts: parts)
        if isJSON {
            var response = OutgoingResponse(status: 200, body: [UInt8](JSONBatch.encode(encoded)))
            response.headers[.contentType] = JSONBatch.contentType
            return response
        }
        let (body, responseType) = MultipartBatch.encode(encoded)
        var response = OutgoingResponse(status: 200, body: [UInt8](body))
        response.headers[.contentType] = responseType
        return response
    }
}

extension FixtureData {
    /// Moves the change sequence forward (after a reset), so versions never repeat.
    mutating func advanceSequence(to value: Int64) {
        sequence = max(sequence, value)
    }
}
