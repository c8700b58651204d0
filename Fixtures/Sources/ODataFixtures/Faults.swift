import ODataCore
import Synchronization

/// What a fault does to a request it matches.
public enum FaultAction: Sendable, Hashable {
    /// Waits this long, then handles the request normally (added latency). Latency adds up with
    /// one other fault matching the same request.
    case latency(Duration)
    /// Answers with this status and an OData error body; the request is not executed.
    case fail(status: Int, code: String, message: String)
    /// Closes the connection without any response; the request is not executed.
    case dropConnection
    /// Executes the request, then closes the connection without a response (a lost acknowledgement).
    case executeThenDropConnection
    /// Executes the request, then answers with this status and an OData error body instead of its
    /// own answer (a back end that fails after it committed).
    case executeThenFail(status: Int)
    /// Executes the request and sends the full headers (with the real `Content-Length`) but
    /// only this many body bytes, then closes the connection.
    case truncateBody(afterBytes: Int)
    /// Executes the request and sends the body in chunks of this many bytes with a pause
    /// before each chunk after the first.
    case slowBody(chunkSize: Int, interval: Duration)
}

/// A fault: which requests it matches and what it does to them.
///
/// A rule counts the requests it matches from the moment it is added; it fires on the
/// ``firstMatch``-th match and on the ``times`` - 1 matches after it (`times == nil`: on every
/// match from then on).
public struct FaultRule: Sendable, Hashable {
    /// The HTTP method to match (any case); `nil` matches every method.
    public var method: String?
    /// A pattern for the path relative to the service root, percent-decoded, without the query;
    /// `*` matches any run of characters (`Customers*`, `Orders(*)`, `$batch`). `nil` matches
    /// every path.
    public var pathPattern: String?
    /// The 1-based number of the first matching request the fault fires on.
    public var firstMatch: Int
    /// How many matching requests the fault fires on; `nil` for all of them.
    public var times: Int?
    /// What the fault does.
    public var action: FaultAction
    /// Whether the fault matches the requests inside a `$batch` (each member, change-set members
    /// included) instead of HTTP requests. Only `.fail` is possible there: the member gets the
    /// error response, and a change set it belongs to rolls back. The default is `false`.
    public var insideBatch: Bool

    /// Creates a fault.
    /// - Parameters:
    ///   - action: what the fault does.
    ///   - method: the method to match; the default `nil` matches every method.
    ///   - path: the path pattern to match; the default `nil` matches every path.
    ///   - firstMatch: the first matching request to fire on, counting from 1; the default is 1.
    ///   - times: how many matching requests to fire on; the default `nil` fires on all.
    ///   - insideBatch: whether to match `$batch` members instead of HTTP requests; the default is `false`.
    public init(
        _ action: FaultAction, method: String? = nil, path: String? = nil, firstMatch: Int = 1, times: Int? = nil,
        insideBatch: Bool = false
    ) {
        self.action = action
        self.method = method
        self.pathPattern = path
        self.firstMatch = firstMatch
        self.times = times
        self.insideBatch = insideBatch
    }

    func matches(method: String, path: String) -> Bool {
        if let wanted = self.method, wanted != "*", wanted.uppercased() != method.uppercased() { return false }
        if let pattern = pathPattern, !Glob.matches(pattern, path) { return false }
        return true
    }
}

/// The identity of an added fault, for removing it again.
public struct FaultID: Sendable, Hashable, CustomStringConvertible {
    /// The number the fault got when added.
    public let rawValue: Int

    /// The number as text.
    public var description: String { String(rawValue) }
}

/// The faults of one server, changed at any time from a test or the control endpoint.
public final class FaultInjector: Sendable {
    struct Installed: Sendable {
        let id: FaultID
        let rule: FaultRule
        var matched = 0
        var fired = 0
    }

    /// What the HTTP layer does to one request: the summed latency and at most one other action.
    struct Decision: Sendable {
        var latency: Duration = .zero
        var action: FaultAction?
    }

    private struct State {
        var nextID = 1
        var faults: [Installed] = []
    }

    private let state = LockedValue(State())

