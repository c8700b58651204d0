import Foundation
import ODataCore

/// The fixture's data: every entity set's entities in memory, with the version and
/// modification time of each entity (for ETags and `Last-Modified`) and a change log (for
/// delta links).
///
/// Over HTTP the producer changes it; in a test, ``FixtureServer/mutate(_:)`` hands it out
/// as `inout` so the test can change data "on the producer side". Every change goes through
/// the same validation as an HTTP request and is recorded for ETags and delta.
public struct FixtureData: Sendable {
    struct StoredEntity: Sendable {
        var value: JSONObject
        /// The data's change sequence at the entity's last change; its ETag.
        var version: Int64
        /// Seconds since 1970 of the last change.
        var modified: Int64
        /// A media entity's media resource (`$value`); `nil` for an entity of a type without a stream.
        var media: FixtureMedia? = nil
        /// The entity's stream properties (`Edm.Stream`) by name; each entity of a type with one has it.
        var streams: [String: FixtureMedia] = [:]
    }

    struct SetStorage: Sendable {
        var order: [String] = []
        var entities: [String: StoredEntity] = [:]
        /// Seconds since 1970 of the last change to the set, deletes included.
        var modified: Int64
    }

    struct ChangeRecord: Sendable {
        let sequence: Int64
        let set: String
        let predicate: String
        let key: JSONObject
        /// The entity before this change; `nil` for a create.
        let previous: JSONObject?
    }

    /// The model the data follows.
    public let model: ServiceModel
    var sets: [String: SetStorage]
    /// Increases with every change; entity versions and delta tokens are positions in it.
    var sequence: Int64 = 0
    private(set) var changeLog: [ChangeRecord] = []

    /// Loads entity sets from collection payloads (`{"value": [...]}`) keyed by entity set name.
    /// - Parameters:
    ///   - model: the model to validate against.
    ///   - payloads: entity set name → the bytes of its JSON collection payload.
    ///   - loadedAt: the modification time given to every loaded entity, in seconds since 1970.
    /// - Throws: ``FixtureError`` `.invalidData` naming the file's set and the problem.
    init(model: ServiceModel, payloads: [String: [UInt8]], loadedAt: Int64) throws(FixtureError) {
        self.model = model
        var sets: [String: SetStorage] = [:]
        for set in model.entitySets { sets[set.name] = SetStorage(modified: loadedAt) }
        for (name, bytes) in payloads {
            guard let set = model.entitySet(name) else { continue }
            let document: JSONValue
            do { document = try JSON.parse(bytes) } catch {
                throw FixtureError(.invalidData, "\(name).json is not JSON: \(error)")
            }
            guard let rows = document["value"]?.arrayValue else {
                throw FixtureError(.invalidData, "\(name).json has no \"value\" array")
            }
            let type = model.type(of: set)
            var storage = SetStorage(modified: loadedAt)
            storage.order.reserveCapacity(rows.count)
            for (index, row) in rows.enumerated() {
                guard let object = row.objectValue, let predicate = EntityKey.predicate(of: object, type: type) else {
                    throw FixtureError(.invalidData, "\(name).json row \(index) has no valid key \(type.keys)")
                }
                guard storage.entities[predicate] == nil else {
                    throw FixtureError(.invalidData, "\(name).json has the key \(predicate) twice")
                }
                storage.order.append(predicate)
                storage.entities[predicate] = StoredEntity(
                    value: object, version: 0, modified: loadedAt,
                    media: type.hasStream ? FixtureMedia.generated(for: name + predicate) : nil,
                    streams: Dictionary(uniqueKeysWithValues: type.streamProperties.map {
                        ($0, FixtureMedia.generated(for: name + predicate + "/" + $0, contentType: "image/jpeg"))
                    }))
            }
            sets[name] = storage
        }
        self.sets = sets
    }

    // MARK: Reading

    /// The entity set names, in container order.
    public var entitySetNames: [String] { model.entitySets.map(\.name) }

    /// All entities of a set, in storage order (creation order).
    /// - Parameter set: the entity set's name.
    /// - Returns: the entities.
    /// - Throws: ``FixtureError`` `.notFound` when the set does not exist.
    public func entities(in set: String) throws(FixtureError) -> [JSONObject] {
        let storage = try self.storage(set)
        return storage.order.map { storage.entities[$0]!.value }
    }

