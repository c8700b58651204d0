// The CSDL model of a `$metadata` document: schemas and their types, as the document declares them, with what
// resolution adds (aliases replaced, type references resolved, V2 navigation properties resolved through their
// associations, V2 navigation property bindings derived from association sets). See CSDLResolution.swift.
import ODataCore

/// Where an element is in the document: its text for messages (`<Property Name="City">`) and its line.
public struct CSDLLocation: Equatable, Sendable {
    /// The element as it reads in the document, with its `Name` when it has one.
    public var element: String
    /// The line where the element's start tag begins (1-based).
    public var line: Int
}

/// A whole `$metadata` document (EDMX 4.0/4.01, or EDMX 1.0 with OData V2 CSDL), read and resolved.
///
/// Create one with ``init(parsing:)``; every problem in the document is a ``MetadataError``.
public struct CSDLDocument: Sendable {
    /// The protocol version: ``ODataVersion/v2`` for EDMX 1.0 (OData V1, V2 and V3 share its CSDL shape),
    /// ``ODataVersion/v4`` for EDMX 4.0 and 4.01.
    public var version: ODataVersion = .v4
    /// `4.0`, `4.01`, or the V2 `m:DataServiceVersion` (`2.0` when absent).
    public var versionText: String = "4.0"
    /// The schemas, in document order.
    public var schemas: [CSDLSchema] = []
    /// Aliases from `edmx:Include Alias` and `Schema Alias`, to namespaces.
    public var aliases: [String: String] = [:]
    /// The namespaces the document includes from other documents (`edmx:Reference`/`edmx:Include`): a type of
    /// one of them that no given document defines is kept untyped, with a warning, rather than refused.
    public var referencedNamespaces: Set<String> = []
    /// What the reader accepted but could not type as written, each naming the element and its line (`Edm.Float`
    /// read as `Edm.Double`, a primitive type it does not know kept as JSON, a type of a referenced document it
    /// was not given): in document order.
    public var warnings: [MetadataWarning] = []
}

/// Something a `$metadata` document says that the reader accepted in a weaker form than written: the element,
/// its line, and what was done instead.
public struct MetadataWarning: Equatable, Sendable, CustomStringConvertible {
    /// The element as it reads in the document (`<Property Name="Weight">`).
    public var element: String
    /// The line where the element starts (1-based).
    public var line: Int
    /// What was written and what the reader made of it.
    public var message: String

    /// Creates a warning.
    /// - Parameters:
    ///   - element: the element as it reads in the document.
    ///   - line: the element's line.
    ///   - message: what was written and what the reader made of it.
    public init(element: String, line: Int, message: String) {
        self.element = element
        self.line = line
        self.message = message
    }

    /// `line N: <Element …>: warning: message`.
    public var description: String { "line \(line): \(element): warning: \(message)" }
}

/// One `Schema`.
public struct CSDLSchema: Sendable {
    /// The schema's namespace.
    public var namespace: String
    /// The schema's alias, if declared.
    public var alias: String?
    /// The entity types, in document order.
    public var entityTypes: [CSDLStructuredType] = []
    /// The complex types, in document order.
    public var complexTypes: [CSDLStructuredType] = []
    /// The enum types, in document order.
    public var enumTypes: [CSDLEnumType] = []
    /// The type definitions, in document order.
    public var typeDefinitions: [CSDLTypeDefinition] = []
    /// The V2 associations, in document order.
    public var associations: [CSDLAssociation] = []
    /// The entity containers, in document order.
    public var entityContainers: [CSDLEntityContainer] = []
    /// Schema-level V4 functions and actions in document order, each overload once.
    public var operations: [CSDLOperation] = []
    /// Where the schema starts.
    public var location: CSDLLocation
    /// Whether the schema comes from a referenced document the reader was given (its types are there to be
    /// used, not generated for their own sake).
    public var isReferenced: Bool = false
}

