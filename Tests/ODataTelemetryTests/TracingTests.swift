import Foundation
import HTTPTypes
import InMemoryTracing
import ODataCore
import ODataTelemetry
import ODataTesting
import OfflineStore
import OnlineStore
import TechnicalCache
import Testing
import Tracing

/// Spans of both stores: a client span per request under the caller's span, the context the producer receives as
/// `traceparent`, and a span per upload and download with `$batch` and failed requests as events.
@Suite struct TracingTests {
    private func attribute(_ span: FinishedInMemorySpan, _ name: String) -> SpanAttribute? {
        span.attributes[name]?.toSpanAttribute()
    }

    @Test func aReadIsAClientSpanUnderTheCallersSpanAndTheProducerSeesItsContext() async throws {
        let backEnd = ScriptedTransport(serviceRoot: "http://127.0.0.1:8080/odata/")
        backEnd.on("GET", "Orders(10248)", query: ["$select": "OrderID,Freight"], reply: .entity(["OrderID": 10248, "Freight": 32.38]))
        let folder = try TemporaryFolder()
        let tracer = W3CTracer()
        var options = OnlineStoreOptions()
        options.storeDirectory = folder.url
        options.cacheEncryptionKey = "tracing cache key"
        options.cacheKeyDerivation = .pbkdf2(rounds: 1_000)
        options.telemetry = Telemetry(tracer: tracer)
        let store = try OnlineODataStore(serviceRoot: backEnd.serviceRoot, options: options, transport: backEnd)
        try await store.open()
        try await tracer.withSpan("handle request") { _ in
            _ = try await store.response(for: ODataRequest(resourcePath: "Orders(10248)", queryOptions: [.select(["OrderID", "Freight"])]))
        }
        store.close()

        let spans = tracer.memory.finishedSpans
        let parent = try #require(spans.first { $0.operationName == "handle request" })
        let client = try #require(spans.first { $0.operationName == "GET" })
        #expect(client.kind == .client)
        #expect(client.traceID == parent.traceID && client.parentSpanID == parent.spanID)
        #expect(attribute(client, "http.request.method") == .string("GET"))
        #expect(attribute(client, "http.response.status_code") == .int64(200))
        #expect(attribute(client, "url.full") == .string(backEnd.serviceRoot + "Orders(10248)"), "no query in the URL attribute")
        #expect(attribute(client, "server.address") == .string("127.0.0.1"))
        #expect(attribute(client, "server.port") == .int64(8080))
        #expect(backEnd.requests.map { $0.headerFields[HTTPField.Name("traceparent")!] } == ["00-\(client.traceID)-\(client.spanID)-01"],
                "the back end received the client span's context")
    }

    @Test func uploadsAndDownloadsAreSpansWithTheirRequestsInside() async throws {
        // A back end that fails Shippers(2) inside the $batch.
        let backEnd = ScriptedTransport(serviceRoot: "http://127.0.0.1:8080/odata/")
        backEnd.on("GET", "$metadata", reply: .metadata(Self.shipperMetadata))
            .on("GET", "Shippers", reply: .collection([["ShipperID": 1, "Phone": "0"], ["ShipperID": 2, "Phone": "0"]]))
            .on("GET", "", reply: .status(200))  // the CSRF token fetch before the upload
            .on("POST", "$batch", reply: .batch { request in
                request.resourcePath.hasSuffix("Shippers(2)")
                    ? ODataResponse(statusCode: 400, headerFields: [.contentType: "application/json"],
                                    payload: Data(#"{"error":{"code":"Refused","message":"not today"}}"#.utf8))
                    : ODataResponse(statusCode: 204)
            })
        let folder = try TemporaryFolder()
        let tracer = W3CTracer()
        var parameters = OfflineODataParameters(storeName: "tracing", storePath: folder.path, storeEncryptionKey: "tracing store key",
                                                keyDerivation: .pbkdf2(rounds: 1_000))
        parameters.telemetry = Telemetry(tracer: tracer)
        parameters.uploadRetries = 0
        parameters.uploadMode = .batch(maxRequestsPerBatch: 10)
        parameters.transport = backEnd
        let provider = try OfflineODataProvider(serviceRoot: backEnd.serviceRoot, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "shippers", query: "Shippers"))
        try await provider.open()
        _ = try await provider.execute(ODataRequest(method: .patch, resourcePath: "Shippers(1)", body: Data(#"{"Phone":"1"}"#.utf8)))
        _ = try await provider.execute(ODataRequest(method: .patch, resourcePath: "Shippers(2)", body: Data(#"{"Phone":"2"}"#.utf8)))
        let result = try await tracer.withSpan("sync job") { _ in try await provider.upload() }
        #expect(result.failed.count == 1)
        await provider.close()

        let spans = tracer.memory.finishedSpans
        let download = try #require(spans.first { $0.operationName == "OfflineODataProvider initial download" })
        let downloadRequests = spans.filter { $0.parentSpanID == download.spanID }
        #expect(Set(downloadRequests.map(\.operationName)) == ["GET"])
        #expect(downloadRequests.count >= 2, "$metadata and the defining query")
        let job = try #require(spans.first { $0.operationName == "sync job" })
        let upload = try #require(spans.first { $0.operationName == "OfflineODataProvider upload" })
        #expect(upload.parentSpanID == job.spanID && upload.traceID == job.traceID)
        let batch = try #require(spans.first { $0.parentSpanID == upload.spanID && $0.operationName == "POST" })
        #expect(attribute(batch, "url.full") == .string(backEnd.serviceRoot + "$batch"))
        #expect(upload.events.map(\.name) == ["$batch", "request failed"])
        #expect(upload.events.first?.attributes["odata.batch.parts"]?.toSpanAttribute() == .int64(2))
        #expect(backEnd.requests("POST", "$batch").map { $0.headerFields[HTTPField.Name("traceparent")!] } == ["00-\(batch.traceID)-\(batch.spanID)-01"])
        #expect(backEnd.unmatchedRequests.isEmpty)
    }

    /// The shippers of the fixture's `$metadata`, all the upload test reads.
    static let shipperMetadata = """
        <?xml version="1.0" encoding="utf-8"?>
        <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
          <edmx:DataServices>
            <Schema Namespace="NorthwindModel" xmlns="http://docs.oasis-open.org/odata/ns/edm">
              <EntityType Name="Shipper">
                <Key><PropertyRef Name="ShipperID"/></Key>
                <Property Name="ShipperID" Type="Edm.Int32" Nullable="false"/>
                <Property Name="Phone" Type="Edm.String"/>
              </EntityType>
              <EntityContainer Name="Entities">
                <EntitySet Name="Shippers" EntityType="NorthwindModel.Shipper"/>
              </EntityContainer>
            </Schema>
          </edmx:DataServices>
        </edmx:Edmx>
        """
}
