import Foundation
import HTTPTypes
import ODataCore
import ODataTesting
import Synchronization
import TechnicalCache
import Testing
@testable import OnlineStore

@Suite struct BehaviourTests {
    @Test func activeReadsRevalidateWithA304AndFewBytes() async throws {
        let orders = (0..<60).map { index -> JSONValue in
            ["OrderID": .int(Int64(10_248 + index)), "CustomerID": "ALFKI", "ShipName": "Alfreds Futterkiste", "ShipCity": "Berlin"]
        }
        let body = Data(JSON.string(["value": .array(orders)]).utf8)
        let etag = #"W/"orders-1""#
        let backEnd = ScriptedTransport()
        backEnd.on("GET", "Orders", query: ["$top": "60"]) { request in
            request.headerFields[.ifNoneMatch] == etag
                ? .response(onTheWire(304, [.eTag: etag], Data()))
                : .response(onTheWire(200, [.contentType: "application/json", .eTag: etag], body))
        }
        try await Harness.run(on: backEnd) { harness in
            let store = try await harness.openStore()
            let request = ODataRequest.get("Orders", .top(60))
            let (first, firstExecution) = await record(store, request)
            #expect(first.entries == activeSuccess)
            #expect(first.cacheResponses.withLock { $0 } .count == 1)
            #expect(first.cacheResponses.withLock { $0[0] } == nil, "nothing cached before the first read")
            let full = try #require(try await firstExecution.result())
            #expect(!full.isFromCache && full.statusCode == 200)
            let bytesAfterFirst = store.statistics.bytesReceived

            let (second, secondExecution) = await record(store, request)
            if second.entries != activeSuccess {  // say why: the execution's error
                do { _ = try await secondExecution.result() } catch { Issue.record("the second read failed: \(error)") }
            }
            #expect(second.entries == activeSuccess)
            let cached = try #require(second.cacheResponses.withLock { $0.first ?? nil })
            #expect(cached.isFromCache && cached.payload == full.payload)
            let revalidated = try #require(try await secondExecution.result())
            #expect(revalidated.isRevalidated && revalidated.payload == full.payload)
            #expect(store.statistics.notModified == 1)
            let bytesOfRevalidation = store.statistics.bytesReceived - bytesAfterFirst
            #expect(bytesOfRevalidation * 10 < bytesAfterFirst, "304: \(bytesOfRevalidation) bytes vs full read \(bytesAfterFirst)")
            #expect(backEnd.requests("GET", "Orders").map { $0.headerFields[.ifNoneMatch] } == [nil, etag])
        }
    }

    @Test func theFinishedResponseIsTheVeryServerResponseObject() async throws {
        let backEnd = ScriptedTransport()
        backEnd.on("GET", "Customers('ALFKI')", reply: .entity(["CustomerID": "ALFKI"]))
            .on("GET", "Customers('NOPE0')", reply: .odataError(status: 404, code: "NotFound", message: "no customer NOPE0"))
        try await backEnd.withOnlineStore { store in
            let (success, _) = await record(store, .get("Customers('ALFKI')"))
            #expect(success.object("finished") != nil && success.object("finished") == success.object("server"))
            let (failure, _) = await record(store, .get("Customers('NOPE0')"))
            #expect(failure.entries == activeFailure)
            #expect(failure.object("finished") != nil && failure.object("finished") == failure.object("failed"))
        }
    }

    @Test func passiveModeAnswersFromTheCacheWithoutTheNetwork() async throws {
        try await Harness.run(on: ScriptedTransport.customers()) { harness in
            let store = try await harness.openStore()
            _ = await record(store, .get("Customers('ALFKI')"))
            try store.setMode(.passive)
            harness.backEnd.removeRecordedRequests()
            let (hit, hitExecution) = await record(store, .get("Customers('ALFKI')"))
            #expect(hit.entries == passiveSuccess)
            #expect(try await hitExecution.result()?.isFromCache == true)
            let (miss, missExecution) = await record(store, .get("Customers('ANATR')"))
            #expect(miss.entries == passiveSuccess, "nothing cached is not a failure in passive mode")
            #expect(try await missExecution.result() == nil)
            #expect(miss.cacheResponses.withLock { $0 }.count == 1 && miss.cacheResponses.withLock { $0[0] } == nil)
            #expect(harness.backEnd.requests.isEmpty, "passive mode sends nothing")
            await store.waitForCacheWrites()
            let statistics = store.statistics.cache
            #expect(statistics?.writes == 1, "passive mode changes no entry")
        }
    }