    init() {}

    /// Adds a fault.
    /// - Parameter rule: the fault.
    /// - Returns: its identity, for ``remove(_:)``.
    /// - Throws: ``FixtureError`` `.invalidArgument` for a `firstMatch` below 1, `times` below 1,
    ///   a failure status outside 100…599, a negative byte count or a chunk size below 1, or an
    ///   action other than `.fail` inside a batch.
    @discardableResult
    public func add(_ rule: FaultRule) throws(FixtureError) -> FaultID {
        guard rule.firstMatch >= 1 else { throw FixtureError(.invalidArgument, "firstMatch must be at least 1") }
        if rule.insideBatch, case .fail = rule.action {} else if rule.insideBatch {
            throw FixtureError(.invalidArgument, "inside a $batch only the fail action is possible")
        }
        if let times = rule.times, times < 1 { throw FixtureError(.invalidArgument, "times must be at least 1 or nil") }
        switch rule.action {
        case .fail(let status, _, _) where !(100...599).contains(status), .executeThenFail(let status) where !(100...599).contains(status):
            throw FixtureError(.invalidArgument, "a failure status must be within 100...599, got \(status)")
        case .truncateBody(let bytes) where bytes < 0:
            throw FixtureError(.invalidArgument, "truncateBody needs a byte count of 0 or more")
        case .slowBody(let chunk, _) where chunk < 1:
            throw FixtureError(.invalidArgument, "slowBody needs a chunk size of at least 1")
        case .latency(let duration) where duration < .zero, .slowBody(_, let duration) where duration < .zero:
            throw FixtureError(.invalidArgument, "a duration cannot be negative")
        default:
            break
        }
        return state.withLock { state in
            let id = FaultID(rawValue: state.nextID)
            state.nextID += 1
            state.faults.append(Installed(id: id, rule: rule))
            return id
        }
    }

    /// Removes one fault.
    /// - Parameter id: the fault's identity.
    /// - Returns: whether it was still installed.
    @discardableResult
    public func remove(_ id: FaultID) -> Bool {
        state.withLock { state in
            guard let index = state.faults.firstIndex(where: { $0.id == id }) else { return false }
            state.faults.remove(at: index)
            return true
        }
    }

    /// Removes every fault.
    public func removeAll() { state.withLock { $0.faults.removeAll() } }

    /// The installed faults with how often each fired.
    public var installed: [(id: FaultID, rule: FaultRule, fired: Int)] {
        state.withLock { $0.faults.map { ($0.id, $0.rule, $0.fired) } }
    }

    /// Decides what happens to a request (an HTTP request, or a `$batch` member when
    /// `insideBatch`); every matching rule counts the match.
    func decide(method: String, path: String, insideBatch: Bool = false) -> Decision {
        state.withLock { state in
            var decision = Decision()
            for index in state.faults.indices
            where state.faults[index].rule.insideBatch == insideBatch
                && state.faults[index].rule.matches(method: method, path: path)
            {
                state.faults[index].matched += 1
                let fault = state.faults[index]
                let afterFirst = fault.matched - fault.rule.firstMatch
                guard afterFirst >= 0, fault.rule.times.map({ afterFirst < $0 }) ?? true else { continue }
                if case .latency(let duration) = fault.rule.action {
                    decision.latency += duration
                    state.faults[index].fired += 1
                } else if decision.action == nil {
                    decision.action = fault.rule.action
                    state.faults[index].fired += 1
                }
            }
            return decision
        }
    }
}

/// `*` wildcard matching.
enum Glob {
    static func matches(_ pattern: String, _ text: String) -> Bool {
        let pattern = Array(pattern.unicodeScalars)
        let text = Array(text.unicodeScalars)
        var p = 0
        var t = 0
        var star: Int?
        var resume = 0
        while t < text.count {
            if p < pattern.count, pattern[p] != "*", pattern[p] == text[t] {
                p += 1
                t += 1
            } else if p < pattern.count, pattern[p] == "*" {
                star = p
                resume = t
                p += 1
            } else if let star {
                p = star + 1
                resume += 1
                t = resume
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }
}
