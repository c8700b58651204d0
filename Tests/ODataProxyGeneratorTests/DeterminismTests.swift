import Foundation
import Testing
@testable import ODataProxyGenerator

/// The same document gives the same text, run after run.
struct DeterminismTests {
    @Test(arguments: [Support.fixture, Support.gwsample, Support.product, Support.northwind])
    func twoRunsAreEqual(_ path: String) throws {
        let first = try Support.generate(path)
        let second = try Support.generate(path)
        #expect(first == second)
        #expect(!first.isEmpty)
    }

    @Test func separateGeneratorsAgree() throws {
        // The generator iterates no Set or Dictionary into its output (hash order changes from process to process).
        let data = try Support.data(Support.gwsample)
        let a = try ProxyGenerator(serviceName: "S", sourceName: "g.xml").generate(metadata: data)
        let b = try ProxyGenerator(serviceName: "S", sourceName: "g.xml").generate(metadata: data)
        #expect(a == b)
    }
}