    /// A read that cannot become a URL is a failed read: in active mode its (empty) cache answer
    /// still comes first; in passive mode it fails without one.
    @Test func aMalformedReadFailsWithTheModesSequence() async throws {
        try await Harness.run(on: ScriptedTransport.customers()) { harness in
            let store = try await harness.openStore()
            let bad = ODataRequest(resourcePath: "Customers", queryOptions: [.top(-1)])
            let (active, execution) = await record(store, bad)
            #expect(active.entries == ["started(initialized)", "cacheResponse(inProgress)", "failed(failed)", "finished(failed)"])
            #expect(active.cacheResponses.withLock { $0.count == 1 && $0[0] == nil })
            await #expect(throws: ODataError.self) { try await execution.result() }
            try store.setMode(.passive)
            let (passive, _) = await record(store, bad)
            #expect(passive.entries == ["started(initialized)", "failed(failed)", "finished(failed)"])
            #expect(harness.backEnd.requests.isEmpty, "nothing was sent")
        }
    }

    @Test func anEmptyPayloadIsNotNoResponse() async throws {
        try await Harness.run(on: ScriptedTransport.customers()) { harness in
            let store = try await harness.openStore()
            // ALFKI's Region is null: the back end answers 204 with no body, which is cached as an empty payload.
            let (_, execution) = await record(store, .get("Customers('ALFKI')/Region"))
            let server = try #require(try await execution.result())
            #expect(server.statusCode == 204 && server.payload.isEmpty)
            try store.setMode(.passive)
            let (recorder, _) = await record(store, .get("Customers('ALFKI')/Region"))
            let cached = try #require(recorder.cacheResponses.withLock { $0[0] }, "an empty payload is a cached response, not nil")
            #expect(cached.payload.isEmpty && cached.statusCode == 204)
            let (never, _) = await record(store, .get("Customers('ANATR')/Region"))
            #expect(never.cacheResponses.withLock { $0[0] } == nil)
        }
    }

    @Test(arguments: [404, 410])
    func goneResourcesAreEvictedAndOtherFailuresLeaveTheEntry(status: Int) async throws {
        let backEnd = ScriptedTransport()
        backEnd.on("GET", "Customers('ALFKI')", replies: [
            .entity(ScriptedTransport.customer("ALFKI")),
            .odataError(status: 503, code: "DOWN", message: "maintenance"),
            .odataError(status: status, code: "GONE", message: "gone"),
        ])
        try await Harness.run(on: backEnd) { harness in
            let store = try await harness.openStore()
            let request = ODataRequest.get("Customers('ALFKI')")
            _ = await record(store, request)
            let (failed, _) = await record(store, request)
            #expect(failed.entries == activeFailure)
            #expect(failed.cacheResponses.withLock { $0[0] } != nil, "a 503 leaves the entry")
            let (gone, goneExecution) = await record(store, request)
            #expect(gone.entries == activeFailure)
            await #expect(throws: ODataServiceError.self) { try await goneExecution.result() }
            try store.setMode(.passive)
            let (after, _) = await record(store, request)
            #expect(after.cacheResponses.withLock { $0[0] } == nil, "\(status) removed the entry")
        }
    }

