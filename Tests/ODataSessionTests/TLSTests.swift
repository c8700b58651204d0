import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import OfflineStore
import OnlineStore
import TechnicalCache
import Testing

/// Both stores over real TLS: nginx (`TLSProxy`) in front of the fixture producer, with certificates of a private
/// CA made by the test. Verified with the CA; a wrong host name, an expired certificate and a missing client
/// certificate refused with `CurlError.tls` naming what was wrong; mutual TLS accepted with the right client
/// certificate (its key encrypted, the pass phrase given in the options) and refused with a foreign one.
@Suite(.serialized) struct TLSTests {
    /// How the transport is set up for a case.
    enum Client {
        /// Trusts the private CA, no client certificate.
        case trustingCA
        /// Trusts the private CA and presents the CA's client certificate.
        case withClientCertificate
        /// Trusts the private CA and presents a client certificate of another CA.
        case withForeignCertificate
        /// Trusts the private CA and presents the CA's client certificate with a wrong pass phrase for its key.
        case withWrongPassphrase
        /// Trusts only the system's CAs.
        case systemTrust
    }

    /// The wrong pass phrase of ``Client/withWrongPassphrase``, which no error may show.
    static let wrongPassphrase = "wrong-passphrase-7f3a"

    static func configuration(_ client: Client, _ certificates: TestCertificates) -> CurlConfiguration {
        var transport = CurlConfiguration()
        transport.proxy = .none
        guard client != .systemTrust else { return transport }
        transport.caFile = certificates.caCertificate
        switch client {
        case .withClientCertificate:
            transport.clientCertificate = .init(certificatePath: certificates.clientCertificate, keyPath: certificates.clientKey,
                                                keyPassword: certificates.clientKeyPassphrase)
        case .withWrongPassphrase:
            transport.clientCertificate = .init(certificatePath: certificates.clientCertificate, keyPath: certificates.clientKey,
                                                keyPassword: wrongPassphrase)
        case .withForeignCertificate:
            transport.clientCertificate = .init(certificatePath: certificates.foreignClientCertificate,
                                                keyPath: certificates.foreignClientKey)
        case .trustingCA, .systemTrust:
            break
        }
        return transport
    }

    /// A refusal: the endpoint, the client, the `CURLcode` and what libcurl 7.88's message must say.
    static let refusals: [(TLSProxy.Endpoint, Client, Int, String)] = [
        (.wrongHost, .trustingCA, 60, "SSL: no alternative certificate subject name matches target host name '127.0.0.1'"),
        (.expired, .trustingCA, 60, "SSL certificate problem: certificate has expired"),
        (.verified, .systemTrust, 60, "SSL certificate problem: unable to get local issuer certificate"),
        (.mutual, .trustingCA, 35, "alert handshake failure"),
        (.mutual, .withWrongPassphrase, 58, "unable to set private key file"),
    ]

    /// Checks a store's refusal: `CurlError.tls` with the code and text, and no pass phrase anywhere in it.
    func expectRefusal(_ error: (any Error)?, _ endpoint: TLSProxy.Endpoint, code: Int, text: String, _ proxy: TLSProxy) throws {
        let curl = try #require(error.flatMap(curlError), "\(endpoint): \(String(describing: error))")
        #expect(curl == .tls, "\(endpoint): \(curl)")
        #expect(curl.curlCode == code, "\(endpoint): \(curl)")
        #expect(curl.message.contains(text), "\(endpoint): \(curl.message)")
        for secret in [proxy.certificates.clientKeyPassphrase, Self.wrongPassphrase] {
            #expect(!String(describing: error).contains(secret) && !String(reflecting: error).contains(secret))
        }
    }

    /// The `CurlError` a store reported, unwrapped from the offline store's error.
    func curlError(_ error: any Error) -> CurlError? {
        if let error = error as? CurlError { return error }
        if let error = error as? OfflineODataError, let underlying = error.underlying { return curlError(underlying) }
        return nil
    }

