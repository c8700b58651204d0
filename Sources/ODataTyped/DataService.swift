import Foundation
import HTTPTypes
public import ODataCore

/// Typed access to an OData service over either store: queries built with ``DataQuery`` answered as
/// generated types, creates, partial updates with `If-Match`, deletes, and navigation loads.
///
/// Generated services (`NorthwindService`) wrap one and add a typed method family per entity set; the
/// generic methods here work with any generated type. They run on the caller's executor (`nonisolated(nonsending)`),
/// as the provider's ``DataServiceProvider/executeRequest(_:)`` does: an offline read is answered with no hop.
///
/// ```swift
/// let service = DataService(provider: offlineProvider, entitySets: [events])
/// let inError = try await service.fetch(events, matching: DataQuery().filter(OfflineQueryFunction.inErrorState()))
/// ```
public final class DataService: Sendable {
    /// The store underneath.
    public let provider: any DataServiceProvider
    /// The service's OData version: it decides literal and payload forms.
    public let version: ODataVersion
    private let entitySets: [String: any EntitySetProtocol]

    /// A service over a store.
    /// - Parameters:
    ///   - provider: an `OnlineODataStore` or an `OfflineODataProvider`.
    ///   - version: the service's OData version (generated services pass the one of their `$metadata`).
    ///   - entitySets: the service's entity sets, for reading entities whose set is known only at run time
    ///     (ErrorArchive's `AffectedEntity`).
    public init(provider: any DataServiceProvider, version: ODataVersion = .v4, entitySets: [any EntitySetProtocol] = []) {
        self.provider = provider
        self.version = version
        var sets: [String: any EntitySetProtocol] = [ErrorArchiveEntry.entitySet.name: ErrorArchiveEntry.entitySet]
        for set in entitySets { sets[set.name] = set }
        self.entitySets = sets
    }

    // MARK: Reads

    /// Runs a query given its entity set with ``DataQuery/from(_:)``.
    /// - Parameter query: the query.
    /// - Returns: one page of entities, with the count and next link when the service sent them.
    /// - Throws: ``DataServiceError`` (`.invalidQuery` without an entity set or with what the version cannot
    ///   express, `.noData` when passive mode has nothing cached, `.typeMismatch` for a payload that does not
    ///   fit `E`), or the store's error.
    public nonisolated(nonsending) func executeQuery<E>(_ query: DataQuery<E>) async throws -> QueryResult<E> {
        guard let set = query.entitySet else {
            throw DataServiceError(.invalidQuery, "the query names no entity set: use DataQuery.from(_:)")
        }
        let request = ODataRequest(method: .get, resourcePath: set, queryOptions: try query.queryOptions(for: version))
        return try QueryResult.decode(try await answer(request).payload, entitySet: set)
    }

    /// Reads the next page of a result.
    /// - Parameter result: an earlier page.
    /// - Returns: the next page, or nil when `result` was the last.
    /// - Throws: as ``executeQuery(_:)``.
    public nonisolated(nonsending) func nextPage<E>(of result: QueryResult<E>) async throws -> QueryResult<E>? {
        guard let link = result.nextLink else { return nil }
        guard let response = try await provider.executeNextLink(link) else {
            throw DataServiceError(.noData, "nothing is cached for the next page")
        }
        try Self.check(response)
        return try QueryResult.decode(response.payload, entitySet: result.entities.first?.odata.entitySet)
    }

    /// Every entity of `set` matching `query`, all pages.
    /// - Parameters:
    ///   - set: the entity set.
    ///   - query: the query (its own set, if any, is replaced by `set`).
    /// - Returns: the entities.
    /// - Throws: as ``executeQuery(_:)``.
    public nonisolated(nonsending) func fetch<E>(_ set: EntitySet<E>, matching query: DataQuery<E> = DataQuery()) async throws -> [E] {
        var page = try await executeQuery(query.from(set))
        var entities = page.entities
        while let next = try await nextPage(of: page) {
            entities += next.entities
            page = next
        }
        return entities
    }

    /// One entity by key.
    /// - Parameters:
    ///   - set: the entity set.
    ///   - key: the key.
    ///   - query: `$select` and `$expand` for the entity (other options are ignored by services).
    /// - Returns: the entity.
    /// - Throws: ``DataServiceError``, or the store's error (a `404` from the back end, `.entityNotFound`
    ///   from the offline store).
    public nonisolated(nonsending) func fetchEntity<E>(_ set: EntitySet<E>, key: EntityKey, query: DataQuery<E> = DataQuery()) async throws -> E {
        let request = ODataRequest(method: .get, resourcePath: set.name + (try key.predicate(for: version)),
                                   queryOptions: try query.queryOptions(for: version))
        var entity = try E.decode(try await answer(request).payload)
        entity.odata.entitySet = set.name
        return entity
    }

