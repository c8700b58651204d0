import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
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

/// A fixture producer plus a fresh store directory; stopped and removed by `run`.
struct Harness {
    let server: FixtureServer
    let directory: URL

    static func run<T: Sendable>(_ body: (Harness) async throws -> T) async throws -> T {
        let server = try await FixtureServer.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("online-\(UUID().uuidString)")
        let harness = Harness(server: server, directory: directory)
        do {
            let result = try await body(harness)
            await server.stop()
            try? FileManager.default.removeItem(at: directory)
            return result
        } catch {
            await server.stop()
            try? FileManager.default.removeItem(at: directory)
            throw error
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
        try OnlineODataStore(serviceRoot: server.serviceRoot, options: options(change))
    }

    func openStore(_ change: (inout OnlineStoreOptions) -> Void = { _ in }) async throws -> OnlineODataStore {
        let store = try store(change)
        try await store.open()
        return store
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
