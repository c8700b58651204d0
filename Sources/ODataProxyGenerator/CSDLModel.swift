// The CSDL model the parser builds and the emitter reads: schemas and their types, as the document declares them.
// Type references are kept as written until `CSDLDocument.resolve()` (in CSDLParser.swift) replaces aliases and
// resolves them into `CSDLTypeReference`s and V2 navigation targets.

/// The OData version family of a document.
enum ODataVersionFamily: Equatable, Sendable {
    /// EDMX 1.0 (OData V2, and V1/V3 which share its CSDL shape).
    case v2
    /// EDMX 4.0 / 4.01.
    case v4
}

/// Where an element is in the document: its text for messages (`<Property Name="City">`) and its line.
struct CSDLLocation: Equatable, Sendable {
    var element: String
    var line: Int
}

/// A whole `$metadata` document.
struct CSDLDocument: Sendable {
    var family: ODataVersionFamily = .v4
    /// `4.0`, `4.01`, or the V2 `m:DataServiceVersion` (`2.0`).
    var versionText: String = "4.0"
    var schemas: [CSDLSchema] = []
    /// Aliases from `edmx:Include Alias` and `Schema Alias`, to namespaces.
    var aliases: [String: String] = [:]
}

/// One `Schema`.
struct CSDLSchema: Sendable {
    var namespace: String
    var alias: String?
    var entityTypes: [CSDLStructuredType] = []
    var complexTypes: [CSDLStructuredType] = []
    var enumTypes: [CSDLEnumType] = []
    var typeDefinitions: [CSDLTypeDefinition] = []
    var associations: [CSDLAssociation] = []
    var entityContainers: [CSDLEntityContainer] = []
    /// Schema-level V4 functions and actions (not generated; listed).
    var operations: [CSDLNotGenerated] = []
    var location: CSDLLocation
}

/// An `EntityType` or a `ComplexType`.
struct CSDLStructuredType: Sendable {
    var isEntity: Bool
    var namespace: String
    var name: String
    var baseType: String?
    var isAbstract: Bool = false
    var hasStream: Bool = false
    /// The key's property names, nil without a `Key` element.
    var key: [String]?
    var properties: [CSDLProperty] = []
    var navigationProperties: [CSDLNavigationProperty] = []
    var location: CSDLLocation
    var qualifiedName: String { namespace + "." + name }
}

/// A structural `Property`.
struct CSDLProperty: Sendable {
    var name: String
    /// The type as written (`Edm.String`, `Collection(NS.T)`), then with aliases resolved.
    var type: String
    /// nil when the attribute is absent.
    var nullable: Bool?
    var maxLength: String?
    var precision: String?
    var scale: String?
    var location: CSDLLocation
    /// Set by resolution.
    var resolved: CSDLTypeReference?
}

/// A `NavigationProperty`: V4 `Type`, or V2 `Relationship`/`FromRole`/`ToRole`.
struct CSDLNavigationProperty: Sendable {
    var name: String
    var type: String?
    var nullable: Bool?
    var relationship: String?
    var fromRole: String?
    var toRole: String?
    var location: CSDLLocation
    /// Set by resolution: the target entity type's qualified name.
    var target: String = ""
    /// Set by resolution: to many (V4 `Collection(…)`, V2 multiplicity `*`).
    var isCollection: Bool = false
}

/// An `EnumType`.
struct CSDLEnumType: Sendable {
    var namespace: String
    var name: String
    var underlyingType: String?
    var isFlags: Bool
    var members: [CSDLEnumMember] = []
    var location: CSDLLocation
    var qualifiedName: String { namespace + "." + name }
}

/// An enum type's `Member`.
struct CSDLEnumMember: Sendable {
    var name: String
    var value: String?
    var location: CSDLLocation
}

/// A `TypeDefinition`: a named primitive type.
struct CSDLTypeDefinition: Sendable {
    var namespace: String
    var name: String
    var underlyingType: String
    var location: CSDLLocation
    var qualifiedName: String { namespace + "." + name }
}

/// A V2 `Association`.
struct CSDLAssociation: Sendable {
    var namespace: String
    var name: String
    var ends: [CSDLAssociationEnd] = []
    var location: CSDLLocation
}

/// An association's `End`: its role, entity type and multiplicity (`1`, `0..1`, `*`).
struct CSDLAssociationEnd: Sendable {
    var role: String
    var type: String
    var multiplicity: String
    var location: CSDLLocation
}

/// An `EntityContainer`.
struct CSDLEntityContainer: Sendable {
    var name: String
    var isDefault: Bool = false
    var entitySets: [CSDLEntitySet] = []
    /// Function imports, action imports and singletons: listed, not generated.
    var notGenerated: [CSDLNotGenerated] = []
    var location: CSDLLocation
}

/// An `EntitySet`.
struct CSDLEntitySet: Sendable {
    var name: String
    var entityType: String
    var location: CSDLLocation
}

/// A resolved type reference.
indirect enum CSDLTypeReference: Equatable, Sendable {
    /// An `Edm.*` primitive (type definitions resolve to their underlying primitive).
    case primitive(String)
    /// A generated enum type, by qualified name.
    case enumType(String)
    /// A complex type (or, improperly, an entity type used as a structural property), by qualified name.
    case structured(String)
    /// `Collection(X)`.
    case collection(CSDLTypeReference)
}

/// Something the generator lists but does not generate: a function import, an action, a singleton ….
struct CSDLNotGenerated: Equatable, Sendable {
    /// `function import`, `action import`, `singleton`, `function`, `action`.
    var kind: String
    /// The name (qualified for schema-level functions and actions).
    var name: String
}
