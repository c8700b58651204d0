import Foundation
import HTTPTypes
public import ODataCore
import ODataQuery

extension DataService {
    /// Calls a function or action and reads its result as `R`: an entity or complex value, a primitive, an enum, a
    /// collection of any of them, or an optional one (`nil` for `204 No Content` or `null`).
    ///
    /// Results are read in every form producers write them: V4 `{"value": …}` for primitives and collections, the
    /// structured value itself for an entity or complex result; V2 `{"d": …}`, `{"d": {"results": […]}}` and
    /// Gateway's `{"d": {"Name": …}}`. Entities of a result remember ``OperationCall/entitySet``.
    ///
    /// ```swift
    /// let count = try await service.dataService.call(.init(.function, "CustomerCount",
    ///     parameters: [.init("Country", "Germany")]), returning: Int32.self)
    /// ```
    /// - Parameters:
    ///   - operation: the call.
    ///   - type: the result type.
    /// - Returns: the result.
    /// - Throws: ``DataServiceError`` (`.invalidQuery` for what the version cannot express, `.typeMismatch` for a
    ///   result that does not fit `R`, `.noData` when passive mode has nothing cached for a function), or the
    ///   store's error (the offline store refuses operations: `OfflineODataError.operationNotAvailableOffline`).
    public nonisolated(nonsending) func call<R: ODataValue>(_ operation: OperationCall, returning type: R.Type = R.self) async throws -> R {
        let response = try await answer(try request(for: operation))
        return try Self.result(response, of: operation, as: R.self, version: version)
    }

    /// Calls a function or action whose result, if any, is not needed (an action without a return type).
    /// - Parameter operation: the call.
    /// - Throws: as ``call(_:returning:)``.
    public nonisolated(nonsending) func call(_ operation: OperationCall) async throws {
        _ = try await answer(try request(for: operation))
    }

    /// The request a call sends, in this service's version (for a `$batch`, or to look at).
    /// - Parameter operation: the call.
    /// - Returns: the request.
    /// - Throws: ``DataServiceError`` `.invalidQuery` for a bound operation or a structured parameter of a V2 service,
    ///   `.invalidEntity` for a binding entity whose set is unknown.
    public func request(for operation: OperationCall) throws(DataServiceError) -> ODataRequest {
        var prefix = ""
        switch operation.binding?.target {
        case .entity(let key, let typeName, let set)?: prefix = try path(key: key, typeName: typeName, set: set) + "/"
        case .collection(let set)?: prefix = set + "/"
        case nil: break
        }
        if version == .v2 {
            guard operation.binding == nil else {
                throw DataServiceError(.invalidQuery, "OData V2 has no bound operations ('\(operation.name)' is bound)")
            }
            var options: [QueryOption] = []
            // V2 has no `null` parameter literal: a parameter without a value is left out.
            for parameter in operation.parameters where parameter.value.literal != .null {
                options.append(.custom(name: parameter.name, value: try Self.literalText(parameter, of: operation, version: .v2)))
            }
            let name = operation.httpMethod?.uppercased() ?? (operation.kind == .function ? "GET" : "POST")
            guard let method = HTTPRequest.Method(name) else {
                throw DataServiceError(.invalidQuery, "'\(name)' is not an HTTP method ('\(operation.name)')")
            }
            return ODataRequest(method: method, resourcePath: operation.name, queryOptions: options)
        }
        switch operation.kind {
        case .function:
            var arguments: [String] = []
            var aliases: [QueryOption] = []
            for parameter in operation.parameters {
                let literal = parameter.value.literal
                let text = try Self.literalText(parameter, of: operation, version: .v4)
                var isJSON = false
                if case .json = literal { isJSON = true }
                if isJSON || text.contains(where: { "/?#%\\".contains($0) }) {
                    aliases.append(.custom(name: "@" + parameter.name, value: text))
                    arguments.append(parameter.name + "=@" + parameter.name)
                } else {
                    arguments.append(parameter.name + "=" + text)
                }
            }
            let path = prefix + operation.name + "(" + arguments.joined(separator: ",") + ")"
            return ODataRequest(method: .get, resourcePath: path, queryOptions: aliases)
        case .action:
            var body = JSONObject()
            for parameter in operation.parameters { body.append(parameter.value.jsonValue(for: .v4), forKey: parameter.name) }
            var request = ODataRequest(method: .post, resourcePath: prefix + operation.name, body: Data(JSON.serialize(.object(body))))
            request.headerFields[.contentType] = "application/json"
            return request
        }
    }