    func withProxy(_ body: (FixtureServer, TLSProxy, Directory) async throws -> Void) async throws {
        let server = try await FixtureServer.start()
        let proxy = try TLSProxy.start(backendPort: server.port)
        let directory = try Directory()
        do {
            try await body(server, proxy, directory)
        } catch {
            proxy.stop()
            await server.stop()
            throw error
        }
        proxy.stop()
        await server.stop()
    }

    // MARK: Online store

    func onlineStore(_ proxy: TLSProxy, _ endpoint: TLSProxy.Endpoint, _ client: Client, _ directory: Directory) throws -> OnlineODataStore {
        var options = OnlineStoreOptions()
        options.storeDirectory = URL(fileURLWithPath: directory.path).appendingPathComponent(UUID().uuidString)
        options.cacheEncryptionKey = "online cache key"
        options.cacheKeyDerivation = .pbkdf2(rounds: 1_000)
        options.transport = Self.configuration(client, proxy.certificates)
        return try OnlineODataStore(serviceRoot: proxy.serviceRoot(endpoint), options: options)
    }

    @Test func onlineReadsOverVerifiedTLSAndMutualTLS() async throws {
        try await withProxy { _, proxy, directory in
            for (endpoint, client) in [(TLSProxy.Endpoint.verified, Client.trustingCA), (.mutual, .withClientCertificate)] {
                let store = try onlineStore(proxy, endpoint, client, directory)
                try await store.open()
                defer { store.close() }
                let response = try #require(try await store.execute(.get("Customers", .top(2))).result())
                #expect(response.statusCode == 200, "\(endpoint)")
                #expect(try ODataPayload.decodeEntitySet(response.payload).entities.count == 2)
            }
        }
    }

    @Test func onlineRefusalsAreTypedTLSErrors() async throws {
        try await withProxy { server, proxy, directory in
            for (endpoint, client, code, text) in Self.refusals {
                let store = try onlineStore(proxy, endpoint, client, directory)
                try await store.open()
                defer { store.close() }
                let error = await #expect(throws: (any Error).self) { try await store.execute(.get("Customers")).result() }
                try expectRefusal(error, endpoint, code: code, text: text, proxy)
            }
            #expect(server.counters.requests(method: "GET", path: "Customers") == 0)
        }
    }

    /// nginx checks a client certificate's chain per request, not in the handshake: a certificate of another CA
    /// gets `400 The SSL certificate error`, and the producer never sees the request.
    @Test func onlineForeignClientCertificateIsRefusedByNginx() async throws {
        try await withProxy { server, proxy, directory in
            let store = try onlineStore(proxy, .mutual, .withForeignCertificate, directory)
            try await store.open()
            defer { store.close() }
            var status: Int?
            do { status = try await store.execute(.get("Customers")).result()?.statusCode } catch {
                status = (error as? ODataServiceError)?.statusCode
                #expect(status != nil, "\(error)")
            }
            #expect(status == 400)
            #expect(server.counters.requests(method: "GET", path: "Customers") == 0)
        }
    }

    @Test func clientCertificatePassphraseIsNeverShown() throws {
        let certificate = CurlConfiguration.ClientCertificate(certificatePath: "/c.pem", keyPath: "/k.pem", keyPassword: "hunter2-secret")
        var configuration = CurlConfiguration()
        configuration.clientCertificate = certificate
        var dumped = ""
        dump(configuration, to: &dumped)
        for text in ["\(certificate)", String(reflecting: certificate), "\(configuration)", String(reflecting: configuration), dumped] {
            #expect(!text.contains("hunter2"), "\(text)")
            #expect(text.contains("/k.pem"))
        }
    }

    // MARK: Offline store

