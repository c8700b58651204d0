import CurlHTTP
import Foundation
import HTTPTypes
import Logging
import ODataCore
import ODataFixtures
import ODataSession
import ODataTelemetry
import ODataTesting
import OfflineStore
import OnlineStore
import TechnicalCache
import Testing

/// Every line both stores log at trace level, against an SAP producer with basic authentication, CSRF tokens and
/// session cookies: the requests, cache decisions and sync steps are there; no credential, token, cookie value,
/// encryption passphrase or payload is.
@Suite struct LoggingTests {
    @Test func noSecretAndNoPayloadInAnyLogLine() async throws {
        let password = "pw-\(UUID().uuidString)"
        let sap = try MockSAP.start(arguments: ["--auth", "CLERK:\(password)"])
        defer { sap.stop() }
        let root = sap.serviceRoot(MockSAP.gwsampleBasic)
        let wire = try SecretRecordingTransport()
        let folder = try TemporaryFolder()
        let lines = LockedValue<[String]>([])
        let logger = Logger(label: "telemetry-test") { _ in CapturingLogHandler(lines: lines) }
        var session = SessionOptions()
        session.authentication = BasicAuthentication(user: "CLERK", password: password)
        let cachePassphrase = "online-passphrase-\(UUID().uuidString)"
        let storePassphrase = "offline-passphrase-\(UUID().uuidString)"

        var options = OnlineStoreOptions()
        options.storeDirectory = folder.url
        options.cacheEncryptionKey = cachePassphrase
        options.cacheKeyDerivation = .pbkdf2(rounds: 1_000)
        options.session = session
        options.telemetry = Telemetry(logger: logger)
        let online = try OnlineODataStore(serviceRoot: root, options: options, transport: wire)
        try await online.open()
        let read = try await online.execute(ODataRequest(resourcePath: "ProductSet", queryOptions: [.top(3)])).result()
        _ = try await online.execute(ODataRequest(resourcePath: "ProductSet", queryOptions: [.top(3)])).result()
        _ = try await online.execute(ODataRequest(method: .post, resourcePath: "ProductSet", body: Self.product("ZZ-LOGGED"))).result()
        await #expect(throws: (any Error).self) {
            _ = try await online.execute(ODataRequest(method: .post, resourcePath: "ProductSet", body: Self.product("ZZ-LOGGED"))).result()
        }
        online.close()

