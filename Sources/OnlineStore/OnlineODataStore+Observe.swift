import Foundation
import HTTPTypes
import ODataCore
import ODataSession

extension OnlineODataStore {
    /// A resource kept up to date: the cached copy at once (`nil` when nothing is cached), then the server's answer
    /// read again every `interval` — a conditional `GET` in active mode (`If-None-Match` / `If-Modified-Since`, so
    /// an unchanged resource costs a `304`) — given only when its payload changed. In passive mode the cache alone is
    /// read each interval. A failure (the back end unreachable, an error status) is an element, not the end: the
    /// next interval reads again.
    ///
    /// Observers of the same request and interval share one read per interval; one that starts later gets the last
    /// answer at once. The intervals are waited on ``OnlineStoreOptions/retryClock`` (tests give ODataTesting's
    /// `TestClock`). The sequence ends when the task iterating it is cancelled (the last observer of a resource stops
    /// its reads) or the store closes.
    ///
    /// ```swift
    /// for await answer in store.observe(ODataRequest(method: .get, resourcePath: "Products(1)"), every: .seconds(30)) {
    ///     switch answer {
    ///     case .success(let response?): show(try ODataPayload.decodeEntity(response.payload))
    ///     case .success(nil): showPlaceholder()      // nothing cached yet
    ///     case .failure(let error): showStale(error)  // the last answer still stands
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - request: A `GET` request (another method is given back as a failure, once).
    ///   - interval: The time between two reads.
    /// - Returns: The answers.
    public func observe(_ request: ODataRequest, every interval: Duration) -> AsyncStream<Result<ODataResponse?, any Error>> {
        guard request.method == .get else {
            return Self.failedObservation(ODataError(.invalidState, "observe(_:every:) reads a resource: \(request.method.rawValue) is not a GET"))
        }
        let url: String
        do { url = try request.relativeURL() } catch { return Self.failedObservation(error) }
        // Observers share a resource when they read the same URL with the same headers, as often.
        let key = "\(interval) \(url) " + request.headerFields.map { "\($0.name)=\($0.value)" }.joined(separator: "\n")
        return liveResources.observe(key) { [weak self] emit in
            var last: Data??  // the payload last given (`.some(nil)`: "nothing cached" was given)
            while !Task.isCancelled, let self {
                let execution = self.execute(request)
                await withTaskCancellationHandler {
                    for await event in execution.events {
                        switch event {
                        case .cacheResponse(let response), .serverResponse(let response as ODataResponse?):
                            if last == nil || last! != response?.payload {
                                last = .some(response?.payload)
                                emit(.success(response))
                            }
                        case .failed(let error, _):
                            emit(.failure(error))
                        default:
                            break
                        }
                    }
                } onCancel: {
                    execution.cancel()
                }
                do { try await self.options.retryClock.sleep(for: interval) } catch { return }
            }
        }
    }

    /// An observation that gives one failure and ends.
    private static func failedObservation(_ error: any Error) -> AsyncStream<Result<ODataResponse?, any Error>> {
        let (answers, continuation) = AsyncStream.makeStream(of: Result<ODataResponse?, any Error>.self)
        continuation.yield(.failure(error))
        continuation.finish()
        return answers
    }
}
