import Foundation

/// An HTTP transport over libcurl's multi interface: many concurrent transfers on one event thread,
/// connections kept alive and reused, HTTP/2 over TLS, async/await API.
///
/// One dedicated thread owns the libcurl multi handle; `send(_:)` hands its transfer over and suspends
/// without blocking Swift's cooperative pool. Cancelling the calling task removes the transfer promptly.
///
/// ```swift
/// let transport = try CurlTransport()
/// let response = try await transport.send(TransportRequest(url: "http://127.0.0.1:8080/People"))
/// ```
///
/// ## Topics
/// - ``init(configuration:)``
/// - ``send(_:)``
/// - ``shutdown()``
public final class CurlTransport: HTTPTransport, Sendable {
    /// The configuration the transport was created with.
    public let configuration: CurlConfiguration
    let loop: CurlMultiLoop

    /// Creates a transport and starts its event thread.
    ///
    /// - Parameter configuration: The options; the default is `CurlConfiguration()`.
    /// - Throws: `CurlError` of kind `.invalidConfiguration` naming a bad option, or when libcurl cannot
    ///   be initialized.
    public init(configuration: CurlConfiguration = .init()) throws {
        try configuration.validate()
        self.configuration = configuration
        self.loop = try CurlMultiLoop(configuration: configuration)
    }

    deinit {
        loop.shutdown()
    }

    /// Sends a request and waits for its complete response.
    ///
    /// - Parameter request: The request; its URL must be absolute `http://` or `https://`.
    /// - Returns: The final response, whatever its status code (4xx and 5xx are responses, not errors).
    /// - Throws: `CurlError` for a bad request or a failed transfer (see `CurlError.Kind`), or
    ///   `CancellationError` when the calling task is cancelled.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        try RequestValidation.validate(request)
        let loop = self.loop
        let id = loop.makeID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                loop.submit(.init(id: id, request: request, continuation: continuation))
            }
        } onCancel: {
            loop.cancel(id)
        }
    }

    /// Fails every transfer still running with `CurlError.Kind.shutdown`, closes all connections and stops the
    /// event thread; later calls to `send(_:)` fail with `.shutdown`. Calling it again does nothing.
    ///
    /// It blocks until the event thread has stopped (normally well under a millisecond).
    public func shutdown() {
        loop.shutdown()
    }
}
