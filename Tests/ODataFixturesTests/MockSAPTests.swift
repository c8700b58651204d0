import Foundation
import ODataCore
import Testing

@testable import ODataFixtures

/// The mock-sap harness: it starts a foreign producer with SAP Gateway's CSRF protection on, on a free port.
@Suite struct MockSAPTests {
    @Test func startsWithCSRFProtectionOnAndStopsByPID() async throws {
        let sap = try MockSAP.start()
        defer { sap.stop() }
        let root = sap.serviceRoot(MockSAP.gwsampleBasic)
        let read = try await Curl.run(root + "ProductSet?$top=2&$format=json")
        #expect(read.status == 200)
        #expect(try read.json()["d"]?["results"]?.arrayValue?.count == 2)

        // A write without a token is refused the way SAP Gateway refuses it.
        let refused = try await Curl.run("POST", root + "ProductSet", headers: ["Content-Type": "application/json"], body: "{}")
        #expect(refused.status == 403)
        #expect(refused.headers["x-csrf-token"]?.lowercased() == "required")

        #expect(try sap.admin("GET", "health").status == 200)
        sap.stop()
        #expect(try await Curl.run(root + "ProductSet?$top=1").exitCode == 7)  // connection refused: the process is gone
    }
}
