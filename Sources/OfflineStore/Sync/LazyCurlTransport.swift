import CurlHTTP
import ODataCore

/// A `CurlTransport` made on first use and shut down on demand; the next request after a shutdown makes a
/// new one. The provider's own transport when the parameters give none: it exists only while the store
/// talks to the back end, and a closed store holds no connection.
final class LazyCurlTransport: HTTPTransport {
    private let current = LockedValue<CurlTransport?>(nil)

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let transport = try current.withLock { current in
            if let current { return current }
            let made = try CurlTransport()
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