/// An `EntityType` or a `ComplexType`.
public struct CSDLStructuredType: Sendable {
    /// Whether this is an entity type (else a complex type).
    public var isEntity: Bool
    /// The namespace of its schema.
    public var namespace: String
    /// The type's name.
    public var name: String
    /// The base type: as written until resolution, then its qualified name.
    public var baseType: String?
    /// `Abstract="true"`.
    public var isAbstract: Bool = false
    /// `HasStream="true"` (V4) or `m:HasStream="true"` (V2): a media entity.
    public var hasStream: Bool = false
    /// The key's property names as declared on this type, nil without a `Key` element (see
    /// ``CSDLDocument/key(of:)`` for the key a base type gives).
    public var key: [String]?
    /// The structural properties declared on this type, in document order.
    public var properties: [CSDLProperty] = []
    /// The navigation properties declared on this type, in document order.
    public var navigationProperties: [CSDLNavigationProperty] = []
    /// Where the type starts.
    public var location: CSDLLocation
    /// `Namespace.Name`.
    public var qualifiedName: String { namespace + "." + name }
}

/// A structural `Property`.
public struct CSDLProperty: Sendable {
    /// The property's name.
    public var name: String
    /// The type as written (`Edm.String`, `Collection(NS.T)`), then with aliases resolved.
    public var type: String
    /// `Nullable`, nil when the attribute is absent (the default is nullable).
    public var nullable: Bool?
    /// `MaxLength` as written (a number or `max`).
    public var maxLength: String?
    /// `Precision` as written.
    public var precision: String?
    /// `Scale` as written (a number, `variable` or `floating`).
    public var scale: String?
    /// Where the property is declared.
    public var location: CSDLLocation
    /// The resolved type (set by resolution).
    public var resolved: CSDLTypeReference?
}

/// A `NavigationProperty`: V4 `Type`, or V2 `Relationship`/`FromRole`/`ToRole`.
public struct CSDLNavigationProperty: Sendable {
    /// The navigation property's name.
    public var name: String
    /// V4: the type as written (`NS.T`, `Collection(NS.T)`); nil in V2.
    public var type: String?
    /// V4 `Nullable`, nil when absent.
    public var nullable: Bool?
    /// V4 `Partner`: the navigation property of the target type that leads back.
    public var partner: String?
    /// V4 `ContainsTarget="true"`: the targets are contained in the declaring entity (addressed through it).
    public var containsTarget: Bool = false
    /// V2: the association, as written until resolution, then its qualified name; nil in V4.
    public var relationship: String?
    /// V2: the association end of the declaring type.
    public var fromRole: String?
    /// V2: the association end of the target type.
    public var toRole: String?
    /// This side's foreign key: V4 `ReferentialConstraint`s; V2, set by resolution when the association's
    /// referential constraint makes this type the dependent and the target the principal.
    public var referentialConstraints: [CSDLReferentialConstraint] = []
    /// Where the navigation property is declared.
    public var location: CSDLLocation
    /// The target entity type's qualified name (set by resolution).
    public var target: String = ""
    /// Whether it leads to many (V4 `Collection(…)`, V2 multiplicity `*`; set by resolution).
    public var isCollection: Bool = false
}

/// A referential constraint of a navigation property: a property of the declaring type that holds the value of a
/// property of the target type.
public struct CSDLReferentialConstraint: Equatable, Sendable {
    /// The property of the declaring (dependent) type.
    public var property: String
    /// The property of the target (principal) type it refers to.
    public var referencedProperty: String

    /// Creates a constraint.
    /// - Parameters:
    ///   - property: the property of the declaring (dependent) type.
    ///   - referencedProperty: the property of the target (principal) type.
    public init(property: String, referencedProperty: String) {
        self.property = property
        self.referencedProperty = referencedProperty
    }
}

/// An `EnumType`.
public struct CSDLEnumType: Sendable {
    /// The namespace of its schema.
    public var namespace: String
    /// The type's name.
    public var name: String
    /// `UnderlyingType` as written, nil when absent (`Edm.Int32`).
    public var underlyingType: String?
    /// `IsFlags="true"`.
    public var isFlags: Bool
    /// The members, in document order.
    public var members: [CSDLEnumMember] = []
    /// Where the type starts.
    public var location: CSDLLocation
    /// `Namespace.Name`.
    public var qualifiedName: String { namespace + "." + name }
}

/// An enum type's `Member`.
public struct CSDLEnumMember: Sendable {
    /// The member's name.
    public var name: String
    /// `Value` as written, nil when absent.
    public var value: String?
    /// Where the member is declared.
    public var location: CSDLLocation
}