    // MARK: Navigation

    /// Loads a to-many navigation property into the entity (`Customer.orders`), every page.
    /// - Parameters:
    ///   - property: the navigation property (a generated path with its key path).
    ///   - entity: the entity, read through a ``DataService`` (it knows its set) or with `set` given.
    ///   - query: options for the related entities.
    /// - Throws: ``DataServiceError`` `.invalidEntity` when the entity's set is unknown, or as ``executeQuery(_:)``.
    public nonisolated(nonsending) func loadProperty<E: EntityValue, T: EntityValue>(
        _ property: Property<E, [T]>, into entity: inout E, query: DataQuery<T> = DataQuery()
    ) async throws {
        guard let keyPath = property.keyPath else {
            throw DataServiceError(.invalidEntity, "'\(property.name)' has no key path to load into")
        }
        let request = ODataRequest(method: .get, resourcePath: try path(of: entity) + "/" + property.pathText,
                                   queryOptions: try query.queryOptions(for: version))
        var page = try QueryResult<T>.decode(try await answer(request).payload)
        var related = page.entities
        while let next = try await nextPage(of: page) {
            related += next.entities
            page = next
        }
        entity[keyPath: keyPath] = related
    }

    /// Loads a to-one navigation property into the entity (`Order.customer`); `nil` when it leads nowhere.
    /// - Parameters:
    ///   - property: the navigation property (a generated path with its key path).
    ///   - entity: the entity, read through a ``DataService`` (it knows its set).
    /// - Throws: ``DataServiceError`` `.invalidEntity` when the entity's set is unknown, or the store's error.
    public nonisolated(nonsending) func loadProperty<E: EntityValue, T: EntityValue>(_ property: Property<E, T>, into entity: inout E) async throws {
        guard let keyPath = property.keyPath else {
            throw DataServiceError(.invalidEntity, "'\(property.name)' has no key path to load into")
        }
        let response = try await answer(ODataRequest(method: .get, resourcePath: try path(of: entity) + "/" + property.pathText))
        entity[keyPath: keyPath] = response.statusCode == 204 || response.payload.isEmpty ? nil : try T.decode(response.payload)
    }

    /// Loads the entity an ErrorArchive entry's request affected, typed by its entity set (read it with
    /// ``ErrorArchiveEntry/affectedEntity`` afterwards).
    /// - Parameters:
    ///   - property: ``ErrorArchiveEntry/affectedEntity``.
    ///   - entry: the entry.
    /// - Throws: ``DataServiceError`` `.invalidEntity` when the service does not know the entity's set, or the
    ///   store's error.
    public nonisolated(nonsending) func loadProperty(_ property: AffectedEntityProperty, into entry: inout ErrorArchiveEntry) async throws {
        let response = try await answer(ODataRequest(method: .get, resourcePath: "ErrorArchive(\(entry.requestID))/AffectedEntity"))
        guard response.statusCode != 204, !response.payload.isEmpty else {
            entry.loadedAffectedEntity = nil
            return
        }
        let setName = String(entry.affectedEntityReference.prefix { $0 != "(" })
        guard let set = entitySets[setName] else {
            throw DataServiceError(.invalidEntity, "the service has no entity set '\(setName)' to read the affected entity with")
        }
        entry.loadedAffectedEntity = AnyEntity(try set.decodeEntity(response.payload))
    }

    // MARK: Changes

    /// Creates an entity (POST of its structural properties).
    /// - Parameters:
    ///   - entity: the new entity (a key the service assigns may be left at its default).
    ///   - set: the entity set.
    /// - Returns: the entity as the service stored it (the offline store: with its temporary key).
    /// - Throws: the store's error.
    public nonisolated(nonsending) func createEntity<E: EntityValue>(_ entity: E, in set: EntitySet<E>) async throws -> E {
        var request = ODataRequest(method: .post, resourcePath: set.name, body: Data(JSON.serialize(.object(entity.properties(for: version)))))
        request.headerFields[.contentType] = "application/json"
        let response = try await answer(request)
        var created = response.payload.isEmpty ? entity : try E.decode(response.payload)
        created.odata.entitySet = set.name
        if let etag = response.etag { created.odata.etag = etag }
        return created
    }

