import Foundation
import ODataFixtures
import Testing

@testable import OfflineStore

/// `ilodata` prints the progress of the initial download, of a download and of an upload on standard error — plain
/// lines, as its output is no terminal here — and keeps standard output for the answers; `--quiet` prints none.
@Suite(.serialized) struct ILODataProgressTests {
    /// The numbers of the progress lines that start with `prefix`: `(done, total)` from `…: 300 of 830 entities…`, or
    /// `(done, nil)` from `…: 91 entities…`.
    static func counts(_ text: String, _ prefix: String) -> [(done: Int, total: Int?)] {
        text.split(separator: "\n").filter { $0.hasPrefix(prefix) }.compactMap { line in
            let words = line.dropFirst(prefix.count).split(separator: " ")
            guard let done = words.first.flatMap({ Int($0) }) else { return nil }
            return (done, words.count > 2 && words[1] == "of" ? Int(words[2]) : nil)
        }
    }

    @Test func ilodataPrintsTheProgressOfAPagedDownloadAndOfAnUpload() async throws {
        let server = try await FixtureServer.start()  // pages of 100 entities: Orders (830) comes in 9 pages
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        let slow = try server.faults.add(FaultRule(.latency(.milliseconds(200)), method: "GET", path: "Orders"))
        // Orders asks for its count, so its total is known; Customers does not, so its lines give no total.
        let created = try await ILODataProcess.finished(ILODataTests.storeArguments(directory) + [
            "--kdf-rounds", "1000", "--service-root", server.serviceRoot,
            "--defining-query", "orders=Orders?$count=true", "--defining-query", "customers=Customers", "--command", "get Orders/$count",
        ])
        _ = server.faults.remove(slow)
        let progress = created.standardError
        #expect(created.process.terminationStatus == 0, "\(created.text)")
        #expect(created.standardOutput == "830\n", "standard output holds the answer alone: \(created.standardOutput)")
        let orders = Self.counts(progress, "initial download orders: ")
        #expect(orders.count >= 2 && orders.count <= 9, "the first page, the last, at most one line a page: \(progress)")
        #expect(orders.allSatisfy { $0.total == 830 }, "\(progress)")
        #expect(zip(orders, orders.dropFirst()).allSatisfy { $0.done < $1.done }, "done counts increase: \(progress)")
        #expect(orders.last?.done == 830, "\(progress)")
        #expect(progress.contains("initial download orders: 830 of 830 entities (100%), "), "\(progress)")
        let customers = Self.counts(progress, "initial download customers: ")
        #expect(customers.map(\.done) == [91] && customers.allSatisfy { $0.total == nil }, "no count asked, no total: \(progress)")
        for line in progress.split(separator: "\n") {
            #expect(line.contains(" entities/s, ") && (line.hasSuffix(" s") || line.hasSuffix(" s, done")), "rate and elapsed time: \(line)")
        }

        // An upload of several requests, each slowed down, then a download (delta reads: no total is known).
        _ = try server.faults.add(FaultRule(.latency(.milliseconds(250)), method: "PATCH"))
        let session = try ILODataProcess(ILODataTests.storeArguments(directory))
        let customerIDs = ["ALFKI", "ANATR", "ANTON", "AROUT", "BERGS", "BLAUS"]
        for customer in customerIDs { session.send(#"patch Customers('\#(customer)') {"Fax":"progress"}"#) }
        session.send("upload")
        session.send("download")
        session.send("quit")
        #expect(await session.waitForExit() == 0)
        let uploadText = session.standardError
        let upload = Self.counts(uploadText, "upload: ")
        #expect(upload.count >= 2, "the first request, the last: \(uploadText)")
        #expect(upload.allSatisfy { $0.total == customerIDs.count }, "\(uploadText)")
        #expect(zip(upload, upload.dropFirst()).allSatisfy { $0.done < $1.done }, "done counts increase: \(uploadText)")
        #expect(upload.last?.done == customerIDs.count, "\(uploadText)")
        #expect(uploadText.contains("upload: 6 of 6 requests (100%), "), "\(uploadText)")
        for query in ["orders", "customers"] {
            let lines = Self.counts(uploadText, "download \(query): ")
            #expect(!lines.isEmpty && lines.allSatisfy { $0.total == nil }, "\(uploadText)")
        }
        #expect(session.standardOutput.contains("uploaded: 6 sent, 6 succeeded, 0 failed"), "\(session.standardOutput)")
        #expect(!session.standardOutput.contains("upload:") && !session.standardOutput.contains("entities/s"), "progress stays off standard output")

        // --quiet: no progress at all.
        let quiet = try await ILODataProcess.finished(ILODataTests.storeArguments(directory) + ["--quiet", "--command", "download"])
        #expect(quiet.process.terminationStatus == 0 && quiet.standardOutput == "downloaded\n", "\(quiet.text)")
        #expect(quiet.standardError.isEmpty, "\(quiet.standardError)")
    }

    /// Against the foreign producer (mock-sap, OData V2, which does not page: it refuses `$skiptoken`), the total comes
    /// from V2's `__count` when the defining query asks for it with `$inlinecount=allpages`.
    @Test func ilodataTakesTheTotalOfAV2DownloadFromItsInlineCount() async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let directory = try TemporaryDirectory()
        let created = try await ILODataProcess.finished([
            "--store-path", directory.path, "--store-name", "sap", "--key", "k", "--kdf-rounds", "1000",
            "--service-root", sap.serviceRoot(MockSAP.gwsampleBasic),
            "--defining-query", "products=ProductSet?$inlinecount=allpages", "--defining-query", "partners=BusinessPartnerSet",
            "--command", "get ProductSet/$count",
        ])
        #expect(created.process.terminationStatus == 0, "\(created.text)")
        let total = try #require(Int(created.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)), "\(created.text)")
        let products = Self.counts(created.standardError, "initial download products: ")
        #expect(products.count == 1 && products.last?.done == total && products.last?.total == total, "\(created.standardError)")
        let partners = Self.counts(created.standardError, "initial download partners: ")
        #expect(partners.count == 1 && partners.last?.total == nil, "\(created.standardError)")
    }
}
