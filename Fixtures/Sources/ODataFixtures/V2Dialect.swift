import Foundation
import ODataCore

extension FixtureConfiguration {
    /// The OData version a ``FixtureServer`` speaks.
    public enum ProtocolVersion: String, Sendable, CaseIterable {
        /// OData V4: the CSDL as loaded, `{"value": [...]}` collections, `@odata.nextLink`, delta links, `PATCH`.
        case v4
        /// OData V2's envelope, as SAP Gateway writes it: `$metadata` as EDMX 1.0 (entity types, keys, properties and
        /// entity sets; no navigation properties), collections as `{"d": {"results": [...], "__next": …}}` in the form
        /// ``FixtureConfiguration/v2NextLink`` says, an entity as `{"d": {...}}` with its ETag in `__metadata`, no
        /// change tracking, and updates by `MERGE` or `PUT`: a `PATCH` is refused with
        /// `400 Method not allowed: PATCH not supported here`. Values keep the V4 JSON forms.
        case v2
    }

    /// How a V2 collection page writes its next link (`__next`); each is what some producer sends, or what no
    /// client can read.
    public enum V2NextLink: String, Sendable, CaseIterable {
        /// `"__next": "http://…?$skiptoken=100"`, as the V2 JSON format says.
        case string
        /// `"__next": {"uri": "http://…?$skiptoken=100"}`, as a foreign producer writes it.
        case object
        /// `"__next": 42`: not a link (a client must fail, not stop paging).
        case number
        /// `"__next": {"uri": 7}`: an object without a URI string (a client must fail, not stop paging).
        case objectWithNumberURI

        /// The `__next` member for a next page at `url`.
        func value(_ url: String) -> JSONValue {
            switch self {
            case .string: .string(url)
            case .object: .object(["uri": .string(url)])
            case .number: .int(42)
            case .objectWithNumberURI: .object(["uri": .int(7)])
            }
        }
    }
}

extension ServiceModel {
    /// The model as an OData V2 `$metadata` document (EDMX 1.0): entity types with keys and properties, the entity
    /// container with its sets. Navigation properties are left out (V2 declares them through associations, which
    /// this rendering does not write).
    var edmx1: String {
        func escaped(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
                .replacingOccurrences(of: "<", with: "&lt;")
        }
        var byNamespace: [String: [EntityType]] = [:]
        for type in entityTypes.values.sorted(by: { $0.qualifiedName < $1.qualifiedName }) {
            let namespace = type.qualifiedName.split(separator: ".").dropLast().joined(separator: ".")
            byNamespace[namespace, default: []].append(type)
        }
        var xml = """
            <?xml version="1.0" encoding="utf-8"?>
            <edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx" \
            xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">
            <edmx:DataServices m:DataServiceVersion="2.0">

            """
        let containerNamespace = byNamespace.keys.sorted().first ?? "Fixture"
        for namespace in byNamespace.keys.sorted() {
            xml += "<Schema Namespace=\"\(escaped(namespace))\" xmlns=\"http://schemas.microsoft.com/ado/2008/09/edm\">\n"
            for type in byNamespace[namespace]! {
                let name = type.qualifiedName.split(separator: ".").last.map(String.init) ?? type.qualifiedName
                xml += "<EntityType Name=\"\(escaped(name))\"\(type.hasStream ? " m:HasStream=\"true\"" : "")><Key>"
                for key in type.keys { xml += "<PropertyRef Name=\"\(escaped(key))\"/>" }
                xml += "</Key>\n"
                for property in type.properties where property.type != "Edm.Stream" {  // V2 has no stream properties
                    xml += "<Property Name=\"\(escaped(property.name))\" Type=\"\(escaped(property.type))\" Nullable=\"\(property.isNullable)\""
                    if let length = property.maxLength { xml += " MaxLength=\"\(length)\"" }
                    xml += "/>\n"
                }
                xml += "</EntityType>\n"
            }
            if namespace == containerNamespace {
                xml += "<EntityContainer Name=\"Container\" m:IsDefaultEntityContainer=\"true\">\n"
                for set in entitySets {
                    xml += "<EntitySet Name=\"\(escaped(set.name))\" EntityType=\"\(escaped(set.entityType))\"/>\n"
                }
                // V2 has function imports only, with primitive parameters: an action import is one with
                // `m:HttpMethod="POST"`; bound operations and structured parameters or results have no V2 form here.
                for operation in operations.values.sorted(by: { $0.name < $1.name }) where !operation.isBound
                    && operation.parameters.allSatisfy({ $0.type.hasPrefix("Edm.") })
                    && operation.returnType.map({ $0.hasPrefix("Edm.") || $0.hasPrefix("Collection(Edm.") || operation.entitySet != nil }) ?? true
                {
                    xml += "<FunctionImport Name=\"\(escaped(operation.name))\""
                    if let type = operation.returnType { xml += " ReturnType=\"\(escaped(type))\"" }
                    if let set = operation.entitySet { xml += " EntitySet=\"\(escaped(set))\"" }
                    xml += " m:HttpMethod=\"\(operation.isAction ? "POST" : "GET")\">"
                    for parameter in operation.parameters {
                        xml += "<Parameter Name=\"\(escaped(parameter.name))\" Type=\"\(escaped(parameter.type))\" Mode=\"In\"/>"
                    }
                    xml += "</FunctionImport>\n"
                }
                xml += "</EntityContainer>\n"
            }
            xml += "</Schema>\n"
        }
        return xml + "</edmx:DataServices>\n</edmx:Edmx>\n"
    }
}

enum V2Envelope {
    /// An entity in V2's form: its `@odata.etag` and a media entity's `@odata.media…` annotations moved into
    /// `__metadata` (`etag`, `media_src`, `edit_media`, `content_type`, `media_etag`), other control information dropped.
    static func entity(_ object: JSONObject) -> JSONObject {
        var entity = JSONObject()
        var metadata = JSONObject()
        if let etag = object["@odata.etag"] { metadata.append(etag, forKey: "etag") }
        for (v4, v2) in [("@odata.mediaReadLink", "media_src"), ("@odata.mediaEditLink", "edit_media"),
            ("@odata.mediaContentType", "content_type"), ("@odata.mediaEtag", "media_etag")]
        {
            if let value = object[v4] { metadata.append(value, forKey: v2) }
        }
        if !metadata.isEmpty { entity.append(.object(metadata), forKey: "__metadata") }
        for (name, value) in object where !name.hasPrefix("@") && !name.contains("@") { entity.append(value, forKey: name) }
        return entity
    }

    /// A V4 collection answer (`value`, `@odata.count`, `@odata.nextLink`) rewritten as a V2 one.
    static func collection(_ body: JSONObject, nextLink form: FixtureConfiguration.V2NextLink) -> JSONObject {
        var d = JSONObject()
        if let count = body["@odata.count"]?.intValue { d.append(.string(String(count)), forKey: "__count") }
        let results = (body["value"]?.arrayValue ?? []).map { item -> JSONValue in item.objectValue.map { .object(entity($0)) } ?? item }
        d.append(.array(results), forKey: "results")
        if let next = body["@odata.nextLink"]?.stringValue { d.append(form.value(next), forKey: "__next") }
        return ["d": .object(d)]
    }
}
