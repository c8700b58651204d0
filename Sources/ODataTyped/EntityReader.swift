public import ODataCore

/// Reads OData JSON straight from the payload's bytes into typed values: generated types call it member by
/// member, so no ``JSONValue`` tree is built for the properties they declare.
///
/// It reads V4 and V2 forms alike (`/Date(…)/` and ISO 8601, Int64 and decimals as numbers or strings, V2's
/// `results` wrappers and `__deferred` links), because an offline store of a V2 service answers in V4 JSON
/// with the producer's values. Every error names the type and the property being read.
public struct EntityReader: ~Copyable {
    private var json: JSONReader
    /// The types being read, innermost last, with the offset of the name of the member being read in each
    /// (-1 before the first): the name is read again only for an error message.
    private var frames: [(type: String, memberOffset: Int)] = []

    init(_ json: consuming JSONReader) {
        self.json = json
        frames.reserveCapacity(4)
    }

    /// Runs `body` with a reader over a payload.
    /// - Parameters:
    ///   - bytes: the payload.
    ///   - body: reads what it needs.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws; JSON that is not well formed is ``DataServiceError/malformedPayload``.
    public static func read<Bytes: Collection<UInt8>, T>(
        _ bytes: Bytes, _ body: (inout EntityReader) throws(DataServiceError) -> T
    ) throws(DataServiceError) -> T {
        func run(_ buffer: UnsafeBufferPointer<UInt8>) throws(DataServiceError) -> T {
            var reader = EntityReader(JSONReader(unsafeBytes: buffer))
            let value = try body(&reader)
            try reader.attempt { (json: inout JSONReader) throws(ODataError) in try json.end() }
            return value
        }
        let result = bytes.withContiguousStorageIfAvailable { buffer in Result { () throws(DataServiceError) in try run(buffer) } }
        if let result { return try result.get() }
        return try Array(bytes).withUnsafeBufferPointer { buffer throws(DataServiceError) in try run(buffer) }
    }

    // MARK: Objects

    /// Begins reading an object of `typeName` (consumes `{`).
    /// - Parameter typeName: the qualified type name, for error messages.
    /// - Throws: ``DataServiceError`` `.typeMismatch` when the next value is not an object.
    public mutating func beginObject(_ typeName: String) throws(DataServiceError) {
        let kind = try peek()
        guard kind == .object else { throw mismatch("expected a \(typeName) object, found \(kind.name)") }
        try attempt { (json: inout JSONReader) throws(ODataError) in try json.beginObject() }
        frames.append((typeName, -1))
    }

    /// The name of the next member of the object begun last; `nil` after its end. Read or skip its value
    /// before asking again.
    /// - Throws: ``DataServiceError`` `.malformedPayload`.
    public mutating func nextMember() throws(DataServiceError) -> String? {
        var nameOffset = 0
        let name = try attempt { (json: inout JSONReader) throws(ODataError) in try json.nextMember(nameOffset: &nameOffset) }
        if name != nil {
            frames[frames.count - 1].memberOffset = nameOffset
        } else {
            frames.removeLast()
        }
        return name
    }

