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
    /// The entity sets and singletons to generate, with the types they need (their properties' types, base types
    /// and navigation targets, transitively); nil generates the whole document.
    public let only: [String]?

    /// Creates a generator.
    /// - Parameters:
    ///   - serviceName: the service type's name, or nil to derive it from the entity container's name.
    ///   - sourceName: the document's name, for the generated file's header.
    ///   - only: the entity sets and singletons to generate with their closure, or nil for the whole document.
    public init(serviceName: String?, sourceName: String, only: [String]? = nil) {
        self.serviceName = serviceName
        self.sourceName = sourceName
        self.only = only
    }

    /// Generates the Swift source for a `$metadata` document.
    /// - Parameter metadata: the document's bytes.
    /// - Returns: the Swift source text.
    /// - Throws: ``GeneratorError`` naming what was wrong, the element and its line.
    public func generate(metadata: Data) throws(GeneratorError) -> String {
        try generate(metadata: metadata, references: []).source
    }

    /// Generates the Swift source for a `$metadata` document and the documents it references.
    /// - Parameters:
    ///   - metadata: the document's bytes.
    ///   - references: the bytes of documents it includes with `edmx:Reference` (vocabularies, other services), so
    ///     that properties of their types are typed; their types are generated where the document uses them.
    /// - Returns: the source, in one piece or split into files, and the reader's warnings.
    /// - Throws: ``GeneratorError`` naming what was wrong, the element and its line.
    public func generate(metadata: Data, references: [Data]) throws(GeneratorError) -> GeneratedProxies {
        let document: CSDLDocument
        let clock = ContinuousClock()
        let started = clock.now
        do {
            document = try CSDLDocument(parsing: metadata, references: references)
        } catch {
            throw GeneratorError(metadata: error)
        }
        let readTime = clock.now - started
        let closure = try TypeClosure(document: document, only: only)
        let output = try SwiftEmitter(
            document: document, serviceName: serviceName, sourceName: sourceName, closure: closure
        ).emit()
        return GeneratedProxies(
            header: output.header, blocks: output.blocks, footer: output.footer, warnings: document.warnings,
            readTime: readTime, typeCount: closure.included.count)
    }
}

/// What the generator wrote: the source, and what the `$metadata` reader accepted in a weaker form than written.
public struct GeneratedProxies: Sendable {
    private let header: String
    private let blocks: [String]
    private let footer: String
    /// The reader's warnings (element, line, what it did instead), in document order.
    public let warnings: [MetadataWarning]
    /// How long reading and resolving the document (and its references) took, of the whole generation.
    public let readTime: Duration
    /// How many entity, complex and enum types were generated.
    public let typeCount: Int

    init(
        header: String, blocks: [String], footer: String, warnings: [MetadataWarning], readTime: Duration,
        typeCount: Int
    ) {
        self.header = header
        self.blocks = blocks
        self.footer = footer
        self.warnings = warnings
        self.readTime = readTime
        self.typeCount = typeCount
    }

    /// The whole source as one file.
    public var source: String {
        header + blocks.map { "\n" + $0 }.joined() + footer
    }

    /// The source split into files of about `maxBytes` each (a type is never split; the first file has the
    /// closing comment): for a document as large as Microsoft Graph's, whose single file the compiler would take
    /// as one unit of work.
    /// - Parameter maxBytes: the size a file should stay under (one larger type makes a larger file).
    /// - Returns: the files' texts, in order.
    public func files(maxBytes: Int) -> [String] {
        var files: [String] = []
        var current = header
        for block in blocks {
            if current.utf8.count + block.utf8.count + 1 > maxBytes, current.utf8.count > header.utf8.count {
                files.append(current)
                current = header
            }
            current += "\n" + block
        }
        files.append(current)
        files[0] += footer
        return files
    }
}
