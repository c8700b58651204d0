// odata-fleet-instance: K instances of a fleet in one process — each its own OnlineODataStore with its own cache
// directory and the shared second tier — reading a working set, reporting on standard output one JSON line at a
// time (`FleetInstanceReport`). Tests and FleetBenchmarks run it on the hosts of `NetworkHosts`
// (`ip netns exec <namespace> odata-fleet-instance …`, through `FleetInstanceProcess`) and add the reports up.
import Foundation
import ODataCore
import ODataFixtures
import OnlineStore
import Redis
import TechnicalCache

let usage = """
    usage: odata-fleet-instance --service-root URL --directory DIR --count N [options]
      --service-root URL     the back end
      --directory DIR        where the instances' caches go (one directory each, made here)
      --name NAME            the instances' store names' prefix (default instance)
      --instances K          instances in this process (default 1)
      --redis HOST:PORT      the tier on one Redis server, or
      --cluster HOST:PORT,…  the tier on a Redis Cluster (seed nodes); neither: no tier
      --namespace NS         the tier's namespace (default fleet)
      --retry-ms N           the tier's retry interval after a failure (default: the library's)
      --resource TEMPLATE    the resource path of item i, {i} replaced (default w{i}.json)
      --first N --count N    the working set: items first..<first+count (first defaults to 0)
      --rounds R             rounds over the working set, each instance in its own random order (default 1)
      --max-age SECONDS      the stores' maxAge (default none)
      --passive              passive reads (the cache alone)
      --derivation-rounds N  PBKDF2 rounds of the cache key derivation (default the library's)
      --wait-for-go          after the ready line, start at the next line of standard input
      --fresh                rounds of one new instance each (an empty cache), in order, one report line a round,
                             until standard input closes (or --rounds rounds)
    The fleet's passphrase comes from the environment: ODATA_FLEET_PASSPHRASE.
    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("odata-fleet-instance: \(message)\n\(usage)\n".utf8))
    exit(2)
}

/// What the command line asks for.
struct Plan {
    var serviceRoot = ""
    var directory = ""
    var name = "instance"
    var instances = 1
    var redis: RedisNodeAddress?
    var cluster: [RedisNodeAddress] = []
    var namespace = "fleet"
    var retry: Duration?
    var resource = "w{i}.json"
    var first = 0
    var count = 0
    var rounds: Int?
    var maxAge: Duration?
    var passive = false
    var derivation = KeyDerivation.standard
    var waitForGo = false
    var fresh = false
    var passphrase = ""

    var items: [Int] { Array(first..<first + count) }

    func path(_ item: Int) -> String { resource.replacingOccurrences(of: "{i}", with: String(item)) }

    func options(name: String) -> OnlineStoreOptions {
        var options = OnlineStoreOptions()
        options.storeDirectory = URL(fileURLWithPath: directory, isDirectory: true)
        options.storeName = name
        options.cacheEncryptionKey = passphrase
        options.cacheKeyDerivation = derivation
        options.cacheSizeLimit = 256 << 20
        options.maxAge = maxAge
        if let redis {
            options.secondTier = RedisTierConfiguration(host: redis.host, port: redis.port, namespace: namespace)
        } else if !cluster.isEmpty {
            options.secondTier = RedisTierConfiguration(cluster: cluster, namespace: namespace)
        }
        if let retry { options.secondTier?.redis.retryInterval = retry }
        return options
    }
}

func node(_ text: Substring) -> RedisNodeAddress {
    guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]) else { fail("HOST:PORT expected, got '\(text)'") }
    return RedisNodeAddress(host: String(text[..<colon]), port: port)
}

func parse() -> Plan {
    var plan = Plan()
    var arguments = CommandLine.arguments.dropFirst()
    while let argument = arguments.popFirst() {
        func value() -> String {
            guard let value = arguments.popFirst() else { fail("\(argument) needs a value") }
            return value
        }
        func number() -> Int {
            let text = value()
            guard let number = Int(text), number >= 0 else { fail("\(argument) needs a number, got '\(text)'") }
            return number
        }
        switch argument {
        case "--service-root": plan.serviceRoot = value()
        case "--directory": plan.directory = value()
        case "--name": plan.name = value()
        case "--instances": plan.instances = max(1, number())
        case "--redis": plan.redis = node(Substring(value()))
        case "--cluster": plan.cluster = value().split(separator: ",").map(node)
        case "--namespace": plan.namespace = value()
        case "--retry-ms": plan.retry = .milliseconds(number())
        case "--resource": plan.resource = value()
        case "--first": plan.first = number()
        case "--count": plan.count = number()
        case "--rounds": plan.rounds = max(1, number())
        case "--max-age": plan.maxAge = .seconds(number())
        case "--passive": plan.passive = true
        case "--derivation-rounds": plan.derivation = .pbkdf2(rounds: max(1, number()))
        case "--wait-for-go": plan.waitForGo = true
        case "--fresh": plan.fresh = true
        case "--help", "-h":
            print(usage)
            exit(0)
        default: fail("unknown argument '\(argument)'")
        }
    }
    guard !plan.serviceRoot.isEmpty, !plan.directory.isEmpty, plan.count > 0 else { fail("--service-root, --directory and --count are needed") }
    guard let passphrase = ProcessInfo.processInfo.environment["ODATA_FLEET_PASSPHRASE"], !passphrase.isEmpty else {
        fail("ODATA_FLEET_PASSPHRASE is not set")
    }
    plan.passphrase = passphrase
    return plan
}

func emit(_ report: FleetInstanceReport) {
    do {
        FileHandle.standardOutput.write(try JSONEncoder().encode(report) + Data("\n".utf8))
    } catch {
        fail("a report could not be encoded: \(error)")
    }
}

func open(_ plan: Plan, name: String) async -> OnlineODataStore {
    do {
        let store = try OnlineODataStore(serviceRoot: plan.serviceRoot, options: plan.options(name: name))
        try await store.open()
        if plan.passive { try store.setMode(.passive) }
        return store
    } catch {
        fail("store \(name) did not open: \(error)")
    }
}

/// The store's counters after its reads (its tier writes waited for), added to `report`.
func count(_ store: OnlineODataStore, into report: inout FleetInstanceReport) {
    store.waitForSecondTier()
    let statistics = store.statistics
    report.networkRequests += statistics.networkRequests
    if let tier = statistics.secondTier {
        report.tierHits += tier.hits
        report.tierMisses += tier.misses
        report.tierWrites += tier.writes
        report.tierFailures += tier.failures
        report.tierSkippedLookups += tier.skippedLookups
    }
}

/// One pass over `items` through `store`: every read timed, a read during which the tier's hit counter moved
/// counted as a tier hit.
func read(_ items: [Int], through store: OnlineODataStore, plan: Plan, into report: inout FleetInstanceReport) async {
    for item in items {
        let hitsBefore = store.statistics.secondTier?.hits ?? 0
        let start = FleetInstanceReport.now()
        do {
            if try await store.response(for: .get(plan.path(item))) != nil { report.found += 1 }
        } catch {
            report.errors += 1
            if report.errorSamples.count < 5 { report.errorSamples.append("\(plan.path(item)): \(error)") }
        }
        let elapsed = Double(FleetInstanceReport.now() - start)
        report.reads += 1
        report.latencies?.append(elapsed)
        if (store.statistics.secondTier?.hits ?? 0) > hitsBefore { report.tierHitLatencies?.append(elapsed) }
    }
}

/// K instances, each `rounds` passes over the working set in its own random order, concurrently.
func runInstances(_ plan: Plan) async {
    var stores: [OnlineODataStore] = []
    for index in 0..<plan.instances { stores.append(await open(plan, name: "\(plan.name)-\(index)")) }
    emit(FleetInstanceReport(kind: .ready))
    if plan.waitForGo, readLine() == nil { fail("standard input closed before the start") }
    let rounds = plan.rounds ?? 1
    var total = await withTaskGroup(of: FleetInstanceReport.self) { group in
        for store in stores {
            group.addTask {
                var report = FleetInstanceReport(kind: .final)
                report.latencies = []
                report.tierHitLatencies = []
                report.started = FleetInstanceReport.now()
                var generator = SystemRandomNumberGenerator()
                for _ in 0..<rounds { await read(plan.items.shuffled(using: &generator), through: store, plan: plan, into: &report) }
                report.ended = FleetInstanceReport.now()
                return report
            }
        }
        var total = FleetInstanceReport(kind: .final)
        for await part in group { total.add(part) }
        return total
    }
    total.instances = stores.count
    for store in stores { count(store, into: &total) }
    // The report goes out before the stores close: a close writes what the caches still hold for their writers, and
    // a caller may end the process meanwhile (WriteBehindKillTests kills it there).
    emit(total)
    for store in stores { store.close() }
}

/// Rounds of one new instance each (an empty cache: every read a local miss), until standard input closes.
func runFresh(_ plan: Plan) async {
    let closed = LockedValue(false)
    Thread {
        while readLine() != nil {}
        closed.withLock { $0 = true }
    }.start()
    emit(FleetInstanceReport(kind: .ready))
    var total = FleetInstanceReport(kind: .final)
    var round = 0
    while !closed.withLock({ $0 }) && round < plan.rounds ?? .max {
        let name = "\(plan.name)-fresh-\(round)"
        let store = await open(plan, name: name)
        var report = FleetInstanceReport(kind: .round)
        report.instances = 1
        report.started = FleetInstanceReport.now()
        await read(plan.items, through: store, plan: plan, into: &report)
        report.ended = FleetInstanceReport.now()
        count(store, into: &report)
        store.close()
        do {
            for file in try FileManager.default.contentsOfDirectory(atPath: plan.directory) where file.hasPrefix(name + ".") {
                try FileManager.default.removeItem(atPath: plan.directory + "/" + file)
            }
        } catch {
            fail("the cache of \(name) could not be removed: \(error)")
        }
        emit(report)
        var summed = report
        summed.kind = .final
        total.add(summed)
        round += 1
    }
    emit(total)
}

let plan = parse()
do {
    try FileManager.default.createDirectory(atPath: plan.directory, withIntermediateDirectories: true)
} catch {
    fail("\(plan.directory) could not be made: \(error)")
}
if plan.fresh { await runFresh(plan) } else { await runInstances(plan) }
