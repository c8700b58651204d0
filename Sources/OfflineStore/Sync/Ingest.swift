import Foundation
import ODataCore
import ODataQuery

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

    /// A media entity's annotations, kept with the entity: where its media resource is read and written, its content
    /// type and ETag (V2's `__metadata.media_src` and the others arrive as these); a stream property's are these after
    /// its name.
    static let mediaAnnotations: Set<String> = ["@odata.mediaReadLink", "@odata.mediaEditLink", "@odata.mediaContentType", "@odata.mediaEtag"]

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
                if name == "@odata.etag" || Self.mediaAnnotations.contains(name) { properties.append(value, forKey: name) }
                continue
            }
            if let at = name.firstIndex(of: "@") {
                // A stream property's `Name@odata.media…`: where its bytes are read and written, their type and ETag.
                if Self.mediaAnnotations.contains(String(name[at...])), type.propertyTypes[String(name[..<at])] == "Edm.Stream" {
                    properties.append(value, forKey: name)
                }
                continue
            }
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