    /// Updates the properties `changes` sets, and only those (a PATCH — MERGE where the session says so —
    /// with `If-Match` of the entity's ETag). Nothing is sent when nothing changed.
    /// - Parameters:
    ///   - entity: the entity as read.
    ///   - set: the entity set.
    ///   - changes: changes the entity.
    /// - Returns: the changed entity, with the service's new ETag when it sent one.
    /// - Throws: what `changes` throws, or the store's error (a `412` when someone else changed it first).
    public nonisolated(nonsending) func updateEntity<E: EntityValue>(_ entity: E, in set: EntitySet<E>, changes: (inout E) throws -> Void) async throws -> E {
        var updated = entity
        try changes(&updated)
        return try await updateEntity(updated, from: entity, in: set)
    }

    /// Updates the properties in which `updated` differs from `original` (a PATCH of those only, with
    /// `If-Match` of the original's ETag). Nothing is sent when nothing differs.
    /// - Parameters:
    ///   - updated: the entity with its changes.
    ///   - original: the entity as read.
    ///   - set: the entity set.
    /// - Returns: `updated`, with the service's new ETag when it sent one.
    /// - Throws: the store's error.
    public nonisolated(nonsending) func updateEntity<E: EntityValue>(_ updated: E, from original: E, in set: EntitySet<E>) async throws -> E {
        let before = original.properties(for: version)
        let after = updated.properties(for: version)
        var changed = JSONObject()
        for (name, value) in after where before[name] != value { changed.append(value, forKey: name) }
        guard !changed.isEmpty else { return updated }
        var request = ODataRequest(method: .patch, resourcePath: try path(of: original, in: set), body: Data(JSON.serialize(.object(changed))))
        request.headerFields[.contentType] = "application/json"
        if let etag = original.odata.etag { request.headerFields[.ifMatch] = etag }
        let response = try await answer(request)
        var result = updated
        result.odata.entitySet = set.name
        if response.statusCode == 200, !response.payload.isEmpty, let fresh = try? E.decode(response.payload) { result = fresh }
        if let etag = response.etag { result.odata.etag = etag }
        return result
    }

    /// Replaces an entity (PUT of every structural property, the unknown ones kept from reading included).
    /// - Parameters:
    ///   - entity: the entity.
    ///   - set: the entity set.
    /// - Returns: the entity, with the service's new ETag when it sent one.
    /// - Throws: the store's error.
    public nonisolated(nonsending) func replaceEntity<E: EntityValue>(_ entity: E, in set: EntitySet<E>) async throws -> E {
        var request = ODataRequest(method: .put, resourcePath: try path(of: entity, in: set),
                                   body: Data(JSON.serialize(.object(entity.properties(for: version)))))
        request.headerFields[.contentType] = "application/json"
        if let etag = entity.odata.etag { request.headerFields[.ifMatch] = etag }
        let response = try await answer(request)
        var result = entity
        if let etag = response.etag { result.odata.etag = etag }
        return result
    }

    /// Deletes an entity (with `If-Match` of its ETag).
    /// - Parameters:
    ///   - entity: the entity.
    ///   - set: the entity set.
    /// - Throws: the store's error.
    public nonisolated(nonsending) func deleteEntity<E: EntityValue>(_ entity: E, in set: EntitySet<E>) async throws {
        var request = ODataRequest(method: .delete, resourcePath: try path(of: entity, in: set))
        if let etag = entity.odata.etag { request.headerFields[.ifMatch] = etag }
        _ = try await answer(request)
    }

    // MARK: Helpers

    /// The entity's path: its set and key.
    private func path<E: EntityValue>(of entity: E, in set: EntitySet<E>? = nil) throws(DataServiceError) -> String {
        try path(key: entity.entityKey, typeName: E.odataTypeName, set: set?.name ?? entity.odata.entitySet)
    }

    /// An entity's path from its key; an entity read through a navigation property knows no set: the service's only
    /// set of its type does.
    func path(key: EntityKey, typeName: String, set: String?) throws(DataServiceError) -> String {
        let sets = entitySets.values.filter { $0.entityTypeName == typeName }
        guard let name = set ?? (sets.count == 1 ? sets[0].name : nil) else {
            throw DataServiceError(.invalidEntity, "the entity set of this \(typeName) is unknown: read it through a set, or name the set")
        }
        return name + (try key.predicate(for: version))
    }

    /// The response to a request, or an error for none (passive mode with nothing cached).
    nonisolated(nonsending) func answer(_ request: ODataRequest) async throws -> ODataResponse {
        guard let response = try await provider.executeRequest(request) else {
            throw DataServiceError(.noData, "nothing is cached for \(request.resourcePath)")
        }
        try Self.check(response)
        return response
    }

    /// Stores report failures by throwing; a provider that returns an error status gets the service's error.
    static func check(_ response: ODataResponse) throws {
        guard response.isSuccess else {
            throw response.serviceError ?? ODataServiceError(code: "", message: "HTTP \(response.statusCode)", statusCode: response.statusCode)
        }
    }
}
