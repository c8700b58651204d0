import Foundation
import ODataCore
import Testing

@testable import ODataFixtures

private let json = ["Content-Type": "application/json"]

@Suite struct WriteTests {
    @Test func createWithGeneratedKeys() async throws {
        try await withServer { server in
            let event = try await Curl.run(
                "POST", server.serviceRoot + "Events", headers: json, body: #"{"CustomerID":"ALFKI","Title":"Call back"}"#)
            #expect(event.status == 201)
            let id = try #require(try event.json()["EventID"]?.stringValue)
            #expect(EntityKey.isGUID(id))
            #expect(event.headers["location"] == server.serviceRoot + "Events(\(id))")
            #expect(event.headers["odata-entityid"] == event.headers["location"])
            #expect(event.headers["etag"] == (try event.json()["@odata.etag"]?.stringValue))
            let read = try await Curl.run(try #require(event.headers["location"]))
            #expect(try read.json()["Title"] == "Call back")

            let order = try await Curl.run(
                "POST", server.serviceRoot + "Orders", headers: json, body: #"{"CustomerID":"ANATR","Freight":1.5}"#)
            #expect(order.status == 201)
            #expect(try order.json()["OrderID"] == 11078)
            #expect(order.headers["location"] == server.serviceRoot + "Orders(11078)")

            // Creating through a navigation links the new entity to its parent.
            let linked = try await Curl.run(
                "POST", server.serviceRoot + "Customers('BERGS')/Events", headers: json, body: #"{"Title":"linked"}"#)
            #expect(try linked.json()["CustomerID"] == "BERGS")

            // Binding a single-valued navigation sets its foreign key.
            let bound = try await Curl.run(
                "POST", server.serviceRoot + "Events", headers: json,
                body: #"{"Title":"bound","Customer@odata.bind":"Customers('QUICK')"}"#)
            #expect(try bound.json()["CustomerID"] == "QUICK")

            let minimal = try await Curl.run(
                "POST", server.serviceRoot + "Events", headers: json.merging(["Prefer": "return=minimal"]) { $1 },
                body: #"{"Title":"minimal"}"#)
            #expect(minimal.status == 204)
            #expect(minimal.headers["location"]?.hasPrefix(server.serviceRoot + "Events(") == true)
            #expect(minimal.headers["preference-applied"] == "return=minimal")
            #expect(try await Curl.run(server.serviceRoot + "Events/$count").text == "20")
        }
    }

    @Test func createFailuresCarryODataErrors() async throws {
        try await withServer { server in
            let duplicate = try await Curl.run(
                "POST", server.serviceRoot + "Customers", headers: json, body: #"{"CustomerID":"ALFKI","CompanyName":"x"}"#)
            #expect(duplicate.status == 409)
            #expect(try duplicate.errorCode() == "Conflict")

            let unknown = try await Curl.run(
                "POST", server.serviceRoot + "Customers", headers: json, body: #"{"CustomerID":"NEW1","CompanyName":"x","Bogus":1}"#)
            #expect(unknown.status == 400)
            #expect(try unknown.json()["error"]?["message"]?.stringValue?.contains("Bogus") == true)

            let missing = try await Curl.run("POST", server.serviceRoot + "Customers", headers: json, body: #"{"CustomerID":"NEW1"}"#)
            #expect(missing.status == 400)
            let wrongType = try await Curl.run("POST", server.serviceRoot + "Orders", headers: json, body: #"{"Freight":"lots"}"#)
            #expect(wrongType.status == 400)
            let dangling = try await Curl.run("POST", server.serviceRoot + "Orders", headers: json, body: #"{"CustomerID":"ZZZZZ"}"#)
            #expect(dangling.status == 400)
            let notJSON = try await Curl.run("POST", server.serviceRoot + "Orders", headers: json, body: "{oops")
            #expect(notJSON.status == 400)
            let array = try await Curl.run("POST", server.serviceRoot + "Orders", headers: json, body: "[]")
            #expect(array.status == 400)
            let onEntity = try await Curl.run("POST", server.serviceRoot + "Orders(10248)", headers: json, body: "{}")
            #expect(onEntity.status == 405)
            let nowhere = try await Curl.run("POST", server.serviceRoot + "Nowhere", headers: json, body: "{}")
            #expect(nowhere.status == 404)
            #expect(try await Curl.run(server.serviceRoot + "Customers/$count").text == "91")
        }
    }

    @Test func patchMergePutAndDelete() async throws {
        try await withServer { server in
            let url = server.serviceRoot + "Customers('ANATR')"
            let before = try await Curl.run(url)
            let patched = try await Curl.run("PATCH", url, headers: json, body: #"{"City":"Puebla"}"#)
            #expect(patched.status == 204)
            #expect(patched.headers["etag"] != before.headers["etag"])
            let afterPatch = try await Curl.run(url)
            #expect(try afterPatch.json()["City"] == "Puebla")
            #expect(try afterPatch.json()["ContactName"] == "Ana Trujillo")

            let merged = try await Curl.run(
                "MERGE", url, headers: json.merging(["Prefer": "return=representation"]) { $1 }, body: #"{"Fax":null}"#)
            #expect(merged.status == 200)
            #expect(try merged.json()["Fax"] == .null)
            #expect(try merged.json()["City"] == "Puebla")

            let tunnelled = try await Curl.run(
                "POST", url, headers: json.merging(["X-HTTP-Method": "MERGE"]) { $1 }, body: #"{"Phone":"1"}"#)
            #expect(tunnelled.status == 204)

            let put = try await Curl.run("PUT", url, headers: json, body: #"{"CompanyName":"Ana"}"#)
            #expect(put.status == 204)
            let afterPut = try await Curl.run(url)
            #expect(try afterPut.json()["CompanyName"] == "Ana")
            #expect(try afterPut.json()["City"] == .null)
            let putMissing = try await Curl.run("PUT", url, headers: json, body: #"{"City":"X"}"#)
            #expect(putMissing.status == 400)
            let keyChange = try await Curl.run("PATCH", url, headers: json, body: #"{"CustomerID":"OTHER"}"#)
            #expect(keyChange.status == 400)
            let tooLong = try await Curl.run("PATCH", url, headers: json, body: #"{"City":"\#(String(repeating: "x", count: 16))"}"#)
            #expect(tooLong.status == 400)

            let referenced = try await Curl.run("DELETE", server.serviceRoot + "Customers('ALFKI')")
            #expect(referenced.status == 409)
            #expect(try referenced.errorCode() == "Conflict")
            let deleted = try await Curl.run("DELETE", server.serviceRoot + "Customers('PARIS')")
            #expect(deleted.status == 204)
            #expect(try await Curl.run(server.serviceRoot + "Customers('PARIS')").status == 404)
            #expect(try await Curl.run("DELETE", server.serviceRoot + "Customers('PARIS')").status == 404)
            #expect(try await Curl.run("DELETE", server.serviceRoot + "Customers").status == 405)
            #expect(try await Curl.run("PATCH", server.serviceRoot + "Customers('GONE')", headers: json, body: "{}").status == 404)
        }
    }

    @Test func conditionalReadsGive304() async throws {
        try await withServer { server in
            let url = server.serviceRoot + "Customers('ALFKI')"
            let first = try await Curl.run(url)
            let etag = try #require(first.headers["etag"])
            let revalidated = try await Curl.run(url, headers: ["If-None-Match": etag])
            #expect(revalidated.status == 304)
            #expect(revalidated.body.isEmpty)
            #expect(revalidated.headers["etag"] == etag)
            let lastModified = try #require(first.headers["last-modified"])
            #expect(try await Curl.run(url, headers: ["If-Modified-Since": lastModified]).status == 304)

            // Collections carry an ETag (a hash of the payload) too.
            let collectionURL = server.serviceRoot + "Customers?$filter=Country%20eq%20'Germany'"
            let collection = try await Curl.run(collectionURL)
            let collectionETag = try #require(collection.headers["etag"])
            #expect(collection.headers["last-modified"] != nil)
            #expect(try await Curl.run(collectionURL, headers: ["If-None-Match": collectionETag]).status == 304)

            // A change makes both stale.
            try server.mutate { data in
                try data.update(in: "Customers", key: ["CustomerID": "ALFKI"], changes: ["City": "Bonn"])
            }
            let changed = try await Curl.run(url, headers: ["If-None-Match": etag])
            #expect(changed.status == 200)
            #expect(changed.headers["etag"] != etag)
            #expect(try changed.json()["City"] == "Bonn")
            #expect(try await Curl.run(url, headers: ["If-Modified-Since": lastModified]).status == 200)
            let collectionChanged = try await Curl.run(collectionURL, headers: ["If-None-Match": collectionETag])
            #expect(collectionChanged.status == 200)
            #expect(collectionChanged.headers["etag"] != collectionETag)
        }
    }

    @Test func ifMatchGuardsChanges() async throws {
        try await withServer { server in
            let url = server.serviceRoot + "Customers('BERGS')"
            let etag = try #require(try await Curl.run(url).headers["etag"])
            let stale = try await Curl.run("PATCH", url, headers: json.merging(["If-Match": #"W/"12345""#]) { $1 }, body: #"{"City":"X"}"#)
            #expect(stale.status == 412)
            #expect(try stale.errorCode() == "PreconditionFailed")
            #expect(try await Curl.run(url).json()["City"] == "Luleå")

            let current = try await Curl.run("PATCH", url, headers: json.merging(["If-Match": etag]) { $1 }, body: #"{"City":"Umeå"}"#)
            #expect(current.status == 204)
            // The old ETag is now stale, for updates and deletes alike.
            let again = try await Curl.run("PATCH", url, headers: json.merging(["If-Match": etag]) { $1 }, body: #"{"City":"X"}"#)
            #expect(again.status == 412)
            #expect(try await Curl.run("DELETE", url, headers: ["If-Match": etag]).status == 412)

            let star = try await Curl.run("PATCH", url, headers: json.merging(["If-Match": "*"]) { $1 }, body: #"{"City":"Kiruna"}"#)
            #expect(star.status == 204)
            #expect(try await Curl.run("DELETE", server.serviceRoot + "Customers('FISSA')", headers: ["If-Match": "*"]).status == 204)
            #expect(try await Curl.run(url, headers: ["If-Match": #"W/"1""#]).status == 412)
        }
    }

    /// `$ref`: a single-valued link set and cleared on the entity holding the foreign key, a collection link added and
    /// removed (by key and by `$id`) on the linked entity, read back as references; what names nothing is refused.
    @Test func referencesChangeForeignKeys() async throws {
        try await withServer { server in
            let root = server.serviceRoot
            let set = try await Curl.run("PUT", root + "Orders(10248)/Customer/$ref", headers: json, body: #"{"@odata.id":"\#(root)Customers('ALFKI')"}"#)
            #expect(set.status == 204)
            #expect(try await Curl.run(root + "Orders(10248)").json()["CustomerID"] == "ALFKI")
            let read = try await Curl.run(root + "Orders(10248)/Customer/$ref")
            #expect(try read.json()["value"]?.arrayValue?.first?["@odata.id"]?.stringValue == root + "Customers('ALFKI')")
            #expect(try await Curl.run("DELETE", root + "Orders(10248)/Customer/$ref").status == 204)
            #expect(try await Curl.run(root + "Orders(10248)").json()["CustomerID"]?.isNull == true)

            #expect(try await Curl.run("POST", root + "Customers('ANATR')/Orders/$ref", headers: json, body: #"{"@odata.id":"Orders(10249)"}"#).status == 204)
            #expect(try await Curl.run(root + "Orders(10249)").json()["CustomerID"] == "ANATR")
            #expect(try await Curl.run("DELETE", root + "Customers('ANATR')/Orders(10249)/$ref").status == 204)
            #expect(try await Curl.run(root + "Orders(10249)").json()["CustomerID"]?.isNull == true)
            #expect(try await Curl.run("DELETE", root + "Customers('HANAR')/Orders/$ref?$id=Orders(10250)").status == 204)
            #expect(try await Curl.run(root + "Orders(10250)").json()["CustomerID"]?.isNull == true)

            #expect(try await Curl.run("DELETE", root + "Customers('ANATR')/Orders(10251)/$ref").status == 404, "not linked")
            #expect(try await Curl.run("DELETE", root + "Customers('ANATR')/Orders/$ref").status == 400, "a collection's link needs a key")
            #expect(try await Curl.run("POST", root + "Orders(10251)/Customer/$ref", headers: json, body: #"{"@odata.id":"Customers('ALFKI')"}"#).status == 405)
            #expect(try await Curl.run("PUT", root + "Orders(10251)/Customer/$ref", headers: json, body: #"{"@odata.id":"Customers('NOONE')"}"#).status == 404)
        }
    }
}