    /// One entity by key.
    /// - Parameters:
    ///   - set: the entity set's name.
    ///   - key: the key properties (`["CustomerID": "ALFKI"]`).
    /// - Returns: the entity, or `nil` when no entity has that key.
    /// - Throws: ``FixtureError`` `.notFound` for an unknown set, `.invalidEntity` for a key that
    ///   does not fit the type.
    public func entity(in set: String, key: JSONObject) throws(FixtureError) -> JSONObject? {
        let predicate = try self.predicate(for: key, in: set)
        return sets[set]?.entities[predicate]?.value
    }

    /// The number of entities in a set.
    /// - Parameter set: the entity set's name.
    /// - Returns: the count.
    /// - Throws: ``FixtureError`` `.notFound` when the set does not exist.
    public func count(in set: String) throws(FixtureError) -> Int { try storage(set).order.count }

    func storage(_ set: String) throws(FixtureError) -> SetStorage {
        guard let storage = sets[set] else { throw FixtureError(.notFound, "no entity set named \(set)") }
        return storage
    }

    func entityType(of set: String) throws(FixtureError) -> ServiceModel.EntityType {
        guard let entitySet = model.entitySet(set) else { throw FixtureError(.notFound, "no entity set named \(set)") }
        return model.type(of: entitySet)
    }

    func predicate(for key: JSONObject, in set: String) throws(FixtureError) -> String {
        let type = try entityType(of: set)
        guard let predicate = EntityKey.predicate(of: key, type: type) else {
            throw FixtureError(.invalidEntity, "the key \(JSON.string(.object(key))) does not fit \(set)'s key \(type.keys)")
        }
        return predicate
    }

    func stored(in set: String, predicate: String) -> StoredEntity? { sets[set]?.entities[predicate] }

    // MARK: Changing

    /// Creates an entity; a missing single integer or GUID key is generated by the producer.
    /// - Parameters:
    ///   - entity: the new entity's properties.
    ///   - set: the entity set's name.
    /// - Returns: the stored entity, with every declared property and the generated key.
    /// - Throws: ``FixtureError`` `.notFound` for an unknown set, `.invalidEntity` for a property
    ///   that is unknown, of the wrong type, too long, missing, or a reference to no entity,
    ///   `.conflict` when the key exists.
    @discardableResult
    public mutating func insert(_ entity: JSONObject, into set: String) throws(FixtureError) -> JSONObject {
        let type = try entityType(of: set)
        var candidate = entity
        if type.keys.count == 1, let keyProperty = type.property(type.keys[0]),
            candidate[keyProperty.name] == nil || candidate[keyProperty.name] == .null
        {
            candidate[keyProperty.name] = try generatedKey(for: keyProperty, in: set)
        }
        let value = try validated(candidate, type: type, set: set, replacing: nil)
        guard let predicate = EntityKey.predicate(of: value, type: type) else {
            throw FixtureError(.invalidEntity, "\(set) needs non-null values for its key \(type.keys.joined(separator: ","))")
        }
        guard sets[set]?.entities[predicate] == nil else {
            throw FixtureError(.conflict, "an entity with key \(set)\(predicate) already exists")
        }
        let now = Self.changeTime(after: sets[set]!.modified)
        sequence += 1
        sets[set]!.order.append(predicate)
        sets[set]!.entities[predicate] = StoredEntity(
            value: value, version: sequence, modified: now,
            media: type.hasStream ? FixtureMedia(bytes: [], contentType: "application/octet-stream", version: sequence) : nil,
            streams: Dictionary(uniqueKeysWithValues: type.streamProperties.map {
                ($0, FixtureMedia(bytes: [], contentType: "application/octet-stream", version: sequence))
            }))
        sets[set]!.modified = now
        record(set: set, predicate: predicate, entity: value, previous: nil, type: type)
        return value
    }