    /// Reads a member the type does not declare: OData control information and annotations go to the
    /// metadata's fields and ``ODataMetadata/annotations``, V2's `__metadata` to its fields, and any other
    /// property to ``ODataMetadata/unknownProperties`` (kept, and sent back by a full update). V2's
    /// `__deferred` links are skipped.
    /// - Parameters:
    ///   - name: the member's name.
    ///   - metadata: where to keep it.
    /// - Throws: ``DataServiceError``.
    public mutating func readOther(_ name: String, into metadata: inout ODataMetadata) throws(DataServiceError) {
        if name.utf8.first == UInt8(ascii: "@") {
            switch name {
            case "@odata.etag", "@etag": metadata.etag = try readString(annotation: name)
            case "@odata.id", "@id": metadata.id = try readString(annotation: name)
            case "@odata.editLink", "@editLink": metadata.editLink = try readString(annotation: name)
            case "@odata.readLink", "@readLink": metadata.readLink = try readString(annotation: name)
            case "@odata.type", "@type":
                let type = try readString(annotation: name)
                metadata.type = type.map { $0.hasPrefix("#") ? String($0.dropFirst()) : $0 }
            case "@odata.context", "@context": try skipValue()
            default: metadata.annotations.append(try readValue(), forKey: name)
            }
            return
        }
        if name.contains("@") {
            metadata.annotations.append(try readValue(), forKey: name)
            return
        }
        if name == "__metadata" {
            guard case .object(let object) = try readValue() else { throw mismatch("expected an object") }
            if let uri = object["uri"]?.stringValue {
                metadata.id = uri
                metadata.editLink = uri
            }
            if let etag = object["etag"]?.stringValue { metadata.etag = etag }
            if let type = object["type"]?.stringValue { metadata.type = type }
            return
        }
        let value = try readValue()
        if case .object(let object) = value, object["__deferred"] != nil { return }
        metadata.unknownProperties.append(value, forKey: name)
    }

    private mutating func readString(annotation name: String) throws(DataServiceError) -> String? {
        if try readNull() { return nil }
        return try readString()
    }

    // MARK: Values

    /// Reads a value of any ``ODataValue`` type: primitives, enums, complex and entity types, optionals
    /// (`null`, and a V2 `__deferred` link, read as `nil`) and collections (V2 `results` wrappers too).
    /// - Parameter type: the type.
    /// - Returns: the value.
    /// - Throws: ``DataServiceError`` `.typeMismatch` naming the type, the property and what was found.
    public mutating func read<T: ODataValue>(_ type: T.Type) throws(DataServiceError) -> T {
        try T.read(from: &self)
    }

    /// The kind of the next value.
    /// - Throws: ``DataServiceError`` `.malformedPayload` at the end of the input.
    public mutating func peek() throws(DataServiceError) -> JSONReader.Kind {
        try attempt { (json: inout JSONReader) throws(ODataError) in try json.peek() }
    }

    /// Whether the next value is an object whose first member is `name` (nothing is consumed).
    /// - Parameter name: the member name (`__deferred`).
    /// - Throws: ``DataServiceError`` `.malformedPayload`.
    public mutating func nextObjectStarts(with name: String) throws(DataServiceError) -> Bool {
        try attempt { (json: inout JSONReader) throws(ODataError) in try json.firstMemberName() == name }
    }

    /// Reads a string.
    /// - Throws: ``DataServiceError`` `.typeMismatch` when the next value is not one.
    public mutating func readString() throws(DataServiceError) -> String {
        let kind = try peek()
        guard kind == .string else { throw mismatch("expected a string, found \(kind.name)") }
        return try attempt { (json: inout JSONReader) throws(ODataError) in try json.readString() }
    }

    /// Reads a number as written, or a string holding one (V2 and IEEE754Compatible forms).
    /// - Throws: ``DataServiceError`` `.typeMismatch` for anything else.
    public mutating func readNumberText() throws(DataServiceError) -> String {
        switch try peek() {
        case .number: return try attempt { (json: inout JSONReader) throws(ODataError) in try json.readNumberText() }
        case .string: return try readString()
        case let kind: throw mismatch("expected a number, found \(kind.name)")
        }
    }

    /// Reads an integer written as a number, or as a string (V2 `Edm.Int64`).
    /// - Throws: ``DataServiceError`` `.typeMismatch` for anything else or a value beyond 64 bits.
    public mutating func readInt64() throws(DataServiceError) -> Int64 {
        switch try peek() {
        case .number:
            return try attempt { (json: inout JSONReader) throws(ODataError) in try json.readInt64() }
        case .string:
            let text = try readString()
            guard let value = Int64(text) else { throw mismatch("expected an integer, found the string '\(text)'") }
            return value
        case let kind: throw mismatch("expected an integer, found \(kind.name)")
        }
    }

