import HTTPTypes
import ODataCore
import Testing
import CurlHTTP

/// `CurlError` follows the package's error idiom: `catch CurlError.kind` matches its kind only, the `CURLcode`
/// stays readable, and the description names the kind and never the credentials sent.
@Suite struct CurlErrorIdiomTests {
    @Test func aRefusedConnectionIsCaughtByItsKindAndNamesNoCredential() async throws {
        let port = try Sockets.freePort()
        let transport = try CurlTransport()
        defer { transport.shutdown() }
        var fields = HTTPFields()
        fields[.authorization] = "Bearer s3cret-token"
        let request = TransportRequest(method: "GET", url: "http://127.0.0.1:\(port)/?sap-password=s3cret-query",
                                       headerFields: fields)
        var matched = ""
        do {
            _ = try await transport.send(request)
        } catch CurlError.timedOut {
            matched = "timedOut"
        } catch CurlError.connectFailed {
            matched = "connectFailed"
        } catch {
            matched = "\(error)"
        }
        #expect(matched == "connectFailed")
        do {
            _ = try await transport.send(request)
        } catch let error as CurlError {
            #expect(error == .connectFailed && error != .timedOut)
            #expect(error.curlCode == 7)  // CURLE_COULDNT_CONNECT, readable as data
            #expect(error.description.hasPrefix("CurlError.connectFailed"), "\(error)")
            #expect(!error.description.contains("s3cret"), "\(error)")
        }
    }
}
