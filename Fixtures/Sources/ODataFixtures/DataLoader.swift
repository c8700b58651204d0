import Foundation

/// Finds and reads a fixture data directory: a CSDL document and `<EntitySet>.json` payloads.
enum DataLoader {
    /// The bundled data: Northwind plus Events.
    static var bundledDirectory: URL? {
        Bundle.module.url(forResource: "Data", withExtension: nil)
    }

    /// The bundled data, parsed once per process (a lazily initialized global, so the first
    /// caller parses and the others wait): every server gets its own copy of this value
    /// (copy-on-write), so starting many servers in one test run costs one parse. Loaded data
    /// counts as changed an hour before the first load.
    private static let bundled: Result<FixtureData, FixtureError> = Result { () throws(FixtureError) in
        try read(nil, loadedAt: Int64(Date().timeIntervalSince1970) - 3600)
    }

    /// Loads the model and data from a directory (the bundled one when `nil`).
    /// - Throws: ``FixtureError`` `.invalidData` when the directory, the CSDL or a payload cannot be used.
    static func load(_ directory: URL?, loadedAt: Int64) throws(FixtureError) -> FixtureData {
        guard directory == nil else { return try read(directory, loadedAt: loadedAt) }
        return try bundled.get()
    }

    private static func read(_ directory: URL?, loadedAt: Int64) throws(FixtureError) -> FixtureData {
        guard let root = directory ?? bundledDirectory else {
            throw FixtureError(.invalidData, "the bundled fixture data is missing from the ODataFixtures resources")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw FixtureError(.invalidData, "the data directory \(root.path) does not exist")
        }
        var xmlFiles: [URL] = []
        var jsonFiles: [URL] = []
        if let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) {
            for case let url as URL in walker {
                switch url.pathExtension.lowercased() {
                case "xml": xmlFiles.append(url)
                case "json": jsonFiles.append(url)
                default: continue
                }
            }
        }
        // The extended document wins over the plain Northwind one it was made from.
        xmlFiles.sort { lhs, rhs in
            (lhs.lastPathComponent == "Fixture.metadata.xml" ? 0 : 1, lhs.path)
                < (rhs.lastPathComponent == "Fixture.metadata.xml" ? 0 : 1, rhs.path)
        }
        var csdl: String?
        for file in xmlFiles {
            guard let text = try? String(contentsOf: file, encoding: .utf8) else { continue }
            if text.contains("EntityContainer") {
                csdl = text
                break
            }
        }
        guard let csdl else {
            throw FixtureError(.invalidData, "no CSDL document (*.xml with an EntityContainer) under \(root.path)")
        }
        let model = try ServiceModel(csdl: csdl)
        var payloads: [String: [UInt8]] = [:]
        for file in jsonFiles.sorted(by: { $0.path < $1.path }) {
            let name = file.deletingPathExtension().lastPathComponent
            guard model.entitySet(name) != nil, payloads[name] == nil else { continue }
            guard let bytes = try? Data(contentsOf: file) else {
                throw FixtureError(.invalidData, "cannot read \(file.path)")
            }
            payloads[name] = [UInt8](bytes)
        }
        return try FixtureData(model: model, payloads: payloads, loadedAt: loadedAt)
    }
}
