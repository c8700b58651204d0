import CurlHTTP
import ODataCore

/// A `CurlTransport` made on first use and shut down on demand; the next request after a shutdown makes a
/// new one. The provider's own transport when the parameters give none: it exists only while the store
/// talks to the back end, and a closed store holds no connection. It is made with the parameters'
/// `transportConfiguration` (TLS trust and client certificate among them).
final class LazyCurlTransport: HTTPTransport {
    private let configuration: CurlConfiguration
    private let current = LockedValue<CurlTransport?>(nil)

    /// A transport that makes its `CurlTransport` with `configuration` when the first request comes.
    init(configuration: CurlConfiguration) {
        self.configuration = configuration
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let transport = try current.withLock { current in
            if let current { return current }
            let made = try CurlTransport(configuration: configuration)
            current = made
            return made
        }
        return try await transport.send(request)
    }

    /// Shuts the transport down, ending its transfers.
    func shutdown() {
        current.withLock { current -> CurlTransport? in
            defer { current = nil }
            return current
        }?.shutdown()
    }
}