    @Test func identicalConcurrentReadsShareOneServerRequest() async throws {
        let backEnd = ScriptedTransport()
        backEnd.on("GET", "Products", reply: .collection([["ProductID": 1]]).after(.milliseconds(300)))
        try await backEnd.withOnlineStore { store in
            let recorders = (0..<50).map { _ in CallbackRecorder() }
            let executions = recorders.map { store.execute(.get("Products"), listener: $0) }
            for execution in executions { _ = try await execution.result() }
            for recorder in recorders { #expect(recorder.entries == activeSuccess) }
            #expect(backEnd.requests("GET", "Products").count == 1)
            #expect(store.statistics.coalesced == 49)
        }
    }

    /// The same through `response(for:)` without a listener (no execution is made): one request, every caller its answer.
    @Test func identicalConcurrentDirectReadsShareOneServerRequest() async throws {
        let backEnd = ScriptedTransport()
        backEnd.on("GET", "Products", reply: .collection([["ProductID": 1]]).after(.milliseconds(300)))
        try await backEnd.withOnlineStore { store in
            let answers = try await withThrowingTaskGroup(of: ODataResponse?.self) { group in
                for _ in 0..<20 { group.addTask { try await store.response(for: ODataRequest(resourcePath: "Products", useCache: false)) } }
                return try await group.reduce(into: [ODataResponse?]()) { $0.append($1) }
            }
            #expect(answers.count == 20 && answers.allSatisfy { $0?.isSuccess == true })
            #expect(backEnd.requests("GET", "Products").count == 1)
            #expect(store.statistics.coalesced == 19)
        }
    }

    /// A read that begins after a write this store made never shares the answer of a read that began
    /// before it; and that earlier read's slower answer never replaces the later one in the cache.
    @Test func aReadAfterAWriteGetsTheNewValueAndKeepsItCached() async throws {
        let backEnd = ScriptedTransport()
        let unitsInStock = LockedValue<Int64>(17)
        let reads = LockedValue(0)
        let (sent, sentSignal) = AsyncStream<Void>.makeStream()
        let (release, releaseSignal) = AsyncStream<Void>.makeStream()
        backEnd.on("GET", "Products(1)") { _ in
            let stock = unitsInStock.withLock { $0 }  // read now, answered later
            if reads.withLock({ $0 += 1; return $0 }) == 1 {
                // The first read is executed at once but its answer arrives only when the test releases it.
                sentSignal.yield()
                for await _ in release { break }
            }
            return .entity(["ProductID": 1, "UnitsInStock": .int(stock)])
        }
        backEnd.on("GET", "", reply: .status(200))  // the CSRF token fetch before the write
        backEnd.on("PATCH", "Products(1)") { request in
            guard request.body.map({ String(decoding: $0, as: UTF8.self) }) == #"{"UnitsInStock":4242}"# else { return .status(400) }
            unitsInStock.withLock { $0 = 4242 }
            // A write takes a few milliseconds, as over a network: the cache orders answers by the millisecond
            // their requests were sent, and the early read must have been sent in an earlier one.
            return .status(204).after(.milliseconds(5))
        }
        try await Harness.run(on: backEnd) { harness in
            let store = try await harness.openStore()
            func stock(_ response: ODataResponse?) throws -> Int64? { try response?.entity().properties["UnitsInStock"]?.intValue }
            let early = store.execute(.get("Products(1)"))
            for await _ in sent { break }
            var patch = ODataRequest(method: .patch, resourcePath: "Products(1)", body: Data(#"{"UnitsInStock":4242}"#.utf8))
            patch.headerFields[.contentType] = "application/json"
            #expect(try await store.execute(patch).result()?.isSuccess == true)
            let late = try await store.execute(.get("Products(1)")).result()
            #expect(try stock(late) == 4242, "not the answer of the read that began before the write")
            #expect(early.status == .inProgress || early.status == .initialized, "the early read is still under way")
            releaseSignal.yield()
            let earlyResponse = try await early.result()
            #expect(try stock(earlyResponse) != 4242, "the early read was executed before the write")
            #expect(backEnd.requests("GET", "Products(1)").count == 2 && store.statistics.coalesced == 0)
            #expect(store.statistics.cache?.supersededWrites == 1)
            try store.setMode(.passive)
            #expect(try stock(await store.execute(.get("Products(1)")).result()) == 4242, "the cache kept the later answer")
        }
    }

    @Test func closingTheStoreWhileRequestsRunEndsEachClearly() async throws {
        let backEnd = ScriptedTransport()
        backEnd.on("GET", "Customers", reply: .collection([ScriptedTransport.customer("ALFKI")]).after(.milliseconds(200)))
        try await Harness.run(on: backEnd) { harness in
            let store = try await harness.openStore()
            let executions = (0..<100).map { store.execute(.get("Customers", .top($0 + 1))) }
            try await Task.sleep(for: .milliseconds(50))
            store.close()
            for execution in executions {
                _ = try? await execution.result()
                #expect(execution.status == .failed || execution.status == .completed)
            }
            #expect(executions.contains { $0.status == .failed })
            let (after, _) = await record(store, .get("Customers"))
            #expect(after.entries == immediateFailure)
        }
    }

    @Test func closingTheCacheWhileRequestsRunDoesNotCrash() async throws {
        let backEnd = ScriptedTransport()
        backEnd.on("GET", "Customers", reply: .collection([ScriptedTransport.customer("ALFKI")]).after(.milliseconds(100)))
        try await Harness.run(on: backEnd) { harness in
            let store = try await harness.openStore()
            let executions = (0..<100).map { store.execute(.get("Customers", .skip($0))) }
            try await Task.sleep(for: .milliseconds(30))
            store.closeCache()
            for execution in executions {
                _ = try? await execution.result()
                #expect(execution.status == .completed || execution.status == .failed)
            }
            try store.reopenCache()
            #expect(store.isCacheOpen)
        }
    }

    /// The random cache key goes to the application's key store, not to a file; a store holding
    /// another key cannot open the cache; switching encryption off while giving a key is refused.
    @Test func theApplicationsKeyStoreKeepsTheRandomKey() async throws {
        final class MemoryKeyStore: KeyStore {
            let key = LockedValue<String?>(nil)
            func loadKey() throws -> String? { key.withLock { $0 } }
            func saveKey(_ key: String) throws { self.key.withLock { $0 = key } }
        }
        try await Harness.run(on: ScriptedTransport.customers()) { harness in
            let keyStore = MemoryKeyStore()
            let change: (inout OnlineStoreOptions) -> Void = { options in
                options.cacheEncryptionKey = nil
                options.cacheKeyStore = keyStore
            }
            let store = try await harness.openStore(change)
            _ = await record(store, .get("Customers('ALFKI')"))
            store.close()
            let saved = try #require(keyStore.key.withLock { $0 })
            #expect(saved.count >= 32)
            let cacheFolder = harness.directory.appendingPathComponent("online.cache")
            #expect(!FileManager.default.fileExists(atPath: cacheFolder.appendingPathComponent("cache.key").path), "no key file")
            // The same key store opens the cache with its entries.
            let again = try await harness.openStore(change)
            try again.setMode(.passive)
            let (kept, _) = await record(again, .get("Customers('ALFKI')"))
            #expect(kept.cacheResponses.withLock { $0[0] } != nil)
            again.close()
            // Another key store (another random key) cannot open it.
            let other = try harness.store { options in
                options.cacheEncryptionKey = nil
                options.cacheKeyStore = MemoryKeyStore()
            }
            await #expect(throws: (any Error).self, "a wrong key never opens the cache") { try await other.open() }
            #expect(!other.isCacheOpen)
            #expect(throws: ODataError.self) {
                _ = try harness.store { options in
                    options.disableCacheEncryption = true
                }
            }
        }
    }

    /// A rekeyed cache keeps its entries and opens with the new passphrase only.
    @Test func rekeyingTheCacheKeepsItsEntries() async throws {
        try await Harness.run(on: ScriptedTransport.customers()) { harness in
            let store = try await harness.openStore()
            _ = await record(store, .get("Customers('ALFKI')"))
            try store.rekeyCache(to: "a new passphrase")
            store.closeCache()
            #expect(throws: (any Error).self, "the old passphrase no longer opens it") { try store.reopenCache() }
            try store.reopenCache(encryptionKey: "a new passphrase")
            try store.setMode(.passive)
            let (kept, _) = await record(store, .get("Customers('ALFKI')"))
            let cached = try #require(kept.cacheResponses.withLock { $0[0] })
            #expect(String(decoding: cached.payload, as: UTF8.self).contains("Alfreds Futterkiste"))
            store.closeCache()
            #expect(throws: (any Error).self, "a closed cache cannot be rekeyed") { try store.rekeyCache(to: "x") }
            let plain = try harness.store { $0.useCache = false }
            #expect(throws: ODataError.self) { try plain.rekeyCache(to: "x") }
        }
    }

    @Test func cacheLifecycleOnTheStore() async throws {
        try await Harness.run(on: ScriptedTransport.customers()) { harness in
            let store = try await harness.openStore()
            try await store.open() // harmless
            _ = await record(store, .get("Customers('ALFKI')"))
            #expect(throws: (any Error).self) { try store.resetCache() }
            store.closeCache()
            #expect(!store.isCacheOpen)
            #expect(throws: (any Error).self) { try store.reopenCache(encryptionKey: "wrong key") }
            try store.reopenCache()
            try store.setMode(.passive)
            let (kept, _) = await record(store, .get("Customers('ALFKI')"))
            #expect(kept.cacheResponses.withLock { $0[0] } != nil, "reopen keeps entries")
            store.closeCache()
            try store.resetCache()
            try store.reopenCache()
            let (wiped, _) = await record(store, .get("Customers('ALFKI')"))
            #expect(wiped.cacheResponses.withLock { $0[0] } == nil, "reset wipes")
        }
    }

    @Test func partitionsNeverSeeEachOthersEntries() async throws {
        try await Harness.run(on: ScriptedTransport.customers()) { harness in
            let alice = try await harness.openStore { $0.cachePartition = "alice"; $0.storeName = "shared" }
            _ = await record(alice, .get("Customers('ALFKI')"))
            alice.close()
            let bob = try await harness.openStore { $0.cachePartition = "bob"; $0.storeName = "shared" }
            try bob.setMode(.passive)
            let (bobs, _) = await record(bob, .get("Customers('ALFKI')"))
            #expect(bobs.cacheResponses.withLock { $0[0] } == nil)
            bob.close()
            let aliceAgain = try await harness.openStore { $0.cachePartition = "alice"; $0.storeName = "shared" }
            try aliceAgain.setMode(.passive)
            let (alices, _) = await record(aliceAgain, .get("Customers('ALFKI')"))
            #expect(alices.cacheResponses.withLock { $0[0] } != nil)
        }
    }

    @Test func aFreshEntryWithinMaxAgeSkipsTheServer() async throws {
        try await Harness.run(on: ScriptedTransport.customers()) { harness in
            let store = try await harness.openStore { $0.maxAge = .seconds(60) }
            _ = await record(store, .get("Customers('ALFKI')"))
            harness.backEnd.removeRecordedRequests()
            let (recorder, execution) = await record(store, .get("Customers('ALFKI')"))
            #expect(recorder.entries == activeSuccess)
            #expect(try await execution.result()?.isFromCache == true)
            #expect(harness.backEnd.requests.isEmpty)
        }
    }

    /// `Cache-Control: only-if-cached` in active mode: the stored entry without the network, or a
    /// 504 failure when nothing is stored (RFC 9111 §5.2.1.7).
    @Test func onlyIfCachedAnswersFromTheCacheOrFailsWith504() async throws {
        try await Harness.run(on: ScriptedTransport.customers()) { harness in
            let store = try await harness.openStore()
            _ = await record(store, .get("Customers('ALFKI')"))
            harness.backEnd.removeRecordedRequests()
            var cachedOnly = ODataRequest.get("Customers('ALFKI')")
            cachedOnly.headerFields[.cacheControl] = "only-if-cached"
            let (hit, hitExecution) = await record(store, cachedOnly)
            #expect(hit.entries == activeSuccess)
            #expect(try await hitExecution.result()?.isFromCache == true)
            var missing = ODataRequest.get("Customers('ANATR')")
            missing.headerFields[.cacheControl] = "only-if-cached"
            let (miss, missExecution) = await record(store, missing)
            #expect(miss.entries == activeFailure)
            await #expect(throws: ODataServiceError.self) { try await missExecution.result() }
            #expect(harness.backEnd.requests.isEmpty)
        }
    }

    @Test func batchesAssembleTheirCacheResponseAndUpdateEachPart() async throws {
        try await Harness.run(on: ScriptedTransport.customers()) { harness in
            let store = try await harness.openStore()
            _ = await record(store, .get("Customers('ALFKI')"))
            let batch = BatchRequest(parts: [.request(.get("Customers('ALFKI')")), .request(.get("Customers('ANATR')"))])
            let (recorder, execution) = await record(store, batch: batch)
            #expect(recorder.entries == activeSuccess)
            let assembled = try #require(recorder.cacheResponses.withLock { $0[0] })
            let contentType = try #require(assembled.headerFields[.contentType])
            let parts = try MultipartBatch.decodeResponse(assembled.payload, contentType: contentType).allResponses
            #expect(parts.map(\.statusCode) == [200, 504], "the never-cached part is reported as such")
            let server = try #require(try await execution.result())
            #expect(server.statusCode == 200)
            // The server's read parts were stored, each under its own URL.
            try store.setMode(.passive)
            let (single, _) = await record(store, .get("Customers('ANATR')"))
            let stored = try #require(single.cacheResponses.withLock { $0[0] })
            #expect(try stored.entity().properties["CustomerID"] == "ANATR")
        }
    }

    @Test func theInlineAPIMakesTheSameCallbacks() async throws {
        try await Harness.run(on: ScriptedTransport.customers()) { harness in
            let store = try await harness.openStore()
            let first = CallbackRecorder()
            let response = try await store.response(for: .get("Customers('ALFKI')"), listener: first)
            #expect(first.entries == activeSuccess)
            #expect(response?.statusCode == 200)
            try store.setMode(.passive)
            let passive = CallbackRecorder()
            #expect(try await store.response(for: .get("Customers('ALFKI')"), listener: passive)?.isFromCache == true)
            #expect(passive.entries == passiveSuccess)
            #expect(try await store.response(for: .get("Customers('ANATR')")) == nil)
            store.close()
            await #expect(throws: ODataError.self) { try await store.response(for: .get("Customers('ALFKI')")) }
        }
    }

    @Test func theBlockingAPIBypassesTheCache() async throws {
        try await Harness.run(on: ScriptedTransport.customers()) { harness in
            let store = try await harness.openStore()
            // A blocking call belongs on a thread of its own, never on Swift's cooperative pool.
            // The answer crosses back through a lock, which ThreadSanitizer sees (a continuation resumed from a
            // `Thread` it does not always: it once reported the response's fields as a race).
            let answer = LockedValue<Result<ODataResponse, any Error>?>(nil)
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                Thread {
                    let result = Result { try store.executeSynchronously(.get("Customers('ALFKI')")) }
                    answer.withLock { $0 = result }
                    continuation.resume()
                }.start()
            }
            let response = try #require(answer.withLock { $0 }).get()
            #expect(response.statusCode == 200 && !response.isFromCache)
            await store.waitForCacheWrites()  // entries commit after their answers
            #expect(store.statistics.cache?.writes == 0)
        }
    }

    @Test func openReportsToTheDelegateOnce() async throws {
        final class Delegate: OnlineODataStoreDelegate {
            let events = LockedValue<[String]>([])
            func onlineStoreOpenFinished(_ store: OnlineODataStore) { events.withLock { $0.append("finished") } }
            func onlineStoreOpenFailed(_ store: OnlineODataStore, error: any Error) { events.withLock { $0.append("failed") } }
        }
        try await Harness.run(on: ScriptedTransport.customers()) { harness in
            let delegate = Delegate()
            let store = try OnlineODataStore(serviceRoot: harness.backEnd.serviceRoot, options: harness.options(), delegate: delegate, transport: harness.backEnd)
            try await store.open()
            try await store.open()
            #expect(delegate.events.withLock { $0 } == ["finished"])
            store.close()
            let other = try OnlineODataStore(serviceRoot: harness.backEnd.serviceRoot, options: harness.options { $0.cacheEncryptionKey = "wrong" }, delegate: delegate, transport: harness.backEnd)
            await #expect(throws: (any Error).self) { try await other.open() }
            #expect(delegate.events.withLock { $0 } == ["finished", "failed"])
            #expect(throws: ODataError.self) { try OnlineODataStore(serviceRoot: "not a url") }
        }
    }
}

/// A response as a server sends it, with the bytes it takes on the wire: the status line, the header fields and
/// the body (HTTP/1.1).
private func onTheWire(_ status: Int, _ headerFields: HTTPFields, _ body: Data) -> TransportResponse {
    let headerBytes = "HTTP/1.1 \(status) \r\n".utf8.count + headerFields.reduce(2) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count + 4 }
    return TransportResponse(status: status, headerFields: headerFields, body: body, metrics: TransferMetrics(
        headerBytes: headerBytes, bodyBytes: body.count, totalTime: .zero, connectionReused: true, newConnections: 0, httpVersion: .http1_1))
}