    /// Changes some properties of an entity (PATCH / MERGE semantics).
    /// - Parameters:
    ///   - set: the entity set's name.
    ///   - key: the key properties.
    ///   - changes: the properties to change; key properties may be given only with their current value.
    /// - Returns: the changed entity.
    /// - Throws: ``FixtureError`` `.notFound` when the set or entity does not exist,
    ///   `.invalidEntity` for a change the type does not allow.
    @discardableResult
    public mutating func update(in set: String, key: JSONObject, changes: JSONObject) throws(FixtureError) -> JSONObject {
        try change(in: set, key: key) { current in
            var merged = current
            for (name, value) in changes { merged[name] = value }
            return merged
        }
    }

    /// Replaces all properties of an entity (PUT semantics): properties left out become `null`.
    /// - Parameters:
    ///   - set: the entity set's name.
    ///   - key: the key properties.
    ///   - entity: the new properties.
    /// - Returns: the replaced entity.
    /// - Throws: ``FixtureError`` as for ``update(in:key:changes:)``, and `.invalidEntity` when a
    ///   non-nullable property is left out.
    @discardableResult
    public mutating func replace(in set: String, key: JSONObject, with entity: JSONObject) throws(FixtureError) -> JSONObject {
        let type = try entityType(of: set)
        return try change(in: set, key: key) { current in
            var replaced = JSONObject()
            for name in type.keys { replaced[name] = current[name] }
            for (name, value) in entity { replaced[name] = value }
            return replaced
        }
    }

    /// Deletes an entity.
    /// - Parameters:
    ///   - set: the entity set's name.
    ///   - key: the key properties.
    /// - Throws: ``FixtureError`` `.notFound` when the set or entity does not exist, `.conflict`
    ///   when other entities still reference it through a referential constraint.
    public mutating func delete(from set: String, key: JSONObject) throws(FixtureError) {
        let predicate = try self.predicate(for: key, in: set)
        guard let stored = sets[set]?.entities[predicate] else {
            throw FixtureError(.notFound, "no entity \(set)\(predicate)")
        }
        let type = try entityType(of: set)
        try checkNotReferenced(stored.value, type: type, set: set, predicate: predicate)
        let now = Self.changeTime(after: sets[set]!.modified)
        sequence += 1
        sets[set]!.entities[predicate] = nil
        if let index = sets[set]!.order.firstIndex(of: predicate) { sets[set]!.order.remove(at: index) }
        sets[set]!.modified = now
        record(set: set, predicate: predicate, entity: stored.value, previous: stored.value, type: type)
    }

    private mutating func change(
        in set: String, key: JSONObject, _ transform: (JSONObject) throws(FixtureError) -> JSONObject
    ) throws(FixtureError) -> JSONObject {
        let type = try entityType(of: set)
        let predicate = try self.predicate(for: key, in: set)
        guard let stored = sets[set]?.entities[predicate] else {
            throw FixtureError(.notFound, "no entity \(set)\(predicate)")
        }
        let proposed = try transform(stored.value)
        let value = try validated(proposed, type: type, set: set, replacing: stored.value)
        guard EntityKey.predicate(of: value, type: type) == predicate else {
            throw FixtureError(.invalidEntity, "the key of \(set)\(predicate) cannot be changed")
        }
        let now = Self.changeTime(after: sets[set]!.modified)
        sequence += 1
        sets[set]!.entities[predicate] = StoredEntity(value: value, version: sequence, modified: now, media: stored.media, streams: stored.streams)
        sets[set]!.modified = now
        record(set: set, predicate: predicate, entity: value, previous: stored.value, type: type)
        return value
    }

    mutating func record(
        set: String, predicate: String, entity: JSONObject, previous: JSONObject?, type: ServiceModel.EntityType
    ) {
        var key = JSONObject()
        for name in type.keys { key[name] = entity[name] }
        changeLog.append(ChangeRecord(sequence: sequence, set: set, predicate: predicate, key: key, previous: previous))
    }

    /// A modification time: now rounded up to the next second, and never earlier than the
    /// previous change, so that `If-Modified-Since` with any earlier `Last-Modified` sees it.
    static func changeTime(after previous: Int64) -> Int64 {
        let now = Int64(Date().timeIntervalSince1970.rounded(.up))
        return max(now, previous)
    }

