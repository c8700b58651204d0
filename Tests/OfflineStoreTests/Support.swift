import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import Synchronization
import TechnicalCache
import Testing

@testable import OfflineStore

/// A temporary directory removed at the end of a test.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("offline-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Records a provider's state changes, download progress, failed requests and resolved conflicts.
final class RecordingDelegate: OfflineODataDelegate {
    let states = LockedValue<[OfflineODataStoreState]>([])
    let progress = LockedValue<[OfflineODataDownloadProgress]>([])
    let failures = LockedValue<[ErrorArchiveEntry]>([])
    let resolutions = LockedValue<[OfflineODataResolvedConflict]>([])

    func offlineODataProvider(_ provider: OfflineODataProvider, didResolveConflict resolved: OfflineODataResolvedConflict) {
        resolutions.withLock { $0.append(resolved) }
    }

    /// The requests the delegate was told failed.
    var failedRequests: [ErrorArchiveEntry] { failures.withLock { $0 } }

    func offlineODataProvider(_ provider: OfflineODataProvider, requestDidFail failure: ErrorArchiveEntry) {
        failures.withLock { $0.append(failure) }
    }

    func offlineODataProvider(_ provider: OfflineODataProvider, didChangeState state: OfflineODataStoreState) {
        states.withLock { $0.append(state) }
    }

    func offlineODataProvider(_ provider: OfflineODataProvider, didUpdateDownloadProgress progress: OfflineODataDownloadProgress) {
        self.progress.withLock { $0.append(progress) }
    }
}

enum Northwind {
    /// Defining queries used by most tests: paged Orders, an `$expand`, plain sets.
    static let definingQueries = [
        OfflineODataDefiningQuery(name: "customers", query: "Customers?$expand=Orders"),
        OfflineODataDefiningQuery(name: "orders", query: "Orders"),
        OfflineODataDefiningQuery(name: "details", query: "Order_Details"),
        OfflineODataDefiningQuery(name: "products", query: "Products?$expand=Category,Supplier"),
        OfflineODataDefiningQuery(name: "employees", query: "Employees"),
        OfflineODataDefiningQuery(name: "shippers", query: "Shippers"),
    ]

    static let key = "correct horse battery staple"

    static func parameters(_ directory: TemporaryDirectory, key: String? = Northwind.key, name: String = "northwind",
                           pageSize: Int = 0) -> OfflineODataParameters {
        OfflineODataParameters(storeName: name, storePath: directory.path, storeEncryptionKey: key,
                               keyDerivation: .pbkdf2(rounds: 1_000), pageSize: pageSize)
    }

    static func provider(_ server: FixtureServer, _ directory: TemporaryDirectory, key: String? = Northwind.key,
                         pageSize: Int = 0, queries: [OfflineODataDefiningQuery] = Northwind.definingQueries,
                         delegate: (any OfflineODataDelegate)? = nil) async throws -> OfflineODataProvider {
        let provider = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: parameters(directory, key: key, pageSize: pageSize), delegate: delegate)
        for query in queries { try await provider.add(definingQuery: query) }
        return provider
    }

    /// An opened provider over a freshly started producer; the caller stops both.
    static func openStore(pageSize: Int = 0) async throws -> (FixtureServer, TemporaryDirectory, OfflineODataProvider) {
        let server = try await FixtureServer.start()
        let directory = try TemporaryDirectory()
        let provider = try await provider(server, directory, pageSize: pageSize)
        try await provider.open()
        return (server, directory, provider)
    }
}

extension OfflineODataProvider {
    /// GET a local path (with an encoded query) and parse the JSON.
    func get(_ url: String) async throws -> JSONValue {
        let response = try await execute(.local("GET", url))
        #expect(response.statusCode == 200, "GET \(url)")
        return try JSON.parse(response.payload)
    }

