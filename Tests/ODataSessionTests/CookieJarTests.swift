import Foundation
import Testing

@testable import ODataSession

@Suite struct CookieJarTests {
    private let url = URL(string: "https://gw.example.com/sap/opu/odata/sap/SRV/Items")!

    @Test func aCookieGoesBackToItsHostAndPathOnly() {
        let jar = CookieJar()
        jar.store(["SAP_SESSIONID_X=abc; path=/sap", "other=1; Path=/elsewhere"], for: url)
        #expect(jar.header(for: url) == "SAP_SESSIONID_X=abc")
        #expect(jar.header(for: URL(string: "https://gw.example.com/sapper")!) == nil)  // not a path match
        #expect(jar.header(for: URL(string: "https://other.example.com/sap/x")!) == nil)
        #expect(jar.header(for: URL(string: "https://gw.example.com/elsewhere/x")!) == "other=1")
    }

    @Test func theDefaultPathIsTheRequestsDirectory() {
        let jar = CookieJar()
        jar.store(["a=1"], for: url)
        #expect(jar.header(for: URL(string: "https://gw.example.com/sap/opu/odata/sap/SRV/$batch")!) == "a=1")
        #expect(jar.header(for: URL(string: "https://gw.example.com/sap/opu/odata/sap/OTHER")!) == nil)
    }

    @Test func domainCookiesReachSubdomainsAndForeignDomainsAreRefused() {
        let jar = CookieJar()
        jar.store(["d=1; Domain=.example.com; Path=/", "evil=1; Domain=attacker.org; Path=/"], for: url)
        #expect(jar.header(for: URL(string: "https://api.example.com/")!) == "d=1")
        #expect(jar.count == 1)
    }

    @Test func secureCookiesNeverGoOverCleartext() {
        let jar = CookieJar()
        jar.store(["s=1; Secure; Path=/"], for: url)
        #expect(jar.header(for: URL(string: "http://gw.example.com/x")!) == nil)
        #expect(jar.header(for: URL(string: "https://gw.example.com/x")!) == "s=1")
    }

    @Test func maxAgeZeroAndPastExpiryDeleteAndNewValuesReplace() {
        let jar = CookieJar()
        jar.store(["a=1; Path=/", "b=2; Path=/"], for: url)
        jar.store(["a=3; Path=/"], for: url)
        #expect(jar.header(for: url).map { Set($0.components(separatedBy: "; ")) } == ["a=3", "b=2"])
        jar.store(["a=x; Max-Age=0; Path=/", "b=x; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/"], for: url)
        #expect(jar.header(for: url) == nil)
        #expect(jar.count == 0)
    }

    @Test func malformedValuesAreIgnoredAndTheJarIsBounded() {
        let jar = CookieJar()
        jar.store(["", "novalue", "=nameless", ";;;"], for: url)
        #expect(jar.count == 0)
        jar.store((0..<(CookieJar.capacity + 50)).map { "c\($0)=v; Path=/" }, for: url)
        #expect(jar.count == CookieJar.capacity)
        jar.removeAll()
        #expect(jar.header(for: url) == nil)
    }
}
