import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import ODataFixtures
import ODataSession
import OfflineStore
import OnlineStore
import TechnicalCache
import Testing

/// Both stores against mock-sap, a producer nobody here wrote, with SAP Gateway's CSRF protection on.
@Suite(.serialized) struct SAPBackEndTests {
    // MARK: Online store

    @Test func onlineCreateUpdateDeleteAndBatchSucceedWithOneTokenFetch() async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let directory = try Directory()
        let store = try OnlineODataStore(serviceRoot: sap.serviceRoot(MockSAP.gwsampleBasic), options: onlineOptions(directory))
        try await store.open()
        defer { store.close() }

        let created = try await store.execute(ODataRequest(method: .post, resourcePath: "ProductSet", body: product("ZZ-ONLINE"))).result()
        #expect(created?.statusCode == 201)
        let updated = try await store.execute(ODataRequest(method: .patch, resourcePath: "ProductSet('ZZ-ONLINE')",
                                                           body: Data(#"{"Name":"Renamed online"}"#.utf8))).result()
        #expect(updated?.statusCode == 204)
        let batch = BatchRequest(parts: [
            .changeSet([
                .init(contentID: "1", request: ODataRequest(method: .post, resourcePath: "ProductSet", body: product("ZZ-BATCH"))),
                .init(contentID: "2", request: ODataRequest(method: .patch, resourcePath: "ProductSet('ZZ-ONLINE')",
                                                            body: Data(#"{"Category":"Batched"}"#.utf8))),
            ]),
            .request(.get("ProductSet('ZZ-ONLINE')")),
        ])
        let batched = try await store.execute(batch: batch).result()
        #expect(batched?.statusCode == 202)
        let deleted = try await store.execute(ODataRequest(method: .delete, resourcePath: "ProductSet('ZZ-BATCH')")).result()
        #expect(deleted?.statusCode == 204)

        let product = try sap.read("ProductSet('ZZ-ONLINE')")
        #expect(product["Name"]?.stringValue == "Renamed online" && product["Category"]?.stringValue == "Batched")
        #expect(try sap.status("ProductSet('ZZ-BATCH')") == 404)
        #expect(store.session.statistics.csrfTokenFetches == 1)
        #expect(try sap.logged(method: "POST", path: "ProductSet").count == 1)
    }

    /// Active reads of an entity mock-sap guards with an ETag: the first is a 200, each later one a conditional GET
    /// that mock-sap answers with its own 304 — merged into the stored entry the first time, into the one an earlier
    /// 304 refreshed (held in memory, not yet written) after that. Each answer is the stored copy, revalidated.
    @Test func activeReadsAreRevalidatedByTheProducersOwn304s() async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let directory = try Directory()
        let store = try OnlineODataStore(serviceRoot: sap.serviceRoot(MockSAP.gwsampleBasic), options: onlineOptions(directory))
        try await store.open()
        defer { store.close() }
        // Business partners carry a weak ETag of their ChangedAt (products carry none).
        let request = ODataRequest.get("BusinessPartnerSet('0100000000')")
        let logged = try sap.logged(method: "GET", path: "BusinessPartnerSet").count
        let first = try #require(try await store.execute(request).result())
        #expect(first.statusCode == 200 && !first.isFromCache && first.etag != nil)
        for round in 1...3 {
            let again = try #require(try await store.execute(request).result())
            #expect(again.isRevalidated && again.payload == first.payload && again.etag == first.etag, "round \(round)")
            #expect(store.statistics.notModified == round, "mock-sap answered round \(round) with a 304")
        }
        #expect(try sap.logged(method: "GET", path: "BusinessPartnerSet").count == logged + 4, "every read asked mock-sap")
    }

    // MARK: Offline store

    @Test(arguments: [OfflineODataUploadMode.oneByOne, .batch(maxRequestsPerBatch: 10)])
    func offlineUploadOfCreatesUpdatesAndDeletesSucceedsWithOneTokenFetch(mode: OfflineODataUploadMode) async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let directory = try Directory()
        let provider = try await offlineStore(sap, directory, mode: mode)
        defer { Task { await provider.close() } }
        let partner = try #require(try await firstPartner(provider))
        try await queueChanges(provider, partner: partner, newProduct: "ZZ-OFFLINE")

        let result = try await provider.upload()
        #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
        #expect(result.succeeded == 3)
        #expect(provider.session.statistics.csrfTokenFetches == 1)
        try expectChangesArrived(sap, partner: partner, newProduct: "ZZ-OFFLINE")
        // The update carried the entity's ETag (If-Match), which mock-sap checks.
        // GWSAMPLE_BASIC is OData V2 (EDMX 1.0): the update goes as MERGE without being asked.
        #expect(try sap.logged(method: mode == .oneByOne ? "MERGE" : "POST", path: mode == .oneByOne ? "BusinessPartnerSet" : "$batch").count == 1)
    }

    /// mock-sap stopped after the download: the CSRF token fetch gets no answer, so the upload stops with
    /// `backEndUnreachable`, nothing sent, the three changes still queued exactly as they were, nothing archived.
    @Test func offlineUploadToAStoppedSAPBackEndKeepsTheQueue() async throws {
        let sap = try MockSAP.start()
        let directory = try Directory()
        let provider = try await offlineStore(sap, directory, mode: .oneByOne)
        defer { Task { await provider.close() } }
        let partner = try #require(try await firstPartner(provider))
        try await queueChanges(provider, partner: partner, newProduct: "ZZ-OUTAGE")
        let planned = try await provider.pendingUpload()
        sap.stop()
        let error = try await #require(throws: OfflineODataError.self) { try await provider.upload() }
        #expect(error == .backEndUnreachable, "\(error)")
        #expect(error.uploadResult?.sent == 0 && error.uploadResult?.stillQueued == 3, "\(String(describing: error.uploadResult))")
        #expect(try await provider.pendingUpload() == planned)
        #expect(try ODataPayload.decodeEntitySet(try await provider.execute(.get("ErrorArchive")).payload).entities.isEmpty)
    }

    /// A V2 producer that wants `MERGE`: the offline upload sends its updates as `MERGE`, inside `$batch` too.
    @Test(arguments: [OfflineODataUploadMode.oneByOne, .batch(maxRequestsPerBatch: 10)])
    func updatesGoAsMergeWhenAsked(mode: OfflineODataUploadMode) async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let directory = try Directory()
        var parameters = OfflineODataParameters(storeName: "merge", storePath: directory.path, storeEncryptionKey: "k",
                                                keyDerivation: .pbkdf2(rounds: 1_000))
        parameters.uploadMode = mode
        parameters.session.updateMethod = .merge
        let provider = try OfflineODataProvider(serviceRoot: sap.serviceRoot(MockSAP.gwsampleBasic), parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "partners", query: "BusinessPartnerSet"))
        try await provider.open()
        defer { Task { await provider.close() } }
        let partners = try ODataPayload.decodeEntitySet(try await provider.execute(.get("BusinessPartnerSet", .orderBy(["BusinessPartnerID"]), .top(2))).payload)
            .entities.compactMap { $0.properties["BusinessPartnerID"]?.stringValue }
        for partner in partners {
            _ = try await provider.execute(ODataRequest(method: .patch, resourcePath: "BusinessPartnerSet('\(partner)')",
                                                        body: Data(#"{"CompanyName":"Merged \#(partner)"}"#.utf8)))
        }
        let result = try await provider.upload()
        #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
        for partner in partners {
            #expect(try sap.read("BusinessPartnerSet('\(partner)')")["CompanyName"]?.stringValue == "Merged \(partner)")
        }
        if mode == .oneByOne {
            #expect(try sap.logged(method: "MERGE", path: "BusinessPartnerSet").count == 2)
            #expect(try sap.logged(method: "PATCH", path: "BusinessPartnerSet").isEmpty)
        } else {
            let bodies = try sap.loggedBodies(method: "POST", path: "$batch")
            #expect(bodies.contains { $0.contains("MERGE BusinessPartnerSet") } && !bodies.contains { $0.contains("PATCH ") }, "\(bodies)")
        }
    }

    @Test func aTokenThatExpiresInTheMiddleOfAnUploadIsFetchedAgainOnceAndNothingRunsTwice() async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let directory = try Directory()
        let provider = try await offlineStore(sap, directory)
        defer { Task { await provider.close() } }
        let partner = try #require(try await firstPartner(provider))
        try await queueChanges(provider, partner: partner, newProduct: "ZZ-EXPIRY")
        // The token is refused once, at the update: the second of the three requests.
        try sap.admin("POST", "faults", json: #"{"match":"BusinessPartnerSet","method":"MERGE","scenario":"csrf","count":1}"#)

        let result = try await provider.upload()
        #expect(result.failed.isEmpty, "\(result.failed.map(\.message))")
        #expect(provider.session.statistics.csrfTokenFetches == 2)
        try expectChangesArrived(sap, partner: partner, newProduct: "ZZ-EXPIRY")
        // Each request ran once: the refused MERGE (403) was not executed, its retry was.
        #expect(try sap.logged(method: "POST", path: "ProductSet").map(\.status) == [201])
        #expect(try sap.logged(method: "MERGE", path: "BusinessPartnerSet").map(\.status).sorted() == [204, 403])
        #expect(try sap.logged(method: "DELETE", path: "ProductSet").map(\.status) == [204])
        #expect(try await provider.hasPendingUpload == false)
    }

    @Test func aProducerThatNeverAcceptsTheTokenFailsTheRequestIntoTheErrorArchiveAfterOneRetry() async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let directory = try Directory()
        let provider = try await offlineStore(sap, directory)
        defer { Task { await provider.close() } }
        let partner = try #require(try await firstPartner(provider))
        try await queueChanges(provider, partner: partner, newProduct: "ZZ-NEVER")
        try sap.admin("POST", "faults", json: #"{"match":"ProductSet","method":"POST","scenario":"csrf"}"#)

        let result = try await provider.upload()
        // The create failed, naming CSRF; the update and the delete after it still went (the delete of the
        // product that was never created fails at the back end in its turn).
        let failure = try #require(result.failed.first)
        #expect(failure.requestMethod == "POST" && failure.httpStatusCode == 403)
        #expect(failure.message.contains("CSRF"))
        #expect(try sap.logged(method: "POST", path: "ProductSet").count == 2)  // one retry, no more
        #expect(provider.session.statistics.csrfTokenFetches == 2)
        #expect(try sap.read("BusinessPartnerSet('\(partner)')")["CompanyName"]?.stringValue == "Renamed by upload")

        // Nothing is lost: the create waits in the ErrorArchive with its body, for repair.
        let archive = try await provider.execute(.get("ErrorArchive", .filter("RequestMethod eq 'POST'")))
        let entries = try ODataPayload.decodeEntitySet(archive.payload).entities
        #expect(entries.count == 1)
        #expect(entries.first?.properties["HTTPStatusCode"]?.intValue == 403)
        #expect(entries.first?.properties["RequestBody"]?.stringValue?.contains("ZZ-NEVER") == true)
        #expect(entries.first?.properties["Message"]?.stringValue?.contains("CSRF") == true)
    }

    // MARK: Delta downloads against a producer that identifies tombstones by their id

    /// mock-sap writes V4 tombstones as `{"@id": "<absolute URL>", "@removed": {...}}` without key properties,
    /// and V2 ones as `__metadata.deleted`: after another client deletes an entity, a download removes it here.
    @Test(arguments: [MockSAP.salesOrderV4, MockSAP.gwsampleBasic])
    func aDeltaDownloadAfterARemoteDeleteRemovesTheEntity(service: String) async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let root = sap.serviceRoot(service)
        let (set, key) = service == MockSAP.salesOrderV4 ? ("SalesOrder", "SalesOrder") : ("SalesOrderSet", "SalesOrderID")
        let directory = try Directory()
        let provider = try OfflineODataProvider(serviceRoot: root, parameters: OfflineODataParameters(
            storeName: "delta", storePath: directory.path, storeEncryptionKey: "k", keyDerivation: .pbkdf2(rounds: 1_000)))
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "orders", query: set))
        try await provider.open()
        defer { Task { await provider.close() } }
        let before = try ODataPayload.decodeEntitySet(try await provider.execute(.get(set, .orderBy([key]))).payload).entities
        let victim = try #require(before.first?.properties[key]?.stringValue)

        // Another client deletes it (through the online store's session: CSRF handled).
        var options = onlineOptions(directory)
        options.useCache = false
        let other = try OnlineODataStore(serviceRoot: root, options: options)
        try await other.open()
        let deleted = try await other.execute(ODataRequest(method: .delete, resourcePath: "\(set)('\(victim)')")).result()
        #expect(deleted?.statusCode == 204)
        other.close()

        try await provider.download()
        #expect(try sap.logged(method: "GET", path: set).first.map { $0.query.contains("deltatoken") } == true, "the download read the delta")
        let after = try ODataPayload.decodeEntitySet(try await provider.execute(.get(set, .orderBy([key]))).payload).entities
        #expect(after.count == before.count - 1)
        #expect(!after.contains { $0.properties[key]?.stringValue == victim })
    }

    // MARK: Local queries over V2 values

    /// The offline store's local answers to V2 queries over dates, decimals, integers, GUID-like and plain
    /// strings equal mock-sap's own answers: the same keys in the same order.
    @Test func v2LocalQueriesGiveTheProducersAnswer() async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let directory = try Directory()
        let provider = try OfflineODataProvider(serviceRoot: sap.serviceRoot(MockSAP.gwsampleBasic), parameters: OfflineODataParameters(
            storeName: "v2", storePath: directory.path, storeEncryptionKey: "k", keyDerivation: .pbkdf2(rounds: 1_000)))
        for set in ["SalesOrderSet", "ProductSet", "ContactSet", "SalesOrderLineItemSet"] {
            try await provider.add(definingQuery: OfflineODataDefiningQuery(name: set, query: set))
        }
        try await provider.open()
        defer { Task { await provider.close() } }

        // Thresholds taken from the data, so that every query splits its set.
        func values(_ set: String, _ property: String) async throws -> [String] {
            try ODataPayload.decodeEntitySet(try await provider.execute(.get(set)).payload).entities.compactMap { $0.properties[property]?.stringValue }
        }
        func datetime(_ wire: String) -> String {  // /Date(ms)/ → datetime'…' (UTC)
            let ms = Double(wire.dropFirst(6).prefix { $0.isNumber || $0 == "-" })!
            let formatter = ISO8601DateFormatter()
            return "datetime'" + formatter.string(from: Date(timeIntervalSince1970: ms / 1000)).dropLast() + "'"
        }
        let created = try await values("SalesOrderSet", "CreatedAt").sorted()
        let birthdays = try await values("ContactSet", "DateOfBirth").filter { $0.hasPrefix("/Date(") }.sorted()
        let guid = try #require(try await values("ContactSet", "ContactGuid").dropFirst(3).first)
        let queries: [(set: String, key: [String], filter: String?, orderBy: String)] = [
            ("SalesOrderSet", ["SalesOrderID"], "GrossAmount gt 5000M", "GrossAmount desc,SalesOrderID"),
            ("SalesOrderSet", ["SalesOrderID"], "GrossAmount ge 1000.50M and GrossAmount le 20000M", "SalesOrderID"),
            ("SalesOrderSet", ["SalesOrderID"], "CreatedAt ge \(datetime(created[created.count / 2]))", "CreatedAt,SalesOrderID"),
            ("SalesOrderSet", ["SalesOrderID"], "CreatedAt lt \(datetime(created[created.count / 3])) or NetAmount lt 500M", "NetAmount desc,SalesOrderID"),
            ("SalesOrderSet", ["SalesOrderID"], "startswith(CustomerName,'S') and TaxAmount gt 100M", "CustomerName,SalesOrderID"),
            ("ProductSet", ["ProductID"], "Price lt 100M", "Price desc,ProductID"),
            ("ProductSet", ["ProductID"], "substringof('Notebook',Name) or TaxTarifCode eq 2", "Name,ProductID"),
            ("ProductSet", ["ProductID"], "WeightMeasure gt 2.5M and Price ge 10M", "WeightMeasure,ProductID"),
            ("ContactSet", ["ContactGuid"], "ContactGuid eq '\(guid)'", "ContactGuid"),
            ("ContactSet", ["ContactGuid"], "DateOfBirth lt \(datetime(birthdays[birthdays.count / 2]))", "DateOfBirth desc,ContactGuid"),
            ("SalesOrderLineItemSet", ["SalesOrderID", "ItemPosition"], "Quantity gt 3M and NetAmount lt 1000M", "NetAmount,SalesOrderID,ItemPosition"),
            ("SalesOrderSet", ["SalesOrderID"], nil, "GrossAmount desc,SalesOrderID"),
        ]
        var compared = 0
        for query in queries {
            var options: [QueryOption] = [.orderBy(query.orderBy.split(separator: ",").map(String.init))]
            if let filter = query.filter { options.insert(.filter(filter), at: 0) }
            let local = try ODataPayload.decodeEntitySet(try await provider.execute(ODataRequest(resourcePath: query.set, queryOptions: options)).payload).entities
                .map { entity in query.key.map { entity.properties[$0]?.stringValue ?? "?" }.joined(separator: "/") }
            let remote = try sap.keys(of: query.set, key: query.key, filter: query.filter, orderBy: query.orderBy)
            let label = "\(query.set) $filter=\(query.filter ?? "-") $orderby=\(query.orderBy)"
            #expect(local == remote, "\(label): \(local.count) local vs \(remote.count) at the producer")
            #expect(query.filter == nil || !remote.isEmpty, "\(label) matches something")
            compared += 1
        }
        #expect(compared >= 10)

        // Navigation through V2 associations: a sales order's line items, locally and at the producer.
        let order = try #require(try await values("SalesOrderSet", "SalesOrderID").first)
        let items = try ODataPayload.decodeEntitySet(try await provider.execute(.get("SalesOrderSet('\(order)')/ToLineItems", .orderBy(["ItemPosition"]))).payload)
            .entities.map { "\($0.properties["SalesOrderID"]?.stringValue ?? "?")/\($0.properties["ItemPosition"]?.stringValue ?? "?")" }
        #expect(!items.isEmpty)
        #expect(items == (try sap.keys(of: "SalesOrderSet('\(order)')/ToLineItems", key: ["SalesOrderID", "ItemPosition"], filter: nil, orderBy: "ItemPosition")))

        // `$inlinecount=allpages` counts as the producer's `__count` does (here as `@odata.count`).
        let counted = try ODataPayload.decodeEntitySet(try await provider.execute(ODataRequest(resourcePath: "SalesOrderSet", queryOptions: [
            .filter("GrossAmount gt 5000M"), .top(2), .custom(name: "$inlinecount", value: "allpages"),
        ])).payload)
        #expect(counted.entities.count == 2)
        #expect(counted.count == (try sap.keys(of: "SalesOrderSet", key: ["SalesOrderID"], filter: "GrossAmount gt 5000M", orderBy: "SalesOrderID").count))
        await #expect(throws: (any Error).self) {
            try await provider.execute(ODataRequest(resourcePath: "SalesOrderSet", queryOptions: [.custom(name: "$inlinecount", value: "some")]))
        }
    }

    // MARK: Authentication

    @Test func twentyConcurrentRequestsThatMeetA401RefreshTheBearerTokenOnceAndAllSucceed() async throws {
        let sap = try MockSAP.start(arguments: ["--oauth", "ODATASTORES:client-s3cret"])
        defer { sap.stop() }
        let tokenURL = sap.baseURL + "sap/bc/sec/oauth2/token"
        let curl = try CurlTransport()
        defer { curl.shutdown() }
        let bearer = BearerAuthentication {
            let response = try await curl.send(TransportRequest(
                method: "POST", url: tokenURL,
                headerFields: [.contentType: "application/x-www-form-urlencoded",
                               .authorization: "Basic " + Data("ODATASTORES:client-s3cret".utf8).base64EncodedString()],
                body: Data("grant_type=client_credentials".utf8)))
            guard case .object(let answer) = try JSON.parse(response.body), let token = answer["access_token"]?.stringValue else {
                throw ODataError(.malformedPayload, "no access_token")
            }
            return token
        }
        let directory = try Directory()
        var options = onlineOptions(directory)
        options.useCache = false
        options.session.authentication = bearer
        let store = try OnlineODataStore(serviceRoot: sap.serviceRoot(MockSAP.gwsampleBasic), options: options)
        try await store.open()
        defer { store.close() }
        #expect(try await store.execute(.get("ProductSet", .top(1))).result()?.statusCode == 200)
        #expect(bearer.tokenRequests == 1)

        try sap.admin("DELETE", "tokens")  // every issued token is revoked: the next requests meet 401
        let statuses = try await withThrowingTaskGroup(of: Int?.self) { group in
            for index in 0..<20 {
                group.addTask { try await store.execute(.get("ProductSet", .top(1), .skip(index))).result()?.statusCode }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 20))
        #expect(bearer.tokenRequests == 2, "one refresh for all")
        // Each request that met the 401 was retried once; one that started after the refresh needed none.
        #expect((1...20).contains(store.session.statistics.credentialRenewals))
    }

    @Test func noCredentialTokenOrCookieReachesAFileOrAnErrorMessage() async throws {
        let password = "pw-\(UUID().uuidString)"
        let sap = try MockSAP.start(arguments: ["--auth", "CLERK:\(password)"])
        defer { sap.stop() }
        let wire = try SecretRecordingTransport()
        let directory = try Directory()
        var authentication = SessionOptions()
        authentication.authentication = BasicAuthentication(user: "CLERK", password: password)

        // Unencrypted stores on purpose: a secret written anywhere would be found by the search.
        var options = onlineOptions(directory)
        options.disableCacheEncryption = true
        options.cacheEncryptionKey = nil
        options.session = authentication
        let online = try OnlineODataStore(serviceRoot: sap.serviceRoot(MockSAP.gwsampleBasic), options: options, transport: wire)
        try await online.open()
        _ = try await online.execute(.get("ProductSet", .top(3))).result()
        _ = try await online.execute(ODataRequest(method: .post, resourcePath: "ProductSet", body: product("ZZ-SECRET"))).result()
        var failedOnline = ""
        do {
            _ = try await online.execute(ODataRequest(method: .post, resourcePath: "ProductSet", body: product("ZZ-SECRET"))).result()
        } catch { failedOnline = "\(error)" }  // a duplicate key: the producer's error
        online.close()

        var parameters = OfflineODataParameters(storeName: "sap", storePath: directory.path + "/offline", disableDefaultEncryptionKey: true,
                                                enableRepeatableRequests: true, transport: wire)
        parameters.session = authentication
        parameters.uploadRetries = 0
        let provider = try OfflineODataProvider(serviceRoot: sap.serviceRoot(MockSAP.gwsampleBasic), parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "products", query: "ProductSet"))
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "partners", query: "BusinessPartnerSet"))
        try await provider.open()
        let partner = try #require(try await firstPartner(provider))
        try await queueChanges(provider, partner: partner, newProduct: "ZZ-SECRT2")
        try sap.admin("POST", "faults", json: #"{"match":"BusinessPartnerSet","method":"MERGE","scenario":"precondition"}"#)
        let result = try await provider.upload()
        #expect(result.failed.map(\.httpStatusCode) == [412])  // an ErrorArchive entry to search
        let archive = try await provider.execute(.get("ErrorArchive")).payload
        await provider.close()

        let secrets = wire.secrets
        #expect(secrets.count >= 3, "the wire carried an Authorization, a CSRF token and a session cookie")
        let texts = [failedOnline, String(decoding: archive, as: UTF8.self)] + result.failed.map(\.message)
        for secret in secrets + [password] {
            #expect(!texts.contains { $0.contains(secret) }, "a secret in an error message or the ErrorArchive")
            let files = try directory.filesContaining(Data(secret.utf8))
            #expect(files.isEmpty, "a secret was written to \(files)")
        }
        #expect(try directory.fileCount() > 3)  // the search looked at real files
    }

    // MARK: - Helpers

    private func onlineOptions(_ directory: Directory) -> OnlineStoreOptions {
        var options = OnlineStoreOptions()
        options.storeDirectory = URL(fileURLWithPath: directory.path)
        options.cacheEncryptionKey = "online cache key"
        options.cacheKeyDerivation = .pbkdf2(rounds: 1_000)
        return options
    }

    private func offlineStore(_ sap: MockSAP, _ directory: Directory, mode: OfflineODataUploadMode = .oneByOne) async throws -> OfflineODataProvider {
        var parameters = OfflineODataParameters(storeName: "sap", storePath: directory.path, storeEncryptionKey: "offline key",
                                                keyDerivation: .pbkdf2(rounds: 1_000), enableRepeatableRequests: true)
        parameters.uploadMode = mode
        let provider = try OfflineODataProvider(serviceRoot: sap.serviceRoot(MockSAP.gwsampleBasic), parameters: parameters)
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "products", query: "ProductSet"))
        try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "partners", query: "BusinessPartnerSet"))
        try await provider.open()
        return provider
    }

    private func firstPartner(_ provider: OfflineODataProvider) async throws -> String? {
        let response = try await provider.execute(.get("BusinessPartnerSet", .orderBy(["BusinessPartnerID"]), .top(1)))
        return try ODataPayload.decodeEntitySet(response.payload).entities.first?.properties["BusinessPartnerID"]?.stringValue
    }

    /// A create, an update (with If-Match of the downloaded ETag) and a delete of the created product.
    private func queueChanges(_ provider: OfflineODataProvider, partner: String, newProduct: String) async throws {
        _ = try await provider.execute(ODataRequest(method: .post, resourcePath: "ProductSet", body: product(newProduct)))
        _ = try await provider.execute(ODataRequest(method: .patch, resourcePath: "BusinessPartnerSet('\(partner)')",
                                                    body: Data(#"{"CompanyName":"Renamed by upload"}"#.utf8)))
        _ = try await provider.execute(ODataRequest(method: .delete, resourcePath: "ProductSet('HT-1001')"))
    }

    private func expectChangesArrived(_ sap: MockSAP, partner: String, newProduct: String) throws {
        #expect(try sap.read("ProductSet('\(newProduct)')")["Name"]?.stringValue == "Made by \(newProduct)")
        #expect(try sap.read("BusinessPartnerSet('\(partner)')")["CompanyName"]?.stringValue == "Renamed by upload")
        #expect(try sap.status("ProductSet('HT-1001')") == 404)
    }

    private func product(_ id: String) -> Data {
        Data(#"{"ProductID":"\#(id)","Name":"Made by \#(id)","Category":"Notebooks","Price":"12.500","CurrencyCode":"EUR","TypeCode":"PR","SupplierID":"0100000005","TaxTarifCode":1,"MeasureUnit":"EA"}"#.utf8)
    }
}

/// A temporary directory, removed at the end of a test, that can be searched for bytes.
final class Directory: Sendable {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("session-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    private func files() -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: path)
        var files: [String] = []
        while let relative = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path + "/" + relative, isDirectory: &isDirectory), !isDirectory.boolValue {
                files.append(path + "/" + relative)
            }
        }
        return files
    }

    func fileCount() throws -> Int { files().count }

    func filesContaining(_ needle: Data) throws -> [String] {
        try files().filter { try Data(contentsOf: URL(fileURLWithPath: $0)).range(of: needle) != nil }
    }
}

extension MockSAP {
    /// An entity of GWSAMPLE_BASIC read straight from the producer.
    func read(_ path: String) throws -> JSONObject {
        let (status, body) = try get(serviceRoot(MockSAP.gwsampleBasic) + path + "?$format=json")
        guard status == 200, case .object(let root) = try JSON.parse(body), case .object(let entity)? = root["d"] else {
            throw ODataError(.malformedPayload, "GET \(path) answered \(status)")
        }
        return entity
    }

    /// The status of a GET of an entity of GWSAMPLE_BASIC.
    func status(_ path: String) throws -> Int {
        try get(serviceRoot(MockSAP.gwsampleBasic) + path + "?$format=json").status
    }

    /// The bodies of the requests the producer logged with this method on a path containing `path`.
    func loggedBodies(method: String, path: String) throws -> [String] {
        let (_, body) = try admin("GET", "requests?limit=100&verbose=1")
        guard case .object(let root) = try JSON.parse(body), let results = root["results"]?.arrayValue else { return [] }
        return results.compactMap { entry in
            guard entry["method"]?.stringValue == method, entry["path"]?.stringValue?.contains(path) == true else { return nil }
            return entry["body"]?.stringValue
        }
    }

    /// The keys of what the producer answers to a query of GWSAMPLE_BASIC, in its order.
    func keys(of set: String, key: [String], filter: String?, orderBy: String) throws -> [String] {
        var query = "$format=json&$orderby=" + PercentEncoding.encodeQueryValue(orderBy)
        if let filter { query += "&$filter=" + PercentEncoding.encodeQueryValue(filter) }
        let (status, body) = try get(serviceRoot(MockSAP.gwsampleBasic) + set + "?" + query)
        guard status == 200, case .object(let root) = try JSON.parse(body), let results = root["d"]?["results"]?.arrayValue else {
            throw ODataError(.malformedPayload, "\(set)?\(query) answered \(status): \(String(decoding: body, as: UTF8.self).prefix(300))")
        }
        return results.map { entity in key.map { entity[$0]?.stringValue ?? "?" }.joined(separator: "/") }
    }

    private func get(_ url: String) throws -> (status: Int, body: Data) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "-g", "-o", "-", "-w", "\n%{http_code}", url]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard let newline = text.lastIndex(of: "\n") else { return (0, Data()) }
        return (Int(text[text.index(after: newline)...]) ?? 0, Data(text[..<newline].utf8))
    }
}