    /// Every entity of a local collection, following local next links.
    func getAll(_ url: String) async throws -> [JSONObject] {
        var page = try await get(url)
        var result = (page["value"]?.arrayValue ?? []).compactMap(\.objectValue)
        while let next = page["@odata.nextLink"]?.stringValue {
            page = try JSON.parse(try await execute(nextLink: next).payload)
            result += (page["value"]?.arrayValue ?? []).compactMap(\.objectValue)
        }
        return result
    }
}

extension ODataRequest {
    /// A request from a method and a relative URL with an already encoded query.
    static func local(_ method: String, _ url: String, body: String? = nil, tag: String? = nil) -> ODataRequest {
        let pieces = url.split(separator: "?", maxSplits: 1)
        let options = pieces.count == 2 ? pieces[1].split(separator: "&").map { QueryOption.encoded(String($0)) } : []
        return ODataRequest(method: .init(method)!, resourcePath: String(pieces[0]), queryOptions: options,
                            body: body.map { Data($0.utf8) }, customTag: tag)
    }
}

/// Reads from the producer over real HTTP.
enum Producer {
    static func get(_ server: FixtureServer, _ url: String) async throws -> (Int, JSONValue?) {
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        let response = try await transport.send(TransportRequest(url: server.serviceRoot + url, headerFields: [.accept: "application/json"]))
        return (response.status, try? JSON.parse(response.body))
    }

    /// Every entity of a producer collection, following its next links.
    static func getAll(_ server: FixtureServer, _ url: String) async throws -> (entities: [JSONObject], count: Int?) {
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        var next: String? = server.serviceRoot + url
        var result: [JSONObject] = []
        var count: Int?
        while let link = next {
            let response = try await transport.send(TransportRequest(url: link, headerFields: [.accept: "application/json"]))
            try #require(response.status == 200, "producer GET \(link) answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
            let page = try JSON.parse(response.body)
            result += (page["value"]?.arrayValue ?? []).compactMap(\.objectValue)
            if count == nil { count = page["@odata.count"]?.intValue.map(Int.init) }
            next = page["@odata.nextLink"]?.stringValue.map { $0.hasPrefix("http") ? $0 : server.serviceRoot + $0 }
        }
        return (result, count)
    }
}

/// An entity without its annotations (and without nested annotations), for comparing payloads.
func plain(_ object: JSONObject) -> JSONObject {
    var result = JSONObject()
    for (name, value) in object where !name.contains("@") {
        switch value {
        case .object(let nested): result.append(.object(plain(nested)), forKey: name)
        case .array(let items): result.append(.array(items.map { $0.objectValue.map { .object(plain($0)) } ?? $0 }), forKey: name)
        default: result.append(value, forKey: name)
        }
    }
    return result
}

/// Whether a file under `directory` contains `needle`.
func filesContain(_ directory: String, _ needle: String) throws -> Bool {
    let bytes = Array(needle.utf8)
    let enumerator = FileManager.default.enumerator(atPath: directory)
    while let file = enumerator?.nextObject() as? String {
        guard let data = FileManager.default.contents(atPath: directory + "/" + file) else { continue }
        if data.range(of: Data(bytes)) != nil { return true }
    }
    return false
}

/// Where two entity lists first differ, or nil when they are equal (short, for test messages).
func difference(_ local: [JSONObject], _ expected: [JSONObject]) -> String? {
    if local.count != expected.count { return "\(local.count) entities locally, \(expected.count) expected" }
    for (index, pair) in zip(local, expected).enumerated() where pair.0 != pair.1 {
        return "entity \(index) differs: local \(JSON.string(.object(pair.0))) expected \(JSON.string(.object(pair.1)))"
    }
    return nil
}

extension EntityStore {
    /// The number of records of a set (tombstones included), walked one at a time.
    func recordCount(in set: String) throws -> Int {
        var count = 0
        try forEachRecord(in: set) { _ in count += 1; return true }
        return count
    }

    /// Every record of every set (tombstones included), for tests that compare a whole small store.
    func everyRecord() throws -> [EntityRecord] {
        var records: [EntityRecord] = []
        for table in allTables() { try forEachRecord(in: table.set) { records.append($0); return true } }
        return records
    }
}