        var parameters = OfflineODataParameters(storeName: "logging", storePath: folder.path + "/offline", storeEncryptionKey: storePassphrase,
                                                keyDerivation: .pbkdf2(rounds: 1_000), transport: wire)
        parameters.session = session
        parameters.uploadRetries = 0
        parameters.telemetry = Telemetry(logger: logger)
        let provider = try OfflineODataProvider(serviceRoot: root, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "products", query: "ProductSet"))
        try await provider.open()
        _ = try await provider.execute(ODataRequest(method: .post, resourcePath: "ProductSet", body: Self.product("ZZ-OFFLINE")))
        _ = try await provider.execute(ODataRequest(method: .patch, resourcePath: "ProductSet('HT-1000')", body: Data(#"{"Name":"Renamed in a payload"}"#.utf8)))
        _ = try sap.admin("POST", "faults", json: #"{"match":"ProductSet","method":"MERGE","scenario":"precondition"}"#)  // a V2 service: MERGE
        let result = try await provider.upload()
        #expect(result.failed.map(\.httpStatusCode) == [412])
        await provider.close()

        let log = lines.withLock { $0 }
        // The log says what happened …
        #expect(log.contains { $0.hasPrefix("debug HTTP request") && $0.contains("method=GET") && $0.contains("status=200") })
        #expect(log.contains { $0.hasPrefix("debug HTTP request") && $0.contains("method=POST") && $0.contains("status=201") })
        #expect(log.contains { $0.hasPrefix("trace cache") && $0.contains("decision=miss") })
        #expect(log.contains { $0.hasPrefix("trace cache") && $0.contains("decision=hit") }, "\(log.filter { $0.hasPrefix("trace cache") })")
        #expect(log.contains { $0.hasPrefix("debug offline initial download finished") })
        #expect(log.contains { $0.hasPrefix("warning offline request failed") && $0.contains("status=412") && $0.contains("method=PATCH") })
        #expect(log.count > 10)
        // … and nothing secret or private.
        let secrets = wire.secrets
        #expect(secrets.count >= 3, "the wire carried basic credentials, a CSRF token and a session cookie")
        let payloads = ["ZZ-LOGGED", "Made by", "Renamed in a payload", "Notebook Basic"]
        #expect(String(decoding: try #require(read).payload, as: UTF8.self).contains("Notebook Basic"), "the payload marker is real")
        for forbidden in secrets + [password, cachePassphrase, storePassphrase, "Basic "] + payloads {
            let leaking = log.filter { $0.contains(forbidden) }
            #expect(leaking.isEmpty, "'\(forbidden)' in \(leaking)")
        }
    }

    /// What the `$metadata` reader read in a weaker form than written is logged at the initial download, one warning
    /// each, naming element and line; a defining query over a set whose type has no key is refused naming it.
    @Test func theOfflineStoreLogsTheMetadataWarnings() async throws {
        let metadata = """
            <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx"><edmx:DataServices>
            <Schema Namespace="NS" xmlns="http://docs.oasis-open.org/odata/ns/edm">
            <EntityType Name="Scale"><Key><PropertyRef Name="ID"/></Key><Property Name="ID" Type="Edm.Int32" Nullable="false"/>
            <Property Name="Weight" Type="Edm.Float"/></EntityType>
            <EntityType Name="Line"><Property Name="Text" Type="Edm.String"/></EntityType>
            <EntityContainer Name="C"><EntitySet Name="Scales" EntityType="NS.Scale"/><EntitySet Name="Lines" EntityType="NS.Line"/></EntityContainer>
            </Schema></edmx:DataServices></edmx:Edmx>
            """
        let lines = LockedValue<[String]>([])
        var parameters = OfflineODataParameters()
        parameters.telemetry = Telemetry(logger: Logger(label: "metadata-warnings") { _ in CapturingLogHandler(lines: lines) })
        let transport = ScriptedTransport()
            .on("GET", "$metadata", reply: .metadata(metadata))
            .on("GET", "Scales", reply: .collection([["ID": 1, "Weight": 1.5]]))
        try await transport.withOfflineStore(parameters: parameters, definingQueries: [OfflineODataDefiningQuery(name: "scales", query: "Scales")]) { provider in
            let answer = try await provider.execute(ODataRequest(method: .get, resourcePath: "Scales(1)"))
            #expect(try JSON.parse(answer.payload)["Weight"] == .double(1.5))
        }
        let warnings = lines.withLock { $0 }.filter { $0.hasPrefix("warning offline store: the $metadata document") }
        #expect(warnings.count == 2, "\(warnings)")
        #expect(warnings.contains { $0.contains("line 4: <Property Name=\"Weight\">") && $0.contains("Edm.Float") })
        #expect(warnings.contains { $0.contains("<EntitySet Name=\"Lines\">") && $0.contains("no key") })

        let error = await #expect(throws: OfflineODataError.self) {
            try await transport.withOfflineStore(definingQueries: [OfflineODataDefiningQuery(name: "lines", query: "Lines")]) { _ in }
        }
        #expect(error == .invalidDefiningQuery)
        #expect(error?.message.contains("'Lines'") == true && error?.message.contains("no key") == true, "\(String(describing: error))")
    }

    private static func product(_ id: String) -> Data {
        Data(#"{"ProductID":"\#(id)","Name":"Made by \#(id)","Category":"Notebooks","Price":"12.500","CurrencyCode":"EUR","TypeCode":"PR","SupplierID":"0100000005","TaxTarifCode":1,"MeasureUnit":"EA"}"#.utf8)
    }
}
