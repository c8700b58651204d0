import Foundation
import ODataCore
import ODataTyped
import OfflineStore
import OnlineStore
import HTTPTypes
import Synchronization
import TechnicalCache
import Testing

/// A store wrapper that notes every request the typed layer makes (method, path, body).
final class RecordingProvider: DataServiceProvider {
    let base: any DataServiceProvider
    private let log = Mutex<[ODataRequest]>([])

    init(_ base: any DataServiceProvider) { self.base = base }

    var serviceRoot: String { base.serviceRoot }

    func executeRequest(_ request: ODataRequest) async throws -> ODataResponse? {
        log.withLock { $0.append(request) }
        return try await base.executeRequest(request)
    }

    func executeNextLink(_ nextLink: String) async throws -> ODataResponse? { try await base.executeNextLink(nextLink) }

    /// The requests made with `method`, in order.
    func requests(_ method: String) -> [ODataRequest] { log.withLock { $0.filter { $0.method.rawValue == method } } }

    /// The JSON bodies of the requests made with `method`.
    func bodies(_ method: String) throws -> [JSONObject] {
        try requests(method).compactMap { request in try request.body.map { try JSON.parse($0).objectValue ?? JSONObject() } }
    }
}

/// A temporary directory removed at the end of a test.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("typed-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Online store options with a cache in this directory and a cheap key derivation.
    func onlineOptions() -> OnlineStoreOptions {
        var options = OnlineStoreOptions()
        options.storeDirectory = URL(fileURLWithPath: path)
        options.cacheEncryptionKey = "typed tests"
        options.cacheKeyDerivation = .pbkdf2(rounds: 1_000)
        return options
    }

    /// Offline store parameters in this directory with a cheap key derivation.
    func offlineParameters() -> OfflineODataParameters {
        OfflineODataParameters(storeName: "typed", storePath: path, storeEncryptionKey: "typed tests",
                               keyDerivation: .pbkdf2(rounds: 1_000), enableRepeatableRequests: true)
    }
}

/// The two stores the typed scenarios run against.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case online
    case offline

    var testDescription: String { rawValue }
}
