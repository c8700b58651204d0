import Foundation

/// The error an OData back end sent in a response body, parsed from the V4 JSON format
/// (`error{code,message,target,details,innererror}`), the V2 JSON format (`error{code,message{value}}`),
/// the V2 XML format (`<error><code/><message/></error>`), or kept as text when it is none of these.
public struct ODataServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The format the body was in.
    public enum Format: String, Sendable, Hashable {
        /// OData V4 JSON.
        case v4JSON
        /// OData V2 JSON.
        case v2JSON
        /// OData V2 / Atom XML.
        case xml
        /// Not an OData error body; ``ODataServiceError/message`` holds the text.
        case text
        /// No body at all.
        case empty
    }

    /// One entry of the V4 `details` array.
    public struct Detail: Sendable, Hashable {
        /// The detail's code.
        public var code: String
        /// The detail's message.
        public var message: String
        /// The detail's target, if any.
        public var target: String?
    }

    /// The HTTP status the error came with, when known.
    public var statusCode: Int?
    /// The service's error code (empty when the body had none).
    public var code: String
    /// The service's message, or the body's text, or a description of an empty body.
    public var message: String
    /// The target of the error, if given.
    public var target: String?
    /// The V4 `details`.
    public var details: [Detail]
    /// The `innererror` as JSON, if given (a string for XML bodies).
    public var innerError: JSONValue?
    /// The format the body was in.
    public var format: Format

    /// Creates an error, e.g. for a server to send.
    /// - Parameters:
    ///   - code: the error code.
    ///   - message: the message.
    ///   - target: the target, if any.
    ///   - details: V4 details.
    ///   - innerError: inner error, if any.
    ///   - statusCode: the HTTP status, if known.
    public init(code: String, message: String, target: String? = nil, details: [Detail] = [], innerError: JSONValue? = nil, statusCode: Int? = nil) {
        self.code = code
        self.message = message
        self.target = target
        self.details = details
        self.innerError = innerError
        self.statusCode = statusCode
        self.format = .v4JSON
    }

    /// Reads an error body. Never throws: a body that is not an OData error becomes `.text`, no
    /// body becomes `.empty`, each with a message that says so.
    /// - Parameters:
    ///   - body: the response body.
    ///   - statusCode: the HTTP status, if known.
    /// - Returns: the error.
    public static func parse(_ body: Data, statusCode: Int? = nil) -> ODataServiceError {
        var result = ODataServiceError(code: "", message: "", statusCode: statusCode)
        let text = String(decoding: body, as: UTF8.self)
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty {
            result.format = .empty
            result.message = statusCode.map { "HTTP \($0) with an empty body" } ?? "an empty error body"
            return result
        }
        if trimmed.hasPrefix("{"), let json = try? JSON.parse(body), let error = json["error"]?.objectValue {
            result.code = error["code"]?.stringValue ?? error["code"].map { JSON.string($0) } ?? ""
            result.target = error["target"]?.stringValue
            result.innerError = error["innererror"]
            switch error["message"] {
            case .string(let message)?:
                result.message = message
                result.format = .v4JSON
            case .object(let message)?:
                result.message = message["value"]?.stringValue ?? ""
                result.format = .v2JSON
            default:
                result.format = .v4JSON
            }
            // V4 `details`, else the SAP Gateway envelope's `innererror.errordetails` (code, message, target).
            let details = error["details"]?.arrayValue ?? error["innererror"]?["errordetails"]?.arrayValue ?? []
            result.details = details.compactMap { value in
                guard let detail = value.objectValue else { return nil }
                return Detail(code: detail["code"]?.stringValue ?? "", message: detail["message"]?.stringValue ?? "", target: detail["target"]?.stringValue)
            }
            return result
        }
        if trimmed.hasPrefix("<"), trimmed.contains("error"), let code = xmlElement("code", in: trimmed) {
            result.format = .xml
            result.code = code
            result.message = xmlElement("message", in: trimmed) ?? ""
            result.innerError = xmlElement("innererror", in: trimmed).map(JSONValue.string)
            return result
        }
        result.format = .text
        result.message = String(trimmed.prefix(2_000))
        return result
    }

    /// The service's code and message.
    public var description: String {
        let status = statusCode.map { "HTTP \($0) " } ?? ""
        return code.isEmpty ? "\(status)\(message)" : "\(status)\(code): \(message)"
    }

    /// The V4 JSON error body for this error, as a server sends it.
    public var jsonBody: JSONValue {
        var error = JSONObject()
        error.append(.string(code), forKey: "code")
        error.append(.string(message), forKey: "message")
        if let target { error.append(.string(target), forKey: "target") }
        if !details.isEmpty {
            error.append(.array(details.map { detail in
                var object = JSONObject()
                object.append(.string(detail.code), forKey: "code")
                object.append(.string(detail.message), forKey: "message")
                if let target = detail.target { object.append(.string(target), forKey: "target") }
                return .object(object)
            }), forKey: "details")
        }
        if let innerError { error.append(innerError, forKey: "innererror") }
        return .object(["error": .object(error)])
    }

    // The text of the first element with this local name (namespace prefixes allowed), unescaped.
    private static func xmlElement(_ name: String, in xml: String) -> String? {
        guard let open = xml.range(of: "<(?:[A-Za-z0-9_]+:)?\(name)(?:\\s[^>]*)?>", options: .regularExpression),
            let close = xml.range(of: "</(?:[A-Za-z0-9_]+:)?\(name)>", options: .regularExpression, range: open.upperBound..<xml.endIndex)
        else { return nil }
        return String(xml[open.upperBound..<close.lowerBound])
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}