    /// Reads a floating-point number, or a string holding one (`INF`, `-INF`, `NaN`, V2 forms).
    /// - Throws: ``DataServiceError`` `.typeMismatch` for anything else.
    public mutating func readDouble() throws(DataServiceError) -> Double {
        switch try peek() {
        case .number:
            return try attempt { (json: inout JSONReader) throws(ODataError) in try json.readDouble() }
        case .string:
            let text = try readString()
            switch text {
            case "INF": return .infinity
            case "-INF": return -.infinity
            case "NaN": return .nan
            default:
                guard let value = Double(text) else { throw mismatch("expected a number, found the string '\(text)'") }
                return value
            }
        case let kind: throw mismatch("expected a number, found \(kind.name)")
        }
    }

    /// Reads `true` or `false`.
    /// - Throws: ``DataServiceError`` `.typeMismatch` for anything else.
    public mutating func readBool() throws(DataServiceError) -> Bool {
        let kind = try peek()
        guard kind == .bool else { throw mismatch("expected true or false, found \(kind.name)") }
        return try attempt { (json: inout JSONReader) throws(ODataError) in try json.readBool() }
    }

    /// Consumes `null` if it comes next.
    /// - Returns: whether it did.
    /// - Throws: ``DataServiceError`` `.malformedPayload`.
    public mutating func readNull() throws(DataServiceError) -> Bool {
        try attempt { (json: inout JSONReader) throws(ODataError) in try json.readNull() }
    }

    /// Reads the next value whole, as a tree.
    /// - Throws: ``DataServiceError`` `.malformedPayload`.
    public mutating func readValue() throws(DataServiceError) -> JSONValue {
        try attempt { (json: inout JSONReader) throws(ODataError) in try json.readValue() }
    }

    /// Skips the next value.
    /// - Throws: ``DataServiceError`` `.malformedPayload`.
    public mutating func skipValue() throws(DataServiceError) {
        try attempt { (json: inout JSONReader) throws(ODataError) in try json.skipValue() }
    }

    /// Begins reading an array (consumes `[`).
    /// - Throws: ``DataServiceError`` `.typeMismatch` when the next value is not an array.
    public mutating func beginArray() throws(DataServiceError) {
        let kind = try peek()
        guard kind == .array else { throw mismatch("expected a collection, found \(kind.name)") }
        try attempt { (json: inout JSONReader) throws(ODataError) in try json.beginArray() }
    }

    /// Whether the array begun last has another element.
    /// - Throws: ``DataServiceError`` `.malformedPayload`.
    public mutating func nextElement() throws(DataServiceError) -> Bool {
        try attempt { (json: inout JSONReader) throws(ODataError) in try json.nextElement() }
    }

    // MARK: Errors

    /// A type mismatch at the current position, naming the type and property being read.
    /// - Parameter message: what was expected and found.
    /// - Returns: the error.
    public func mismatch(_ message: String) -> DataServiceError {
        DataServiceError(.typeMismatch, location + message, offset: json.offset)
    }

    /// `Type.Property: ` for the innermost member being read, or nothing at the top level.
    private var location: String {
        guard let frame = frames.last else { return "" }
        guard frame.memberOffset >= 0, let member = json.string(at: frame.memberOffset) else { return "\(frame.type): " }
        return "\(frame.type).\(member): "
    }

    private func wrap(_ error: ODataError) -> DataServiceError {
        DataServiceError(.malformedPayload, location + error.message, offset: error.offset)
    }

    private mutating func attempt<T>(_ body: (inout JSONReader) throws(ODataError) -> T) throws(DataServiceError) -> T {
        do { return try body(&json) } catch { throw wrap(error) }
    }
}

extension JSONReader.Kind {
    /// How the kind is named in error messages.
    var name: String {
        switch self {
        case .object: "an object"
        case .array: "an array"
        case .string: "a string"
        case .number: "a number"
        case .bool: "a boolean"
        case .null: "null"
        }
    }
}
