
/// One parameter of an operation call: its OData name and its value.
public struct OperationParameter: Sendable {
    /// The parameter's name, as `$metadata` declares it.
    public var name: String
    /// The value: a primitive, an enum, a complex or entity value, a collection of them, or `nil`.
    public var value: any ODataValue

    /// A parameter.
    /// - Parameters:
    ///   - name: the parameter's name.
    ///   - value: its value.
    public init(_ name: String, _ value: some ODataValue) {
        self.name = name
        self.value = value
    }
}

/// What a bound operation is bound to: one entity (`Products(1)/NS.Discontinue`) or a collection, an entity set
/// (`Products/NS.MostExpensive()`).
public struct OperationBinding: Sendable {
    enum Target: Sendable {
        case entity(key: EntityKey, typeName: String, set: String?)
        case collection(String)
    }
    let target: Target

    /// Binds to one entity.
    /// - Parameters:
    ///   - entity: the entity (its key addresses it).
    ///   - set: its entity set; without it, the set the entity was read from, or the service's only set of its type.
    /// - Returns: the binding.
    public static func entity<E: EntityValue>(_ entity: E, in set: EntitySet<E>? = nil) -> OperationBinding {
        OperationBinding(target: .entity(key: entity.entityKey, typeName: E.odataTypeName, set: set?.name ?? entity.odata.entitySet))
    }

    /// Binds to the entities of a set.
    /// - Parameter set: the entity set.
    /// - Returns: the binding.
    public static func collection<E>(_ set: EntitySet<E>) -> OperationBinding { OperationBinding(target: .collection(set.name)) }
}

/// A call of a function or action, as a generated proxy describes it: what ``DataService/call(_:returning:)`` sends.
///
/// How it is written, by version and kind:
///
/// | | V4 | V2 (function imports only) |
/// |---|---|---|
/// | function | `GET Name(P1=lit,P2=@P2)?@P2=json` | `GET Name?P1=lit` (or the import's `m:HttpMethod`) |
/// | action | `POST Name`, the parameters as a JSON object | `POST Name?P1=lit` |
/// | bound | the binding's path, then `/NS.Name…` | refused (V2 has no bound operations) |
///
/// A V4 function's primitive parameters are written in the path; a structured or collection value, and a string that
/// a path cannot hold (`/`, `?`, `#`, `%`), is written as a parameter alias.
public struct OperationCall: Sendable {
    /// A function (no side effects; V4 `GET`) or an action (V4 `POST`).
    public enum Kind: Sendable, Equatable {
        /// A function: `GET`, its parameters in the URL.
        case function
        /// An action: `POST`, its parameters in the body (V2: in the URL).
        case action
    }

    /// Function or action.
    public var kind: Kind
    /// The name in the URL: an import's name, or a bound operation's namespace-qualified name.
    public var name: String
    /// The parameters in declaration order (the binding parameter not among them).
    public var parameters: [OperationParameter]
    /// What a bound operation is bound to; nil for an import.
    public var binding: OperationBinding?
    /// The HTTP method a V2 function import declares (`m:HttpMethod`: `GET`, `POST`, `PUT`, `MERGE`, `DELETE`); nil:
    /// `GET` for a function, `POST` for an action. V4 ignores it.
    public var httpMethod: String?
    /// The entity set the results belong to (an import's `EntitySet`), remembered in their metadata.
    public var entitySet: String?

    /// A call.
    /// - Parameters:
    ///   - kind: function or action.
    ///   - name: the import's name, or the bound operation's qualified name.
    ///   - parameters: the parameters in declaration order.
    ///   - binding: what a bound operation is bound to.
    ///   - httpMethod: a V2 function import's HTTP method.
    ///   - entitySet: the entity set of the results.
    public init(
        _ kind: Kind, _ name: String, parameters: [OperationParameter] = [], binding: OperationBinding? = nil,
        httpMethod: String? = nil, entitySet: String? = nil
    ) {
        self.kind = kind
        self.name = name
        self.parameters = parameters
        self.binding = binding
        self.httpMethod = httpMethod
        self.entitySet = entitySet
    }
}
