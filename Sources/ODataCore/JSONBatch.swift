import Foundation
import HTTPTypes

/// Encodes and decodes the OData 4.01 JSON batch format (`{"requests": [...]}` / `{"responses": [...]}`).
///
/// Change sets map to atomicity groups; a member's Content-ID is its `id`. JSON bodies are embedded
/// as JSON; other bodies as strings.
public enum JSONBatch {
    /// The content type of JSON batch bodies.
    public static let contentType = "application/json"

    /// Encodes a batch request body.
    /// - Parameter batch: the batch.
    /// - Returns: the body.
    /// - Throws: ``ODataError`` when a request's path or options cannot be rendered.
    public static func encode(_ batch: BatchRequest) throws(ODataError) -> Data {
        var requests: [JSONValue] = []
        var nextID = 1
        for (index, part) in batch.parts.enumerated() {
            switch part {
            case .request(let request):
                requests.append(try encodeRequest(request, id: "r\(nextID)", group: nil))
                nextID += 1
            case .changeSet(let members):
                for member in members {
                    requests.append(try encodeRequest(member.request, id: member.contentID, group: "g\(index + 1)"))
                }
            }
        }
        return Data(JSON.serialize(["requests": .array(requests)]))
    }

    /// Decodes a batch request body, as a server does.
    /// - Parameter body: the body.
    /// - Returns: the batch; consecutive requests of one atomicity group form one change set; each `url`'s path is
    ///   percent-decoded by ``PercentDecoding``, its query kept verbatim as ``QueryOption/encoded(_:)`` pieces.
    /// - Throws: ``ODataError`` `.malformedJSON` or `.malformedBatch` naming what was wrong (a request whose `url`
    ///   path has a `%` that starts no `%XX` is a `.malformedBatch`).
    public static func decodeRequest(_ body: Data) throws(ODataError) -> BatchRequest {
        let items = try array(named: "requests", in: body)
        var parts: [BatchRequest.Part] = []
        var currentGroup: String?
        var members: [BatchRequest.ChangeSetRequest] = []
        func flush() {
            if !members.isEmpty { parts.append(.changeSet(members)) }
            members = []
        }
        for (index, item) in items.enumerated() {
            guard case .object(let object) = item else { throw ODataError(.malformedBatch, "request \(index) is not a JSON object") }
            guard let id = object["id"]?.stringValue else { throw ODataError(.malformedBatch, "request \(index) has no string 'id'") }
            guard let methodName = object["method"]?.stringValue, let method = HTTPRequest.Method(methodName.uppercased()) else {
                throw ODataError(.malformedBatch, "request '\(id)' has no valid 'method'")
            }
            guard let url = object["url"]?.stringValue else { throw ODataError(.malformedBatch, "request '\(id)' has no 'url'") }
            let headers = try fields(object["headers"], owner: "request '\(id)'")
            let pathAndQuery = url.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            let options = pathAndQuery.count > 1 ? pathAndQuery[1].split(separator: "&").map { QueryOption.encoded(String($0)) } : []
            let path: String
            do { path = try PercentDecoding.decodeString(String(pathAndQuery[0])) } catch {
                throw ODataError(.malformedBatch, "request '\(id)' has an invalid 'url' '\(url.prefix(80))': \(error.message)",
                                 offset: error.offset)
            }
            let request = ODataRequest(method: method, resourcePath: path,
                                       queryOptions: options, headerFields: headers, body: bodyData(object["body"]), useCache: false)
            let group = object["atomicityGroup"]?.stringValue
            if group != currentGroup { flush() }
            currentGroup = group
            if group != nil {
                members.append(.init(contentID: id, request: request))
            } else {
                parts.append(.request(request))
            }
        }
        flush()
        return BatchRequest(parts: parts)
    }

    /// Encodes a batch response body, as a server does.
    /// - Parameter response: the parts.
    /// - Returns: the body.
    public static func encode(_ response: BatchResponse) -> Data {
        var responses: [JSONValue] = []
        for (index, part) in response.parts.enumerated() {
            switch part {
            case .response(let response, let contentID):
                responses.append(encodeResponse(response, id: contentID ?? "r\(index + 1)", group: nil))
            case .changeSet(let members):
                for (offset, member) in members.enumerated() {
                    responses.append(encodeResponse(member.response, id: member.contentID ?? "\(index + 1).\(offset + 1)", group: "g\(index + 1)"))
                }
            }
        }
        return Data(JSON.serialize(["responses": .array(responses)]))
    }

