import HTTPTypes
import ODataCore

/// The HTTP face of the control API under `/$fixture/`, for the executable and for clients
/// in other processes:
///
/// - `GET /$fixture/faults` lists faults; `POST /$fixture/faults` adds one (JSON below) and answers
///   `201 {"id": N}`; `DELETE /$fixture/faults` removes all; `DELETE /$fixture/faults/N` removes one.
/// - `GET /$fixture/counters` lists counts; `DELETE /$fixture/counters` forgets them.
/// - `GET /$fixture/data/<EntitySet>` answers `{"value": [...]}`: every row of the set as the producer
///   holds it, unpaged and without annotations (what ``FixtureServer/read(_:)`` gives in process).
/// - `POST /$fixture/reset` restores the start data and forgets counters, faults and stored
///   repeatable responses; `POST /$fixture/expire-delta-tokens` expires every delta token.
///
/// A fault is `{"action": "latency" | "fail" | "drop" | "executeThenDrop" | "truncate" | "slowBody",
/// "method": "GET", "path": "Customers*", "firstMatch": 1, "times": 1, "milliseconds": 200,
/// "status": 503, "code": "Busy", "message": "…", "bytes": 100, "chunkSize": 64,
/// "intervalMilliseconds": 50, "insideBatch": false}`; only `action` and the action's own members
/// are required.
struct ControlEndpoint {
    let service: FixtureService
    let faults: FaultInjector

    func handle(method: String, path: String, body: [UInt8]) -> OutgoingResponse {
        do {
            switch (method, path) {
            case ("GET", "faults"):
                let list: [JSONValue] = faults.installed.map { fault in
                    var object = Self.json(fault.rule)
                    object["id"] = .int(Int64(fault.id.rawValue))
                    object["fired"] = .int(Int64(fault.fired))
                    return .object(object)
                }
                return .json(200, ["value": .array(list)])
            case ("POST", "faults"):
                let rule = try Self.rule(from: body)
                let id = try faults.add(rule)
                return .json(201, ["id": .int(Int64(id.rawValue))])
            case ("DELETE", "faults"):
                faults.removeAll()
                return OutgoingResponse(status: 204)
            case ("DELETE", _) where path.hasPrefix("faults/"):
                guard let number = Int(path.dropFirst("faults/".count)) else {
                    throw ServiceFailure.badRequest("expected /$fixture/faults/<id>")
                }
                guard faults.remove(FaultID(rawValue: number)) else { throw ServiceFailure.notFound("no fault \(number)") }
                return OutgoingResponse(status: 204)
            case ("GET", "counters"):
                let list: [JSONValue] = service.counters.all.map { entry in
                    [
                        "method": .string(entry.method), "path": .string(entry.path),
                        "received": .int(Int64(entry.received)), "executed": .int(Int64(entry.executed)),
                        "replayed": .int(Int64(entry.replayed)), "faulted": .int(Int64(entry.faulted)),
                    ]
                }
                return .json(200, ["value": .array(list)])
            case ("DELETE", "counters"):
                service.counters.reset()
                return OutgoingResponse(status: 204)
            case ("GET", _) where path.hasPrefix("data/"):
                let set = String(path.dropFirst("data/".count))
                let rows = try service.withData { data in try data.entities(in: set) }
                return .json(200, ["value": .array(rows.map(JSONValue.object))])
            case ("POST", "reset"):
                service.resetData()
                service.counters.reset()
                service.forgetRepeatableRequests()
                faults.removeAll()
                return OutgoingResponse(status: 204)
            case ("POST", "expire-delta-tokens"):
                service.expireDeltaTokens()
                return OutgoingResponse(status: 204)
            default:
                throw ServiceFailure.notFound("no control operation \(method) /$fixture/\(path)")
            }
        } catch let failure as ServiceFailure {
            return .error(failure)
        } catch let error as FixtureError {
            return .error(ServiceFailure.badRequest(error.message))
        } catch {
            return .error(ServiceFailure(500, "InternalError", "\(error)"))
        }
    }

    static func rule(from body: [UInt8]) throws -> FaultRule {
        let value: JSONValue
        do { value = try JSON.parse(body) } catch { throw ServiceFailure.badRequest("the fault is not JSON: \(error)") }
        guard let object = value.objectValue else { throw ServiceFailure.badRequest("the fault must be a JSON object") }
        func int(_ name: String) throws -> Int? {
            guard let member = object[name], !member.isNull else { return nil }
            guard let number = member.intValue else { throw ServiceFailure.badRequest("\(name) must be an integer") }
            return Int(number)
        }
        func required(_ name: String) throws -> Int {
            guard let number = try int(name) else { throw ServiceFailure.badRequest("this fault needs \(name)") }
            return number
        }
        let action: FaultAction
        switch object["action"]?.stringValue {
        case "latency":
            action = .latency(.milliseconds(try required("milliseconds")))
        case "fail":
            action = .fail(
                status: try required("status"), code: object["code"]?.stringValue ?? "InjectedFault",
                message: object["message"]?.stringValue ?? "a fault injected by the fixture server")
        case "drop":
            action = .dropConnection
        case "executeThenDrop":
            action = .executeThenDropConnection
        case "executeThenFail":
            action = .executeThenFail(status: try required("status"))
        case "truncate":
            action = .truncateBody(afterBytes: try required("bytes"))
        case "slowBody":
            action = .slowBody(chunkSize: try required("chunkSize"), interval: .milliseconds(try required("intervalMilliseconds")))
        case let other:
            throw ServiceFailure.badRequest(
                "action must be latency, fail, drop, executeThenDrop, executeThenFail, truncate or slowBody, got \(other ?? "nothing")")
        }
        return FaultRule(
            action, method: object["method"]?.stringValue, path: object["path"]?.stringValue,
            firstMatch: try int("firstMatch") ?? 1, times: try int("times"),
            insideBatch: object["insideBatch"]?.boolValue ?? false)
    }

    static func json(_ rule: FaultRule) -> JSONObject {
        var object = JSONObject()
        switch rule.action {
        case .latency(let duration):
            object["action"] = "latency"
            object["milliseconds"] = .int(duration.milliseconds)
        case .fail(let status, let code, let message):
            object["action"] = "fail"
            object["status"] = .int(Int64(status))
            object["code"] = .string(code)
            object["message"] = .string(message)
        case .dropConnection:
            object["action"] = "drop"
        case .executeThenDropConnection:
            object["action"] = "executeThenDrop"
        case .executeThenFail(let status):
            object["action"] = "executeThenFail"
            object["status"] = .int(Int64(status))
        case .truncateBody(let bytes):
            object["action"] = "truncate"
            object["bytes"] = .int(Int64(bytes))
        case .slowBody(let chunk, let interval):
            object["action"] = "slowBody"
            object["chunkSize"] = .int(Int64(chunk))
            object["intervalMilliseconds"] = .int(interval.milliseconds)
        }
        object["method"] = rule.method.map(JSONValue.string) ?? .null
        object["path"] = rule.pathPattern.map(JSONValue.string) ?? .null
        object["firstMatch"] = .int(Int64(rule.firstMatch))
        object["times"] = rule.times.map { .int(Int64($0)) } ?? .null
        object["insideBatch"] = .bool(rule.insideBatch)
        return object
    }
}

extension Duration {
    /// Whole milliseconds.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