    /// A parameter's literal: a primitive's URL form for `version`, a structured or collection value's JSON (V4 only).
    private static func literalText(
        _ parameter: OperationParameter, of operation: OperationCall, version: ODataVersion
    ) throws(DataServiceError) -> String {
        let literal = parameter.value.literal
        if case .json(let value) = literal {
            guard version == .v4 else {
                throw DataServiceError(
                    .invalidQuery, "OData V2 function imports take primitive parameters only ('\(parameter.name)' of '\(operation.name)')")
            }
            return JSON.string(value)
        }
        do {
            let text = try FilterExpression.literal(literal).text(for: version)
            // V2 writes an Edm.Int64 with its suffix (`5L`); a literal knows only that it is an integer.
            return version == .v2 && parameter.value is Int64 ? text + "L" : text
        } catch {
            throw DataServiceError(.invalidQuery, "the parameter '\(parameter.name)' of '\(operation.name)' cannot be written: \(error.message)")
        }
    }

    // MARK: Results

    /// Reads a call's result from its response (see ``call(_:returning:)`` for the forms).
    static func result<R: ODataValue>(
        _ response: ODataResponse, of operation: OperationCall, as type: R.Type, version: ODataVersion
    ) throws(DataServiceError) -> R {
        let optional = R.self as? any OptionalResult.Type
        if response.statusCode == 204 || response.payload.isEmpty {
            guard let optional else {
                throw DataServiceError(.typeMismatch, "'\(operation.name)' answered no content, expected \(R.self)")
            }
            return optional.noValue as! R
        }
        let structured = ((optional?.wrappedType ?? R.self) as? any StructuredValue.Type) != nil
        let root: JSONValue
        do { root = try JSON.parse(response.payload) } catch {
            throw DataServiceError(.malformedPayload, "the result of '\(operation.name)' is not JSON: \(error.message)")
        }
        let value = try unwrapped(root, of: operation, structured: structured)
        var result = try EntityReader.read(JSON.serialize(value)) { (reader: inout EntityReader) throws(DataServiceError) in
            try R.read(from: &reader)
        }
        if let set = operation.entitySet { result = remembering(set, in: result) }
        return result
    }

    /// The part of a result payload that holds the value.
    private static func unwrapped(_ root: JSONValue, of operation: OperationCall, structured: Bool) throws(DataServiceError) -> JSONValue {
        guard case .object(let object) = root else { return root }
        if let d = object["d"] {
            // V2: `{"d": {"results": […]}}`, Gateway's `{"d": {"Name": value}}` for a primitive or complex result, or
            // the entity itself.
            guard case .object(let inner) = d else { return d }
            let simpleName = String(operation.name.split(separator: ".").last ?? Substring(operation.name))
            var members: [(name: String, value: JSONValue)] = []
            for (name, value) in inner where name != "__metadata" { members.append((name, value)) }
            if members.count == 1, members[0].name == simpleName { return members[0].value }
            if !structured, let results = inner["results"] { return results }
            return d
        }
        if structured { return root }
        guard let value = object["value"] else {
            throw DataServiceError(.typeMismatch, "the result of '\(operation.name)' has no 'value' member")
        }
        return value
    }

    /// Entities of a result (one, an optional one, or a collection) remember their entity set.
    private static func remembering<R>(_ set: String, in result: R) -> R {
        func remember<E: EntityValue>(_ entity: E) -> E {
            var entity = entity
            entity.odata.entitySet = set
            return entity
        }
        if let entity = result as? any EntityValue, let back = remember(entity) as? R { return back }
        if let entities = result as? [any EntityValue], let back = entities.map({ remember($0) }) as? R { return back }
        return result
    }
}

/// Lets a result type say that it is optional and what it wraps.
protocol OptionalResult {
    static var wrappedType: Any.Type { get }
    static var noValue: Self { get }
}

extension Optional: OptionalResult {
    static var wrappedType: Any.Type { Wrapped.self }
    static var noValue: Self { nil }
}
