import Foundation
import ODataCore
import ODataFixtures
import Testing

@testable import OfflineStore

/// Live queries (``OfflineODataProvider/observe(_:)``) against the fixture producer's Northwind: the answers after
/// local changes, a download and an upload that replaces a temporary key; a burst; cancellation and close.
@Suite struct ObservationTests {
    static let queries = [
        OfflineODataDefiningQuery(name: "shippers", query: "Shippers"),
        OfflineODataDefiningQuery(name: "employees", query: "Employees"),
    ]

    static func open() async throws -> (FixtureServer, TemporaryDirectory, OfflineODataProvider) {
        let server = try await FixtureServer.start()
        let directory = try TemporaryDirectory()
        let provider = try await Northwind.provider(server, directory, queries: queries)
        try await provider.open()
        return (server, directory, provider)
    }

    /// The shippers of an answer, as `ID=Phone` in key order.
    static func shippers(_ answer: ODataResponse?) throws -> [String] {
        let value = try JSON.parse(try #require(answer).payload)["value"]?.arrayValue ?? []
        return value.map { "\($0["ShipperID"]?.intValue ?? 0)=\($0["Phone"]?.stringValue ?? "")" }.sorted()
    }

    /// The answers follow local changes one by one: an update, a create, a delete; a change of another set
    /// (employees) emits nothing, so the next answer is the shippers' next change.
    @Test func eachLocalChangeGivesTheNewAnswer() async throws {
        let (server, _, provider) = try await Self.open()
        defer { Task { await provider.close(); await server.stop() } }
        var answers = try provider.observe(.local("GET", "Shippers?$orderby=ShipperID")).makeAsyncIterator()
        let initial = try Self.shippers(try await answers.next())
        #expect(initial.count == 3)
        _ = try await provider.execute(.local("PATCH", "Shippers(1)", body: #"{"Phone":"111"}"#))
        #expect(try Self.shippers(try await answers.next()).first == "1=111")
        _ = try await provider.execute(.local("PATCH", "Employees(4)", body: #"{"City":"Elsewhere"}"#))
        _ = try await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"New","Phone":"new"}"#))
        let created = try Self.shippers(try await answers.next())
        #expect(created.count == 4 && created.contains("-1=new"), "\(created)")
        _ = try await provider.execute(.local("DELETE", "Shippers(2)"))
        #expect(try Self.shippers(try await answers.next()).count == 3)
        #expect(provider.observerCount == 1)
    }

    /// A download that brings the producer's change, and an upload whose create gets the producer's key, each give a
    /// new answer; so does an upload's failure putting the entity into error state.
    @Test func aDownloadAndAnUploadGiveNewAnswers() async throws {
        let (server, _, provider) = try await Self.open()
        defer { Task { await provider.close(); await server.stop() } }
        var answers = try provider.observe(.local("GET", "Shippers")).makeAsyncIterator()
        _ = try await answers.next()
        _ = try server.mutate { try $0.update(in: "Shippers", key: ["ShipperID": 2], changes: ["Phone": "remote"]) }
        try await provider.download()
        #expect(try Self.shippers(try await answers.next()).contains("2=remote"))
        _ = try await provider.execute(.local("POST", "Shippers", body: #"{"CompanyName":"New","Phone":"new"}"#))
        #expect(try Self.shippers(try await answers.next()).contains("-1=new"))
        _ = try await provider.upload()
        let uploaded = try Self.shippers(try await answers.next())
        #expect(!uploaded.contains("-1=new") && uploaded.contains { $0.hasSuffix("=new") }, "the temporary key is replaced: \(uploaded)")
        // The producer changes a shipper, the store changes it too: the 412 puts it into error state, which shows.
        var errors = try provider.observe(.local("GET", "Shippers(1)")).makeAsyncIterator()
        _ = try await errors.next()
        _ = try server.mutate { try $0.update(in: "Shippers", key: ["ShipperID": 1], changes: ["Phone": "remote"]) }
        _ = try await provider.execute(.local("PATCH", "Shippers(1)", body: #"{"Phone":"local"}"#))
        _ = try await errors.next()
        _ = try await provider.upload()
        let inError = try JSON.parse(try #require(try await errors.next()).payload)
        #expect(inError[EntityRecord.inErrorStateAnnotation] == true)
    }

    /// 1,000 changes in a burst: no more answers than changes (and the first), the last one is the final state.
    @Test func aBurstIsCoalescedAndEndsOnTheFinalState() async throws {
        let (server, _, provider) = try await Self.open()
        defer { Task { await provider.close(); await server.stop() } }
        let observation = try provider.observe(.local("GET", "Shippers(1)"))
        let consumer = Task {
            var seen: [String] = []
            for try await answer in observation {
                let phone = try JSON.parse(answer.payload)["Phone"]?.stringValue ?? ""
                seen.append(phone)
                if phone == "999" { break }
            }
            return seen
        }
        for index in 0..<1000 {
            _ = try await provider.execute(.local("PATCH", "Shippers(1)", body: #"{"Phone":"\#(index)"}"#))
        }
        let seen = try await consumer.value
        #expect(seen.count <= 1001, "\(seen.count) answers")
        #expect(seen.last == "999")
        // Never an older answer after a newer one.
        let numbers = seen.dropFirst().compactMap { Int($0) }
        #expect(numbers == numbers.sorted(), "\(numbers)")
    }

    /// Cancelling the task that iterates removes the observer; closing the store ends every observation.
    @Test func cancellationRemovesTheObserverAndCloseEndsTheSequence() async throws {
        let (server, _, provider) = try await Self.open()
        defer { Task { await server.stop() } }
        let (started, ready) = AsyncStream.makeStream(of: Void.self)
        let cancelled = Task {
            for try await _ in try provider.observe(.local("GET", "Shippers")) { ready.yield() }
        }
        var iterator = started.makeAsyncIterator()
        _ = await iterator.next()
        #expect(provider.observerCount == 1)
        cancelled.cancel()
        _ = try? await cancelled.value
        #expect(provider.observerCount == 0, "the observer is gone once its task is cancelled")

        let ended = Task { () throws -> Int in
            var count = 0
            for try await _ in try provider.observe(.local("GET", "Shippers")) {
                count += 1
                ready.yield()
            }
            return count
        }
        _ = await iterator.next()
        await provider.close()
        #expect(try await ended.value == 1, "the sequence ends with the store, without an error")
        #expect(provider.observerCount == 0)
    }

    /// A read that cannot be answered throws at once; a write is refused.
    @Test func aBadRequestThrowsAtOnce() async throws {
        let (server, _, provider) = try await Self.open()
        defer { Task { await provider.close(); await server.stop() } }
        #expect(throws: OfflineODataError.self) { try provider.observe(.local("GET", "Nowhere")) }
        #expect(throws: OfflineODataError.self) { try provider.observe(.local("DELETE", "Shippers(1)")) }
        #expect(provider.observerCount == 0)
    }

    /// Which sets a query depends on.
    @Test func aQueryIsMatchedByTheSetsItReads() async throws {
        let (server, _, provider) = try await Self.open()
        defer { Task { await provider.close(); await server.stop() } }
        let model = await provider.model
        func sets(_ url: String) throws -> Set<String>? {
            try OfflineODataProvider.observedSets(try LocalRequest(url, serviceRoot: ""), model: model)
        }
        #expect(try sets("Shippers?$filter=Phone eq 'x'") == ["Shippers"])
        #expect(try sets("Customers('ALFKI')/Orders") == ["Customers", "Orders"])
        #expect(try sets("Orders?$expand=Customer")?.isSuperset(of: ["Orders", "Customers"]) == true)
        #expect(try sets("Orders?$expand=Customer($expand=Orders)") == nil)
        #expect(try sets("ErrorArchive") == ["ErrorArchive"])
        // A filter that reads other entities depends on every set; one on the entity's own properties does not.
        #expect(try sets("Orders?$filter=Customer/Country eq 'Germany'") == nil)
        #expect(try sets("Customers?$filter=Orders/any(o:o/Freight gt 100)") == nil)
        #expect(try sets("Orders?$filter=ShipCountry eq 'Germany' and Freight gt 10") == ["Orders"])
    }
}