    /// Decodes a batch response body.
    /// - Parameter body: the body.
    /// - Returns: the parts; consecutive responses of one atomicity group form one change set.
    /// - Throws: ``ODataError`` `.malformedJSON` or `.malformedBatch`.
    public static func decodeResponse(_ body: Data) throws(ODataError) -> BatchResponse {
        let items = try array(named: "responses", in: body)
        var parts: [BatchResponse.Part] = []
        var currentGroup: String?
        var members: [(contentID: String?, response: ODataResponse)] = []
        func flush() {
            if !members.isEmpty { parts.append(.changeSet(members)) }
            members = []
        }
        for (index, item) in items.enumerated() {
            guard case .object(let object) = item else { throw ODataError(.malformedBatch, "response \(index) is not a JSON object") }
            guard let status = object["status"]?.intValue, (100...599).contains(status) else {
                throw ODataError(.malformedBatch, "response \(index) has no valid 'status'")
            }
            let id = object["id"]?.stringValue
            let response = ODataResponse(statusCode: Int(status), headerFields: try fields(object["headers"], owner: "response \(index)"),
                                         payload: bodyData(object["body"]) ?? Data())
            let group = object["atomicityGroup"]?.stringValue
            if group != currentGroup { flush() }
            currentGroup = group
            if group != nil {
                members.append((id, response))
            } else {
                parts.append(.response(response, contentID: id))
            }
        }
        flush()
        return BatchResponse(parts: parts)
    }

    private static func encodeRequest(_ request: ODataRequest, id: String, group: String?) throws(ODataError) -> JSONValue {
        var object = JSONObject()
        object.append(.string(id), forKey: "id")
        if let group { object.append(.string(group), forKey: "atomicityGroup") }
        object.append(.string(request.method.rawValue.lowercased()), forKey: "method")
        object.append(.string(try request.relativeURL()), forKey: "url")
        object.append(headersJSON(request.headerFields), forKey: "headers")
        if let body = request.body { object.append(bodyJSON(body), forKey: "body") }
        return .object(object)
    }

    private static func encodeResponse(_ response: ODataResponse, id: String, group: String?) -> JSONValue {
        var object = JSONObject()
        object.append(.string(id), forKey: "id")
        if let group { object.append(.string(group), forKey: "atomicityGroup") }
        object.append(.int(Int64(response.statusCode)), forKey: "status")
        object.append(headersJSON(response.headerFields), forKey: "headers")
        if !response.payload.isEmpty { object.append(bodyJSON(response.payload), forKey: "body") }
        return .object(object)
    }

    private static func headersJSON(_ fields: HTTPFields) -> JSONValue {
        var object = JSONObject()
        for field in fields {
            let name = field.name.canonicalName
            if case .string(let existing)? = object[name] {
                object[name] = .string(existing + ", " + field.value)
            } else {
                object.append(.string(field.value), forKey: name)
            }
        }
        return .object(object)
    }

    private static func bodyJSON(_ body: Data) -> JSONValue {
        (try? JSON.parse(body)) ?? .string(String(decoding: body, as: UTF8.self))
    }

    private static func bodyData(_ value: JSONValue?) -> Data? {
        switch value {
        case nil, .null?: nil
        case .string(let text)?: Data(text.utf8)
        case let value?: Data(JSON.serialize(value))
        }
    }

    private static func array(named name: String, in body: Data) throws(ODataError) -> [JSONValue] {
        guard case .object(let root) = try JSON.parse(body) else {
            throw ODataError(.malformedBatch, "a JSON batch must be a JSON object")
        }
        guard case .array(let items)? = root[name] else {
            throw ODataError(.malformedBatch, "a JSON batch needs a '\(name)' array")
        }
        return items
    }

    private static func fields(_ value: JSONValue?, owner: String) throws(ODataError) -> HTTPFields {
        var fields = HTTPFields()
        guard let value, !value.isNull else { return fields }
        guard case .object(let object) = value else { throw ODataError(.malformedBatch, "'headers' of \(owner) is not an object") }
        for (name, member) in object {
            guard let fieldName = HTTPField.Name(name), let text = member.stringValue else {
                throw ODataError(.malformedBatch, "header '\(name)' of \(owner) is not a valid name with a string value")
            }
            fields.append(HTTPField(name: fieldName, value: text))
        }
        return fields
    }
}
