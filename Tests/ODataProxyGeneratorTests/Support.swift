import Foundation
import ODataMetadata
@testable import ODataProxyGenerator

/// Paths and helpers shared by the generator's tests.
enum Support {
    /// The package's root directory, from this file's path.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The bytes of a file below the package root.
    static func data(_ relativePath: String) throws -> Data {
        try Data(contentsOf: packageRoot.appendingPathComponent(relativePath))
    }

    /// Generates source for a document below the package root.
    static func generate(_ relativePath: String, serviceName: String? = nil) throws -> String {
        let name = (relativePath as NSString).lastPathComponent
        return try ProxyGenerator(serviceName: serviceName, sourceName: name).generate(metadata: data(relativePath))
    }

    /// Parses and resolves a document below the package root.
    static func parse(_ relativePath: String) throws -> CSDLDocument {
        try CSDLDocument(parsing: data(relativePath))
    }

    /// The generation error for an inline document, or nil if it generated.
    static func error(_ xml: String) -> GeneratorError? {
        do {
            _ = try ProxyGenerator(serviceName: nil, sourceName: "inline.xml").generate(metadata: Data(xml.utf8))
            return nil
        } catch {
            return error
        }
    }

    /// An entity type by qualified name.
    static func entityType(_ name: String, in document: CSDLDocument) -> CSDLStructuredType? {
        document.schemas.flatMap(\.entityTypes).first { $0.qualifiedName == name }
    }

    static let fixture = "Fixtures/Data/Fixture.metadata.xml"
    static let gwsample = "Proxies/Metadata/GWSAMPLE_BASIC.xml"
    static let product = "Proxies/Metadata/API_PRODUCT.xml"
    static let northwind = "Proxies/Metadata/Northwind.xml"
}