    func offlineParameters(_ proxy: TLSProxy, _ client: Client, _ directory: Directory) -> OfflineODataParameters {
        var parameters = OfflineODataParameters(storeName: "tls-\(UUID().uuidString.prefix(8))", storePath: directory.path,
                                                storeEncryptionKey: "offline key", keyDerivation: .pbkdf2(rounds: 1_000))
        parameters.transportConfiguration = Self.configuration(client, proxy.certificates)
        parameters.uploadRetries = 0
        return parameters
    }

    func offlineStore(_ proxy: TLSProxy, _ endpoint: TLSProxy.Endpoint, _ client: Client, _ directory: Directory) async throws
        -> OfflineODataProvider
    {
        try await offlineStore(proxy, endpoint, offlineParameters(proxy, client, directory))
    }

    func offlineStore(_ proxy: TLSProxy, _ endpoint: TLSProxy.Endpoint, _ parameters: OfflineODataParameters) async throws
        -> OfflineODataProvider
    {
        let provider = try OfflineODataProvider(serviceRoot: proxy.serviceRoot(endpoint), parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "customers", query: "Customers"))
        return provider
    }

    @Test func offlineDownloadsAndUploadsOverVerifiedTLSAndMutualTLS() async throws {
        try await withProxy { server, proxy, directory in
            for (endpoint, client) in [(TLSProxy.Endpoint.verified, Client.trustingCA), (.mutual, .withClientCertificate)] {
                let provider = try await offlineStore(proxy, endpoint, client, directory)
                try await provider.open()
                let local = try await provider.execute(.get("Customers", .top(1)))
                let customer = try #require(try ODataPayload.decodeEntitySet(local.payload).entities.first)
                let id = try #require(customer.properties["CustomerID"]?.stringValue)
                let name = "Renamed over \(endpoint)"
                _ = try await provider.execute(ODataRequest(method: .patch, resourcePath: "Customers('\(id)')",
                                                            body: Data(#"{"CompanyName":"\#(name)"}"#.utf8)))
                let result = try await provider.upload()
                #expect(result.failed.isEmpty, "\(endpoint): \(result.failed.map(\.message))")
                #expect(result.succeeded == 1)
                let stored = try server.read { data in try data.entity(in: "Customers", key: ["CustomerID": .string(id)]) }
                #expect(stored?["CompanyName"]?.stringValue == name)
                await provider.close()
            }
        }
    }

    @Test func offlineRefusalsAreTypedTLSErrors() async throws {
        try await withProxy { server, proxy, directory in
            for (endpoint, client, code, text) in Self.refusals {
                let provider = try await offlineStore(proxy, endpoint, client, directory)
                let error = await #expect(throws: OfflineODataError.self) { try await provider.open() }
                try expectRefusal(error, endpoint, code: code, text: text, proxy)
                await provider.close()
            }
            #expect(server.counters.requests(method: "GET", path: "Customers") == 0)
        }
    }

    /// An upload refused in the handshake: the store downloaded with the right settings and is opened again with
    /// settings the server refuses (no client certificate for the mutual-TLS endpoint; the system's CAs only for the
    /// private CA's). The back end cannot be reached: the upload stops with the TLS error, the request stays queued
    /// (nothing archived), and the producer never gets it.
    @Test func offlineUploadRefusalsNameTheTLSError() async throws {
        try await withProxy { server, proxy, directory in
            let cases: [(TLSProxy.Endpoint, Client, Client, String)] = [
                (.mutual, .withClientCertificate, .trustingCA, "alert handshake failure"),
                (.verified, .trustingCA, .systemTrust, "unable to get local issuer certificate"),
            ]
            for (endpoint, good, refused, text) in cases {
                var parameters = offlineParameters(proxy, good, directory)
                let provider = try await offlineStore(proxy, endpoint, parameters)
                try await provider.open()
                let local = try await provider.execute(.get("Customers", .top(1)))
                let customer = try #require(try ODataPayload.decodeEntitySet(local.payload).entities.first)
                let id = try #require(customer.properties["CustomerID"]?.stringValue)
                _ = try await provider.execute(ODataRequest(method: .patch, resourcePath: "Customers('\(id)')",
                                                            body: Data(#"{"CompanyName":"never"}"#.utf8)))
                await provider.close()

                parameters.transportConfiguration = Self.configuration(refused, proxy.certificates)
                let reopened = try await offlineStore(proxy, endpoint, parameters)
                try await reopened.open()
                let failure = try await #require(throws: OfflineODataError.self) { try await reopened.upload() }
                #expect(failure == .backEndUnreachable && failure.uploadResult?.stillQueued == 1, "\(endpoint): \(failure)")
                #expect(failure.message.contains("CurlError.tls") && failure.message.contains(text), "\(endpoint): \(failure.message)")
                #expect(!failure.message.contains(proxy.certificates.clientKeyPassphrase))
                #expect(try ODataPayload.decodeEntitySet(try await reopened.execute(.get("ErrorArchive")).payload).entities.isEmpty)
                await reopened.close()
            }
            #expect(server.counters.requests(method: "PATCH", path: "Customers") == 0)
        }
    }

    // MARK: mock-sap behind the proxy

    /// mock-sap (a producer nobody here wrote, plain HTTP only) behind the same nginx: both stores read its V2
    /// `GWSAMPLE_BASIC` over mutual TLS, and the offline store is refused without the client certificate.
    @Test func bothStoresReachMockSAPOverMutualTLS() async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let proxy = try TLSProxy.start(backendPort: sap.port)
        defer { proxy.stop() }
        let directory = try Directory()
        let root = proxy.serviceRoot(.mutual, path: "/" + MockSAP.gwsampleBasic)

        var options = OnlineStoreOptions()
        options.storeDirectory = URL(fileURLWithPath: directory.path).appendingPathComponent("online")
        options.cacheEncryptionKey = "online cache key"
        options.cacheKeyDerivation = .pbkdf2(rounds: 1_000)
        options.transport = Self.configuration(.withClientCertificate, proxy.certificates)
        let store = try OnlineODataStore(serviceRoot: root, options: options)
        try await store.open()
        defer { store.close() }
        let response = try #require(try await store.execute(.get("ProductSet", .top(2))).result())
        #expect(response.statusCode == 200)
        #expect(try ODataPayload.decodeEntitySet(response.payload).entities.count == 2)

        var parameters = offlineParameters(proxy, .withClientCertificate, directory)
        let provider = try OfflineODataProvider(serviceRoot: root, parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "products", query: "ProductSet"))
        try await provider.open()
        let local = try await provider.execute(.get("ProductSet", .top(1)))
        #expect(try ODataPayload.decodeEntitySet(local.payload).entities.count == 1)
        await provider.close()

        parameters.storeName += "-refused"
        parameters.transportConfiguration = Self.configuration(.trustingCA, proxy.certificates)
        let refused = try OfflineODataProvider(serviceRoot: root, parameters: parameters)
        try await refused.add(definingQuery: OfflineODataDefiningQuery(name: "products", query: "ProductSet"))
        let error = await #expect(throws: OfflineODataError.self) { try await refused.open() }
        #expect(error.flatMap(curlError) == .tls, "\(String(describing: error))")
    }

    /// The store's own transport takes `transportConfiguration`; a transport of one's own is configured itself.
    @Test func transportConfigurationWithAnOwnTransportIsRefused() throws {
        let directory = try Directory()
        var parameters = OfflineODataParameters(storeName: "both", storePath: directory.path)
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        parameters.transport = transport
        parameters.transportConfiguration.caFile = "/etc/ca.pem"
        let error = #expect(throws: OfflineODataError.invalidParameters) {
            _ = try OfflineODataProvider(serviceRoot: "https://127.0.0.1/", parameters: parameters)
        }
        #expect(error?.message.contains("transportConfiguration") == true)
    }
}
