import Foundation
import ODataCore
import ODataSession

/// The resources observed with ``OnlineODataStore/observe(_:every:)``, one poller per URL and interval: observers of the
/// same resource share its reads, and one that comes later gets the last answer at once.
final class LiveResources: Sendable {
    /// One observed resource: its observers, the last answer given, the task that reads it.
    private final class Resource: Sendable {
        let state = LockedValue<(observers: [Int: AsyncStream<LiveAnswer>.Continuation], last: LiveAnswer?, poller: Task<Void, Never>?)>(([:], nil, nil))

        /// Gives `answer` to every observer and keeps it for the next one.
        func emit(_ answer: LiveAnswer) {
            let observers = state.withLock { state in
                state.last = answer
                return Array(state.observers.values)
            }
            for observer in observers { observer.yield(answer) }
        }
    }

    typealias LiveAnswer = Result<ODataResponse?, any Error>

    private let state = LockedValue<(next: Int, resources: [String: Resource])>((0, [:]))

    /// How many resources are read now (one per URL and interval observed).
    var count: Int { state.withLock { $0.resources.count } }
    /// How many answers the pollers gave since the store was made (each once, to all observers of its resource).
    let emitted = LockedValue(0)

    /// Adds an observer of `key`, starting its poller with `poll` when it is the first.
    ///
    /// - Parameter poll: Reads the resource for ever, giving each answer to `emit`; cancelled when the last observer goes.
    func observe(_ key: String, poll: @escaping @Sendable (_ emit: @escaping @Sendable (LiveAnswer) -> Void) async -> Void) -> AsyncStream<LiveAnswer> {
        let (answers, continuation) = AsyncStream.makeStream(of: LiveAnswer.self, bufferingPolicy: .bufferingNewest(1))
        let (id, resource, isNew) = state.withLock { state -> (Int, Resource, Bool) in
            state.next += 1
            if let resource = state.resources[key] { return (state.next, resource, false) }
            let resource = Resource()
            state.resources[key] = resource
            return (state.next, resource, true)
        }
        let emitted = emitted
        resource.state.withLock { state in
            state.observers[id] = continuation
            // Under the lock: an answer the poller gives meanwhile comes after this one, never before it.
            if let last = state.last { continuation.yield(last) }
            if isNew {
                state.poller = Task {
                    await poll { answer in
                        emitted.withLock { $0 += 1 }
                        resource.emit(answer)
                    }
                }
            }
        }
        continuation.onTermination = { [weak self] _ in self?.leave(key, id) }
        return answers
    }

    /// An observer went: the last one of a resource stops its poller.
    private func leave(_ key: String, _ id: Int) {
        let poller = state.withLock { state -> Task<Void, Never>? in
            guard let resource = state.resources[key] else { return nil }
            return resource.state.withLock { resourceState in
                resourceState.observers[id] = nil
                guard resourceState.observers.isEmpty else { return nil }
                state.resources[key] = nil
                return resourceState.poller
            }
        }
        poller?.cancel()
    }

    /// The store closes: every observation ends.
    func finishAll() {
        let resources = state.withLock { state in
            defer { state.resources.removeAll() }
            return Array(state.resources.values)
        }
        for resource in resources {
            let (observers, poller) = resource.state.withLock { state in
                defer { state.observers.removeAll() }
                return (Array(state.observers.values), state.poller)
            }
            poller?.cancel()
            for observer in observers { observer.finish() }
        }
    }
}
