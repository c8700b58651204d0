import Foundation
import HTTPTypes
import ODataCore
import ODataTesting
import Synchronization
import TechnicalCache
@testable import OnlineStore

/// Records every callback with the status the execution had at that moment.
final class CallbackRecorder: ODataRequestListener {
    private let log = LockedValue<[String]>([])
    private let objects = LockedValue<[String: ObjectIdentifier]>([:])
    let cacheResponses = LockedValue<[ODataResponse?]>([])

    var entries: [String] { log.withLock { $0 } }
    func object(_ name: String) -> ObjectIdentifier? { objects.withLock { $0[name] } }

    func requestStarted(_ execution: RequestExecution) { log.withLock { $0.append("started(\(execution.status))") } }
    func requestCacheResponse(_ execution: RequestExecution, response: ODataResponse?) {
        log.withLock { $0.append("cacheResponse(\(execution.status))") }
        cacheResponses.withLock { $0.append(response) }
    }
    func requestServerResponse(_ execution: RequestExecution, response: ODataResponse) {
        log.withLock { $0.append("serverResponse(\(execution.status))") }
        objects.withLock { $0["server"] = ObjectIdentifier(response) }
    }
    func requestFailed(_ execution: RequestExecution, error: any Error, response: ODataResponse?) {
        log.withLock { $0.append("failed(\(execution.status))") }
        if let response { objects.withLock { $0["failed"] = ObjectIdentifier(response) } }
    }
    func requestFinished(_ execution: RequestExecution, response: ODataResponse?) {
        log.withLock { $0.append("finished(\(execution.status))") }
        if let response { objects.withLock { $0["finished"] = ObjectIdentifier(response) } }
    }
}

/// A scripted back end plus a fresh store directory (ODataTesting's `withTemporaryDirectory`), removed by `run`.
struct Harness {
    let backEnd: ScriptedTransport
    let directory: URL

    static func run<T: Sendable>(on backEnd: ScriptedTransport, _ body: (Harness) async throws -> T) async throws -> T {
        try await withTemporaryDirectory { directory in
            try await body(Harness(backEnd: backEnd, directory: directory))
        }
    }

    func options(_ change: (inout OnlineStoreOptions) -> Void = { _ in }) -> OnlineStoreOptions {
        var options = OnlineStoreOptions()
        options.storeDirectory = directory
        options.cacheEncryptionKey = "correct horse battery staple"
        options.cacheKeyDerivation = .pbkdf2(rounds: 1_000)
        change(&options)
        return options
    }

    func store(_ change: (inout OnlineStoreOptions) -> Void = { _ in }) throws -> OnlineODataStore {
        try OnlineODataStore(serviceRoot: backEnd.serviceRoot, options: options(change), transport: backEnd)
    }

    func openStore(_ change: (inout OnlineStoreOptions) -> Void = { _ in }) async throws -> OnlineODataStore {
        let store = try store(change)
        try await store.open()
        return store
    }
}

extension ScriptedTransport {
    /// The customers `customers()` serves, by key.
    static let customerNames: KeyValuePairs<String, String> = ["ALFKI": "Alfreds Futterkiste", "ANATR": "Ana Trujillo Emparedados y helados"]

    /// A customer as the back end answers it.
    static func customer(_ id: String) -> JSONValue {
        let name = customerNames.first { $0.key == id }?.value ?? id
        return ["CustomerID": .string(id), "CompanyName": .string(name), "Region": .null]
    }

    /// A back end with Northwind's customers ALFKI and ANATR: each by key, its null `Region` (204, no body),
    /// `Customers` as a collection, the service root (for the CSRF token fetch), and `$batch` answered part by
    /// part from the same.
    static func customers() -> ScriptedTransport {
        let backEnd = ScriptedTransport()
        for (id, _) in customerNames {
            backEnd.on("GET", "Customers('\(id)')", reply: .entity(customer(id)))
                .on("GET", "Customers('\(id)')/Region", reply: .status(204))
        }
        backEnd.on("GET", "Customers", reply: .collection(customerNames.map { customer($0.key) }))
        backEnd.on("GET", "", reply: .status(200))  // the CSRF token fetch before the first write or $batch
        backEnd.on("POST", "$batch", reply: .batch { request in
            guard let id = customerNames.first(where: { request.resourcePath == "Customers('\($0.key)')" })?.key else {
                return ODataResponse(statusCode: 404)
            }
            return ODataResponse(statusCode: 200, headerFields: [.contentType: "application/json"], payload: Data(JSON.string(customer(id)).utf8))
        })
        return backEnd
    }
}

/// Runs one request and returns its callback log once it finished.
@discardableResult
func record(_ store: OnlineODataStore, _ request: ODataRequest) async -> (CallbackRecorder, RequestExecution) {
    let recorder = CallbackRecorder()
    let execution = store.execute(request, listener: recorder)
    _ = try? await execution.result()
    return (recorder, execution)
}

/// Runs one batch and returns its callback log once it finished.
@discardableResult
func record(_ store: OnlineODataStore, batch: BatchRequest) async -> (CallbackRecorder, RequestExecution) {
    let recorder = CallbackRecorder()
    let execution = store.execute(batch: batch, listener: recorder)
    _ = try? await execution.result()
    return (recorder, execution)
}

let activeSuccess = ["started(initialized)", "cacheResponse(inProgress)", "serverResponse(inProgress)", "finished(completed)"]
let serverSuccess = ["started(initialized)", "serverResponse(inProgress)", "finished(completed)"]
let passiveSuccess = ["started(initialized)", "cacheResponse(inProgress)", "finished(completed)"]
let immediateFailure = ["started(initialized)", "failed(failed)", "finished(failed)"]
let activeFailure = ["started(initialized)", "cacheResponse(inProgress)", "failed(failed)", "finished(failed)"]
