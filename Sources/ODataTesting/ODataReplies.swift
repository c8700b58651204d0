public import Foundation
import HTTPTypes
public import ODataCore

extension ScriptedReply {
    /// A `$metadata` document: the CSDL text as the body, `Content-Type: application/xml`.
    ///
    /// - Parameter csdl: The EDMX document (EDMX 4.0 for a V4 service, EDMX 1.0 for V2).
    /// - Returns: The reply.
    public static func metadata(_ csdl: String) -> ScriptedReply {
        .status(200, headerFields: [.contentType: "application/xml"], body: Data(csdl.utf8))
    }

    /// A `$metadata` document read from a file; see ``metadata(_:)``.
    ///
    /// - Parameter file: The file holding the EDMX document.
    /// - Returns: The reply.
    /// - Throws: The error of reading the file.
    public static func metadata(contentsOf file: URL) throws -> ScriptedReply {
        .status(200, headerFields: [.contentType: "application/xml"], body: try Data(contentsOf: file))
    }

    /// A collection of entities as a service of that OData version answers a read of an entity set: V4's
    /// `{"value":[…]}` with `@odata.count` and `@odata.nextLink`, or V2's `{"d":{"results":[…]}}` with `__count`
    /// and `__next`.
    ///
    /// - Parameters:
    ///   - entities: The entities, each a JSON object.
    ///   - version: The OData version; the default is V4.
    ///   - count: The count to report (for `$count=true` or `$inlinecount=allpages`); the default is none.
    ///   - nextLink: The link to the next page; the default is none (the last page).
    /// - Returns: The reply, status 200, with the version's `Content-Type` and version header.
    public static func collection(_ entities: [JSONValue], version: ODataVersion = .v4, count: Int? = nil,
                                  nextLink: String? = nil) -> ScriptedReply {
        var body = JSONObject()
        switch version {
        case .v4:
            if let count { body.append(.int(Int64(count)), forKey: "@odata.count") }
            body.append(.array(entities), forKey: "value")
            if let nextLink { body.append(.string(nextLink), forKey: "@odata.nextLink") }
            return .json(.object(body), headerFields: versionHeader(version))
        case .v2:
            if let count { body.append(.string(String(count)), forKey: "__count") }
            body.append(.array(entities), forKey: "results")
            if let nextLink { body.append(.string(nextLink), forKey: "__next") }
            return .json(["d": .object(body)], headerFields: versionHeader(version))
        }
    }

    /// One entity as a service of that OData version answers a read by key or a create: the object itself in V4,
    /// wrapped as `{"d":{…}}` in V2.
    ///
    /// - Parameters:
    ///   - entity: The entity, a JSON object.
    ///   - version: The OData version; the default is V4.
    ///   - status: The status code; the default is 200 (201 for a create).
    /// - Returns: The reply, with the version's `Content-Type` and version header.
    public static func entity(_ entity: JSONValue, version: ODataVersion = .v4, status: Int = 200) -> ScriptedReply {
        .json(version == .v4 ? entity : ["d": entity], status: status, headerFields: versionHeader(version))
    }

    /// An OData error body as a service of that version sends it: `{"error":{"code":…,"message":…}}` in V4, with
    /// the message as `{"lang":"en","value":…}` in V2.
    ///
    /// - Parameters:
    ///   - status: The HTTP status code, such as 400 or 404.
    ///   - code: The service's error code.
    ///   - message: The human-readable message.
    ///   - version: The OData version; the default is V4.
    /// - Returns: The reply.
    public static func odataError(status: Int, code: String, message: String, version: ODataVersion = .v4) -> ScriptedReply {
        let text: JSONValue = version == .v4 ? .string(message) : ["lang": "en", "value": .string(message)]
        return .json(["error": ["code": .string(code), "message": text]], status: status, headerFields: versionHeader(version))
    }

    private static func versionHeader(_ version: ODataVersion) -> HTTPFields {
        switch version {
        case .v4: [HTTPField.Name("OData-Version")!: "4.0"]
        case .v2: [HTTPField.Name("DataServiceVersion")!: "2.0"]
        }
    }
}

extension ScriptedReply {
    /// A `$batch` answered part by part: the request's batch is decoded (`multipart/mixed`, or the OData 4.01 JSON
    /// format when the request's `Content-Type` is JSON), `answer` gives each request its response, and the
    /// responses go back in the same format. A change set whose members all succeed answers member by member; one
    /// with a member that fails is answered by that member's response alone, as a service rolls the change set back.
    ///
    /// ```swift
    /// transport.on("POST", "$batch", reply: .batch { request in
    ///     ODataResponse(statusCode: request.resourcePath == "Products(2)" ? 400 : 204)
    /// })
    /// ```
    ///
    /// - Parameter answer: The response to one request of the batch (its `resourcePath` is percent-decoded).
    /// - Returns: The reply: status 200 with the encoded batch response, or 400 when the batch cannot be decoded.
    public static func batch(_ answer: @escaping @Sendable (ODataRequest) -> ODataResponse) -> ScriptedReply {
        .handler { request in
            let contentType = request.headerFields[.contentType] ?? ""
            let isJSON = contentType.lowercased().hasPrefix("application/json")
            let batch: BatchRequest
            do {
                batch = isJSON ? try JSONBatch.decodeRequest(request.body ?? Data())
                    : try MultipartBatch.decodeRequest(request.body ?? Data(), contentType: contentType)
            } catch {
                return .status(400, body: Data("ScriptedTransport: the $batch could not be decoded: \(error)".utf8))
            }
            let parts = batch.parts.map { part -> BatchResponse.Part in
                switch part {
                case .request(let single):
                    return .response(answer(single), contentID: nil)
                case .changeSet(let members):
                    let responses = members.map { (contentID: Optional($0.contentID), response: answer($0.request)) }
                    if let failed = responses.first(where: { !$0.response.isSuccess }) {
                        return .response(failed.response, contentID: failed.contentID)
                    }
                    return .changeSet(responses)
                }
            }
            let response = BatchResponse(parts: parts)
            if isJSON {
                return .status(200, headerFields: [.contentType: JSONBatch.contentType], body: JSONBatch.encode(response))
            }
            let (body, responseType) = MultipartBatch.encode(response)
            return .status(200, headerFields: [.contentType: responseType], body: body)
        }
    }
}
