import Foundation
import ODataMetadata

/// Turns an OData `$metadata` document (CSDL: EDMX 4.0/4.01, or EDMX 1.0 with OData V2) into Swift source for the
/// `ODataTyped` runtime: a struct per entity and complex type, an enum per enum type, and a service struct per entity
/// container with typed `fetch…`, `create…`, `update…` and `delete…` methods per entity set.
///
/// The output is deterministic: the same document and options give the same text.
public struct ProxyGenerator: Sendable {
    /// The service type's name; nil derives it from the entity container (`NorthwindEntities` →
    /// `NorthwindEntitiesService`).
    public let serviceName: String?
    /// The document's name, written into the generated file's header (`Northwind.xml`).
    public let sourceName: String

    /// Creates a generator.
    /// - Parameters:
    ///   - serviceName: the service type's name, or nil to derive it from the entity container's name.
    ///   - sourceName: the document's name, for the generated file's header.
    public init(serviceName: String?, sourceName: String) {
        self.serviceName = serviceName
        self.sourceName = sourceName
    }

    /// Generates the Swift source for a `$metadata` document.
    /// - Parameter metadata: the document's bytes.
    /// - Returns: the Swift source text.
    /// - Throws: ``GeneratorError`` naming what was wrong, the element and its line.
    public func generate(metadata: Data) throws(GeneratorError) -> String {
        let document: CSDLDocument
        do {
            document = try CSDLDocument(parsing: metadata)
        } catch {
            throw GeneratorError(metadata: error)
        }
        return try SwiftEmitter(document: document, serviceName: serviceName, sourceName: sourceName).emit()
    }
}
