// swift-tools-version: 6.1
import PackageDescription

// Benchmarks live in a package of their own so that `swift test` at the root never builds
// their dependencies (AsyncHTTPClient, GRDB, …). Each area is one executable that measures
// our code and its floor or peer side by side, in one run, and prints a comparison table.
let package = Package(
    name: "ODataStoresBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "ODataStores", path: ".."),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        .target(name: "BenchmarkKit"),
        // Callgrind's client requests (zero, dump under a name), for the instruction-count modes of OnlineBenchmarks and
        // OfflineKeyInstructions.
        .target(name: "CCallgrind"),
        .systemLibrary(name: "CLMDBFloor", providers: [.apt(["liblmdb-dev"])]),
        .systemLibrary(name: "CSQLCipherSpike", providers: [.apt(["libsqlcipher-dev"])]),
        .executableTarget(
            name: "CurlBenchmarks",
            dependencies: [
                "BenchmarkKit",
                .product(name: "CurlHTTP", package: "ODataStores"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        .executableTarget(
            name: "CacheBenchmarks",
            dependencies: [
                "BenchmarkKit", "CLMDBFloor",
                .product(name: "TechnicalCache", package: "ODataStores"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .executableTarget(
            name: "SharedCacheBenchmarks",
            dependencies: [
                "BenchmarkKit", .product(name: "TechnicalCache", package: "ODataStores"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .executableTarget(
            name: "OnlineBenchmarks",
            dependencies: [
                "BenchmarkKit", "CCallgrind",
                .product(name: "OnlineStore", package: "ODataStores"),
                .product(name: "TechnicalCache", package: "ODataStores"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ODataCore", package: "ODataStores"),
                .product(name: "CurlHTTP", package: "ODataStores"),
            ]
        ),
        .executableTarget(
            name: "FleetBenchmarks",
            dependencies: [
                "BenchmarkKit",
                .product(name: "OnlineStore", package: "ODataStores"),
                .product(name: "TechnicalCache", package: "ODataStores"),
                .product(name: "ODataCore", package: "ODataStores"),
                .product(name: "Redis", package: "ODataStores"),
                .product(name: "ODataFixtures", package: "ODataStores"),
            ]
        ),
        .executableTarget(
            name: "QueryBenchmarks",
            dependencies: [
                "BenchmarkKit",
                .product(name: "ODataQuery", package: "ODataStores"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .executableTarget(
            name: "TypedBenchmarks",
            dependencies: [
                "BenchmarkKit",
                .product(name: "ODataTyped", package: "ODataStores"),
                .product(name: "ODataCore", package: "ODataStores"),
                .product(name: "NorthwindProxies", package: "ODataStores"),
            ]
        ),
        .executableTarget(
            name: "StorageSpike",
            dependencies: [
                "BenchmarkKit", "CSQLCipherSpike",
                .product(name: "LMDB", package: "ODataStores"),
                .product(name: "TechnicalCache", package: "ODataStores"),
                .product(name: "ODataCore", package: "ODataStores"),
                .product(name: "ODataQuery", package: "ODataStores"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The key lookup through the offline store's three doors, shared by OfflineBenchmarks (wall time) and
        // OfflineKeyInstructions (instructions, under callgrind).
        .target(
            name: "OfflineBenchKit",
            dependencies: [
                "BenchmarkKit", "CCallgrind",
                .product(name: "OfflineStore", package: "ODataStores"),
                .product(name: "ODataTyped", package: "ODataStores"),
                .product(name: "ODataCore", package: "ODataStores"),
            ]
        ),
        .executableTarget(name: "OfflineKeyInstructions", dependencies: ["OfflineBenchKit"]),
        .executableTarget(
            name: "OfflineBenchmarks",
            dependencies: [
                "BenchmarkKit", "OfflineBenchKit",
                .product(name: "OfflineStore", package: "ODataStores"),
                .product(name: "SQLCipher", package: "ODataStores"),
                .product(name: "ODataCore", package: "ODataStores"),
                .product(name: "CurlHTTP", package: "ODataStores"),
            ]
        ),
        // One process, many jobs (issue 45 part 4): 64 concurrent online reads alone and beside an offline download,
        // an upload and a cache fill.
        .executableTarget(
            name: "ProcessBenchmarks",
            dependencies: [
                "BenchmarkKit", "OfflineBenchKit",
                .product(name: "OnlineStore", package: "ODataStores"),
                .product(name: "OfflineStore", package: "ODataStores"),
                .product(name: "TechnicalCache", package: "ODataStores"),
                .product(name: "ODataCore", package: "ODataStores"),
            ]
        ),
        .executableTarget(
            name: "MediaBenchmarks",
            dependencies: [
                "BenchmarkKit",
                .product(name: "OfflineStore", package: "ODataStores"),
                .product(name: "ODataCore", package: "ODataStores"),
                .product(name: "CurlHTTP", package: "ODataStores"),
            ]
        ),
        // The SQLite floor of OfflineBenchmarks, run by it as a child process: GRDB's SQLite and the store's
        // SQLCipher export the same symbols and must not share a process.
        .executableTarget(
            name: "OfflineSQLiteFloor",
            dependencies: [
                "BenchmarkKit",
                .product(name: "ODataCore", package: "ODataStores"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
    ]
)

for target in package.targets where target.type != .system && target.name != "CCallgrind" {
    var settings = target.swiftSettings ?? []
    settings.append(.swiftLanguageMode(.v6))
    target.swiftSettings = settings
}
