// A second process on the `active` store's technical cache (issue 18, docs/notes/fleet.md): it opens an
// online store with the same directory, name, partition and key, and reads through it with the soak's
// readers while this process reads, writes, closes and reopens its own store on the same cache. It also
// opens a third store, on a cache of its own, that shares the `active` store's Redis tier: what one
// instance cached reaches the other through Redis, and Redis is killed and restarted mid-run.
import Foundation
import CurlHTTP
import ODataCore
import OnlineStore
import TechnicalCache
#if canImport(Glibc)
import Glibc
#endif

/// The second process: launched at the start of the soak, collected at its end.
struct SharedCacheChild {
    let process: Process
    let output: Pipe

    /// The options of the soak's `active` store (see `soak`): the same cache, partition, key and Redis tier
    /// (`tier`: ``SoakTier/argument``); `name` another name gives another local cache on the same tier.
    static func storeOptions(directory: URL, tier: String, name: String = "active") -> OnlineStoreOptions {
        var options = OnlineStoreOptions()
        options.storeDirectory = directory
        options.storeName = name
        options.cachePartition = "alice"
        options.cacheEncryptionKey = "soak passphrase"
        options.cacheKeyDerivation = .pbkdf2(rounds: 1_000)
        options.transport.totalTimeout = .seconds(5)
        options.secondTier = SoakTier.configuration(tier)
        return options
    }

    /// Starts `executable --shared-cache-child <service root> <directory> <seconds> <seed> <tier>`.
    static func start(executable: String, serviceRoot: String, directory: URL, seconds: Int, seed: UInt64, tier: String) -> SharedCacheChild? {
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--shared-cache-child", serviceRoot, directory.path, String(seconds), String(seed), tier]
        process.standardOutput = output
        do { try process.run() } catch { return nil }
        return SharedCacheChild(process: process, output: output)
    }

    /// Waits for the child (stopping it by its process ID if it overruns `grace`) and adds its figures:
    /// its wrong answers, ETag mismatches and open failures to the must-be-zero columns, a crash or a
    /// missing report to `crashes`.
    func finish(figures: Figures, grace: Duration = .seconds(20)) {
        let deadline = ContinuousClock.now + grace
        while process.isRunning && ContinuousClock.now < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            figures.add("crashes")
        }
        waitForExit(process)
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard let report = text.split(separator: "\n").last(where: { $0.hasPrefix("SHARED-CACHE ") }) else {
            print("odata-soak: the second process on the cache ended without a report: \(text.suffix(500))")
            figures.add("crashes")
            return
        }
        var values: [String: Int] = [:]
        for field in report.split(separator: " ").dropFirst() {
            let parts = field.split(separator: "=")
            if parts.count == 2, let value = Int(parts[1]) { values[String(parts[0])] = value }
        }
        figures.add("wrong cache answers", values["wrong"] ?? 0)
        figures.add("answers whose ETag names another version", values["etag"] ?? 0)
        figures.add("store-open failures", values["openFailures"] ?? 0)
        figures.add("second process: requests issued", values["requests"] ?? 0)
        figures.add("second process: cache answers", (values["cached"] ?? 0) + (values["callbacks"] ?? 0))
        figures.add("second process: hits from Redis", values["redisHits"] ?? 0)
    }
}

/// The child's side: reads through its own store on the shared cache and through one on a cache of its own
/// with the shared Redis tier until the deadline, then prints
/// `SHARED-CACHE requests=… cached=… callbacks=… wrong=… etag=… openFailures=… redisHits=…` and exits.
func runSharedCacheChild(_ arguments: [String]) async -> Never {
    guard arguments.count >= 7, let seconds = Int(arguments[4]), let seed = UInt64(arguments[5]), SoakTier.configuration(arguments[6]) != nil else {
        FileHandle.standardError.write(Data("odata-soak: --shared-cache-child <service root> <directory> <seconds> <seed> <port | cluster:port,…>\n".utf8))
        exit(64)
    }
    let figures = Figures()
    func say(redisHits: Int = 0) -> Never {
        let line = "SHARED-CACHE requests=\(figures.value("requests issued")) cached=\(figures.value("cache answers (unrevalidated)"))"
            + " callbacks=\(figures.value("cache callbacks with an entry")) wrong=\(figures.value("wrong cache answers"))"
            + " etag=\(figures.value("answers whose ETag names another version")) openFailures=\(figures.value("store-open failures"))"
            + " redisHits=\(redisHits)\n"
        FileHandle.standardOutput.write(Data(line.utf8))
        exit(0)
    }
    let store: OnlineODataStore
    let fleetStore: OnlineODataStore
    do {
        let directory = URL(fileURLWithPath: arguments[3])
        store = try OnlineODataStore(serviceRoot: arguments[2], options: SharedCacheChild.storeOptions(directory: directory, tier: arguments[6]))
        fleetStore = try OnlineODataStore(serviceRoot: arguments[2], options: SharedCacheChild.storeOptions(directory: directory, tier: arguments[6], name: "fleet-b"))
        try await store.open()
        try await fleetStore.open()
    } catch {
        FileHandle.standardError.write(Data("odata-soak: the second process's store did not open: \(error)\n".utf8))
        figures.add("store-open failures")
        say()
    }
    let deadline = ContinuousClock.now + .seconds(seconds)
    let budget = RequestBudget(50_000, over: .seconds(seconds), from: .now)
    // Without the writer's acknowledgements this process cannot tell stale from fresh (floor: none);
    // every answer must still be the entity it asked for, with the ETag of its own body.
    let committed = Committed()
    let inFlight = ReadsInFlight()
    await withTaskGroup(of: Void.self) { group in
        for index in 0..<4 {
            group.addTask {
                await reader(stores: [store, fleetStore], seed: seed &* 17 &+ UInt64(index), hot: index >= 2, deadline: deadline,
                             budget: budget, committed: committed, inFlight: inFlight, figures: figures)
            }
        }
    }
    let redisHits = [store, fleetStore].reduce(0) { $0 + ($1.statistics.secondTier?.hits ?? 0) }
    store.close()
    fleetStore.close()
    say(redisHits: redisHits)
}