/// A `TypeDefinition`: a named primitive type.
public struct CSDLTypeDefinition: Sendable {
    /// The namespace of its schema.
    public var namespace: String
    /// The type's name.
    public var name: String
    /// `UnderlyingType` as written.
    public var underlyingType: String
    /// Where the definition is.
    public var location: CSDLLocation
    /// `Namespace.Name`.
    public var qualifiedName: String { namespace + "." + name }
}

/// A V2 `Association`.
public struct CSDLAssociation: Sendable {
    /// The namespace of its schema.
    public var namespace: String
    /// The association's name.
    public var name: String
    /// Its two `End`s.
    public var ends: [CSDLAssociationEnd] = []
    /// Its `ReferentialConstraint`, if declared.
    public var referentialConstraint: CSDLAssociationConstraint?
    /// Where the association starts.
    public var location: CSDLLocation
    /// `Namespace.Name`.
    public var qualifiedName: String { namespace + "." + name }
}

/// An association's `End`: its role, entity type and multiplicity (`1`, `0..1`, `*`).
public struct CSDLAssociationEnd: Sendable {
    /// The role's name.
    public var role: String
    /// The entity type as written.
    public var type: String
    /// `1`, `0..1` or `*`.
    public var multiplicity: String
    /// Where the end is declared.
    public var location: CSDLLocation
}

/// A V2 association's `ReferentialConstraint`: the dependent end's properties hold the principal end's.
public struct CSDLAssociationConstraint: Sendable {
    /// The principal end's role and its properties, in order.
    public var principal: (role: String, properties: [String])
    /// The dependent end's role and its properties, in order (pairwise with the principal's).
    public var dependent: (role: String, properties: [String])
}

/// An `EntityContainer`.
public struct CSDLEntityContainer: Sendable {
    /// The container's name.
    public var name: String
    /// V2 `m:IsDefaultEntityContainer="true"`.
    public var isDefault: Bool = false
    /// The entity sets, in document order.
    public var entitySets: [CSDLEntitySet] = []
    /// The V2 association sets, in document order.
    public var associationSets: [CSDLAssociationSet] = []
    /// Function imports, action imports and singletons, by kind and name.
    public var operations: [CSDLOperation] = []
    /// Where the container starts.
    public var location: CSDLLocation
}

/// An `EntitySet`.
public struct CSDLEntitySet: Sendable {
    /// The set's name.
    public var name: String
    /// The entity type: as written until resolution, then its qualified name.
    public var entityType: String
    /// Which set each navigation property leads to: V4 `NavigationPropertyBinding`s as declared; V2, derived by
    /// resolution from the container's association sets.
    public var navigationPropertyBindings: [CSDLNavigationPropertyBinding] = []
    /// Where the set is declared.
    public var location: CSDLLocation
}

/// A `NavigationPropertyBinding` (or its V2 equivalent): the entity set a navigation property path leads to.
public struct CSDLNavigationPropertyBinding: Equatable, Sendable {
    /// The navigation property path (`Orders`, `NS.Derived/Orders`).
    public var path: String
    /// The target as written (`Orders`, `Container/Orders`).
    public var target: String

    /// Creates a binding.
    /// - Parameters:
    ///   - path: the navigation property path.
    ///   - target: the target entity set, as written.
    public init(path: String, target: String) {
        self.path = path
        self.target = target
    }
    /// The target entity set's name: the target's last path segment.
    public var targetSetName: String { target.split(separator: "/").last.map(String.init) ?? target }
}

/// A V2 `AssociationSet`: which entity set plays each role of an association.
public struct CSDLAssociationSet: Sendable {
    /// The association set's name.
    public var name: String
    /// The association: as written until resolution, then its qualified name.
    public var association: String
    /// Each end: its role (nil when not written) and its entity set.
    public var ends: [(role: String?, entitySet: String)] = []
    /// Where the association set starts.
    public var location: CSDLLocation
}

/// A resolved type reference.
public indirect enum CSDLTypeReference: Equatable, Sendable {
    /// An `Edm.*` primitive (type definitions resolve to their underlying primitive).
    case primitive(String)
    /// An enum type, by qualified name.
    case enumType(String)
    /// A complex type (or, improperly, an entity type used as a structural property), by qualified name.
    case structured(String)
    /// `Collection(X)`.
    case collection(CSDLTypeReference)
}