    private func generatedKey(for property: ServiceModel.Property, in set: String) throws(FixtureError) -> JSONValue {
        switch property.type {
        case "Edm.Guid":
            return .string(UUID().uuidString.lowercased())
        case "Edm.Int16", "Edm.Int32", "Edm.Int64", "Edm.Byte":
            let highest = sets[set]?.entities.values.compactMap { $0.value[property.name]?.intValue }.max() ?? 0
            return .int(highest + 1)
        default:
            throw FixtureError(.invalidEntity, "\(set) needs a value for its key property \(property.name)")
        }
    }

    /// Checks an entity against its type and returns it in storage form: the declared
    /// properties in declaration order, coerced to their types.
    private func validated(
        _ entity: JSONObject, type: ServiceModel.EntityType, set: String, replacing: JSONObject?
    ) throws(FixtureError) -> JSONObject {
        for (name, _) in entity where !name.contains("@") && type.property(name) == nil {
            if type.navigationProperty(name) != nil {
                throw FixtureError(.invalidEntity, "deep insert or update of navigation property \(name) is not supported")
            }
            throw FixtureError(.invalidEntity, "\(set) has no property named \(name)")
        }
        var result = JSONObject()
        for property in type.properties where property.type != "Edm.Stream" {  // a stream is not in the entity's data
            guard let raw = entity[property.name] else {
                if property.type == "Edm.Binary" { continue }  // binary columns are left out of the data
                if !property.isNullable {
                    throw FixtureError(.invalidEntity, "\(set) needs a value for property \(property.name)")
                }
                result.append(.null, forKey: property.name)
                continue
            }
            guard let value = EntityKey.coerce(raw, to: property.type) else {
                throw FixtureError(
                    .invalidEntity, "property \(property.name) of \(set) must be \(property.type), not \(JSON.string(raw))")
            }
            if value.isNull, !property.isNullable {
                throw FixtureError(.invalidEntity, "property \(property.name) of \(set) cannot be null")
            }
            if let limit = property.maxLength, let text = value.stringValue, text.count > limit {
                throw FixtureError(
                    .invalidEntity, "property \(property.name) of \(set) is longer than its MaxLength \(limit)")
            }
            result.append(value, forKey: property.name)
        }
        try checkReferences(result, type: type, set: set)
        return result
    }

    /// Each non-null foreign key of a referential constraint must name an existing entity.
    private func checkReferences(_ entity: JSONObject, type: ServiceModel.EntityType, set: String) throws(FixtureError) {
        guard let entitySet = model.entitySet(set) else { return }
        for navigation in type.navigationProperties where !navigation.isCollection && !navigation.constraints.isEmpty {
            guard let targetSet = entitySet.bindings[navigation.name], let targetStorage = sets[targetSet],
                let targetType = model.entityTypes[navigation.targetType]
            else { continue }
            var targetKey = JSONObject()
            var anyNull = false
            for constraint in navigation.constraints {
                let value = entity[constraint.property] ?? .null
                if value.isNull { anyNull = true }
                targetKey[constraint.referencedProperty] = value
            }
            if anyNull { continue }
            guard let predicate = EntityKey.predicate(of: targetKey, type: targetType),
                targetStorage.entities[predicate] != nil
            else {
                let names = navigation.constraints.map(\.property).joined(separator: ",")
                throw FixtureError(
                    .invalidEntity, "\(names) of \(set) references no entity in \(targetSet): \(JSON.string(.object(targetKey)))")
            }
        }
    }

    /// An entity that dependents reference through their referential constraints cannot go.
    private func checkNotReferenced(
        _ entity: JSONObject, type: ServiceModel.EntityType, set: String, predicate: String
    ) throws(FixtureError) {
        guard let entitySet = model.entitySet(set) else { return }
        for navigation in type.navigationProperties where navigation.isCollection {
            guard let targetSet = entitySet.bindings[navigation.name], let storage = sets[targetSet],
                let targetType = model.entityTypes[navigation.targetType], let partnerName = navigation.partner,
                let partner = targetType.navigationProperty(partnerName), !partner.constraints.isEmpty
            else { continue }
            let count = storage.entities.values.count { dependent in
                partner.constraints.allSatisfy { dependent.value[$0.property] == entity[$0.referencedProperty] }
            }
            if count > 0 {
                throw FixtureError(
                    .conflict, "\(set)\(predicate) is still referenced by \(count) entities of \(targetSet)")
            }
        }
    }
}
