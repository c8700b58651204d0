/// A function import, action import or singleton of a container, or a function or action of a schema, with its
/// signature: parameters, return type, whether it is bound, and for an import what it imports.
public struct CSDLOperation: Equatable, Sendable {
    /// `function import`, `action import`, `singleton`, `function`, `action`.
    public var kind: String
    /// The name (qualified for schema-level functions and actions).
    public var name: String
    /// A singleton's entity type as written (nil for the other kinds).
    public var type: String?
    /// V4 `IsBound="true"`: the first parameter is the binding parameter (an entity or a collection of them).
    public var isBound: Bool = false
    /// The parameters in order (for a bound operation the binding parameter first; V2: the function import's).
    public var parameters: [CSDLParameter] = []
    /// The return type as written (V4 `ReturnType Type`, V2 `ReturnType` attribute); nil when nothing is returned.
    public var returnType: String?
    /// The return type resolved (set by resolution; nil without a return type).
    public var returnResolved: CSDLTypeReference?
    /// For an import, the function or action it imports (V4 `Function` / `Action`, qualified by resolution).
    public var imports: String?
    /// For an import, the entity set its results belong to (V4 and V2 `EntitySet`).
    public var entitySet: String?
    /// V2: the HTTP method of a function import (`m:HttpMethod`, `GET` when absent).
    public var httpMethod: String?
    /// Where the operation is declared.
    public var location: CSDLLocation?

    /// Creates an operation entry.
    /// - Parameters:
    ///   - kind: `function import`, `action import`, `singleton`, `function` or `action`.
    ///   - name: the name (qualified for schema-level functions and actions).
    ///   - type: a singleton's entity type.
    public init(kind: String, name: String, type: String? = nil) {
        self.kind = kind
        self.name = name
        self.type = type
    }

    /// Operations are equal when they are of the same kind and name (overloads of a function are equal).
    /// - Parameters:
    ///   - lhs: An operation.
    ///   - rhs: Another operation.
    /// - Returns: whether both have the same kind and name.
    public static func == (lhs: CSDLOperation, rhs: CSDLOperation) -> Bool {
        lhs.kind == rhs.kind && lhs.name == rhs.name
    }
}

/// A `Parameter` of a function or action (or of a V2 function import).
public struct CSDLParameter: Equatable, Sendable {
    /// The parameter's name.
    public var name: String
    /// The type as written, then with aliases resolved.
    public var type: String
    /// `Nullable`, nil when absent (the default is nullable).
    public var nullable: Bool?
    /// The type resolved (set by resolution).
    public var resolved: CSDLTypeReference?
    /// Where the parameter is declared.
    public var location: CSDLLocation

    /// Creates a parameter.
    /// - Parameters:
    ///   - name: the parameter's name.
    ///   - type: its type as written.
    ///   - nullable: `Nullable`, nil when absent.
    ///   - location: where it is declared.
    public init(name: String, type: String, nullable: Bool?, location: CSDLLocation) {
        self.name = name
        self.type = type
        self.nullable = nullable
        self.location = location
    }
}
