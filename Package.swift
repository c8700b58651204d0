// swift-tools-version: 6.1
import PackageDescription

/// The products this package offers; every library is usable on its own.
let package = Package(
    name: "ODataStores",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ODataCore", targets: ["ODataCore"]),
        .library(name: "CurlHTTP", targets: ["CurlHTTP"]),
        .library(name: "LMDB", targets: ["LMDB"]),
        .library(name: "SQLCipher", targets: ["SQLCipher"]),
        .library(name: "Redis", targets: ["Redis"]),
        .library(name: "ODataKeys", targets: ["ODataKeys"]),
        .library(name: "TechnicalCache", targets: ["TechnicalCache"]),
        .library(name: "ODataQuery", targets: ["ODataQuery"]),
        .library(name: "ODataMetadata", targets: ["ODataMetadata"]),
        .library(name: "ODataSession", targets: ["ODataSession"]),
        .library(name: "OnlineStore", targets: ["OnlineStore"]),
        .library(name: "OfflineStore", targets: ["OfflineStore"]),
        .library(name: "ODataTyped", targets: ["ODataTyped"]),
        .library(name: "ODataTelemetry", targets: ["ODataTelemetry"]),
        .library(name: "ODataTesting", targets: ["ODataTesting"]),
        // The fixture producer's generated proxies: an example of odata-proxygen's output, used by the benchmarks.
        .library(name: "NorthwindProxies", targets: ["NorthwindProxies"]),
        // The test servers (fixture producer, redis-server, a Redis Cluster): for the benchmarks, not for clients.
        .library(name: "ODataFixtures", targets: ["ODataFixtures"]),
        .executable(name: "odata-demo", targets: ["odata-demo"]),
        .executable(name: "ilodata", targets: ["ilodata"]),
        .executable(name: "odata-fixture-server", targets: ["odata-fixture-server"]),
        .executable(name: "odata-proxygen", targets: ["odata-proxygen"]),
        .plugin(name: "GenerateODataProxies", targets: ["GenerateODataProxies"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // C bridges: only these modules' Swift wrappers (CurlHTTP, LMDB, SQLCipher, Redis) import C.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CLMDB",
            providers: [.apt(["liblmdb-dev"])]
        ),
        // Debian's SQLCipher 3.4.1: the offline store's storage engine (docs/notes/storage.md).
        .systemLibrary(
            name: "CSQLCipher",
            pkgConfig: "sqlcipher",
            providers: [.apt(["libsqlcipher-dev", "libssl-dev"])]
        ),
        // glibc's <malloc.h> (mallinfo2), for the soak's heap figures.
        .systemLibrary(name: "CMalloc"),
        .systemLibrary(
            name: "CHiredis",
            providers: [.apt(["libhiredis-dev"])]
        ),

        // Libraries, top of the dependency graph first.
        .target(
            name: "ODataCore",
            dependencies: [.product(name: "HTTPTypes", package: "swift-http-types")]
        ),
        .target(
            name: "CurlHTTP",
            dependencies: ["CCurl", "ODataCore", .product(name: "HTTPTypes", package: "swift-http-types")]
        ),
        .target(name: "LMDB", dependencies: ["CLMDB"]),
        .target(name: "SQLCipher", dependencies: ["CSQLCipher"]),
        // A Redis client over hiredis: the technical cache's optional shared second tier.
        .target(name: "Redis", dependencies: ["CHiredis", "ODataCore"]),
        // The key kit both stores encrypt with: keys, passphrase derivation, key envelopes, key stores.
        .target(
            name: "ODataKeys",
            dependencies: [.product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto")]
        ),
        .target(
            name: "TechnicalCache",
            dependencies: [
                "LMDB", "ODataCore", "Redis", "ODataKeys", .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"), .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .target(name: "ODataQuery", dependencies: ["ODataCore"]),
        // The one reader of `$metadata` (CSDL V4 and V2): the offline store, the proxy generator and the fixture read through it.
        .target(name: "ODataMetadata", dependencies: ["ODataCore"]),
        // The session with a back end, below both stores: authentication, CSRF tokens, cookies, SAP dialect.
        .target(
            name: "ODataSession",
            dependencies: ["ODataCore", .product(name: "HTTPTypes", package: "swift-http-types")]
        ),
        // Logging, metrics and tracing of both stores and their transport (swift-log, swift-metrics, swift-distributed-tracing).
        .target(
            name: "ODataTelemetry",
            dependencies: [
                "ODataCore", .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"), .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "OnlineStore",
            dependencies: [
                "ODataCore", "CurlHTTP", "ODataSession", "TechnicalCache", "ODataTelemetry",
                .product(name: "Logging", package: "swift-log"), .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Typed access over either store: DataService, DataQuery, and the runtime of generated proxy types.
        .target(
            name: "ODataTyped",
            dependencies: ["ODataCore", "ODataQuery", .product(name: "HTTPTypes", package: "swift-http-types")]
        ),
        .target(
            name: "OfflineStore",
            dependencies: [
                "ODataCore", "CurlHTTP", "ODataSession", "SQLCipher", "ODataKeys", "ODataQuery", "ODataTelemetry", "ODataTyped",
                "ODataMetadata",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"), .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // For users' tests: a scripted, recording HTTPTransport and either store opened on it in a temporary directory.
        .target(
            name: "ODataTesting",
            dependencies: ["ODataCore", "ODataSession", "CurlHTTP", "OnlineStore", "OfflineStore", "TechnicalCache", .product(name: "HTTPTypes", package: "swift-http-types")]
        ),

        // The fixture producer: a non-product library for tests plus its executable.
        .target(
            name: "ODataFixtures",
            dependencies: [
                "ODataCore", "ODataQuery", "ODataMetadata", "CurlHTTP", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Fixtures",
            exclude: ["Sources/odata-fixture-server"],
            sources: ["Sources/ODataFixtures"],
            resources: [.copy("Data")]
        ),
        .executableTarget(
            name: "odata-fixture-server",
            dependencies: ["ODataFixtures"],
            path: "Fixtures/Sources/odata-fixture-server"
        ),

        // Executables.
        .executableTarget(name: "odata-demo", dependencies: ["OnlineStore", "ODataFixtures", "CurlHTTP", "TechnicalCache", "ODataCore"]),
        .executableTarget(
            name: "ilodata",
            dependencies: [
                "OfflineStore", "ODataCore", "ODataSession", "TechnicalCache",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // A fleet's instances in a process of their own, for tests and FleetBenchmarks on the hosts of NetworkHosts.
        .executableTarget(name: "odata-fleet-instance", dependencies: ["OnlineStore", "TechnicalCache", "Redis", "ODataCore", "ODataFixtures"]),
        .executableTarget(name: "odata-soak", dependencies: ["OnlineStore", "OfflineStore", "ODataSession", "ODataTyped", "CurlHTTP", "ODataCore", "ODataFixtures", "TechnicalCache", "Redis", "CSQLCipher", "CMalloc", .product(name: "HTTPTypes", package: "swift-http-types")]),

        // The proxy generator: CSDL $metadata (V4, V2) to Swift source for ODataTyped; its tool and command plugin.
        .target(name: "ODataProxyGenerator", dependencies: ["ODataMetadata", "ODataCore"]),
        .executableTarget(
            name: "odata-proxygen",
            dependencies: ["ODataProxyGenerator", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .plugin(
            name: "GenerateODataProxies",
            capability: .command(
                intent: .custom(
                    verb: "generate-odata-proxies",
                    description: "Generates typed Swift proxies for ODataTyped from an OData $metadata document"
                ),
                permissions: [.writeToPackageDirectory(reason: "Writes the generated Swift proxy file into the package")]
            ),
            dependencies: ["odata-proxygen"]
        ),

        // Proxies generated by odata-proxygen from Proxies/Metadata (regenerated and diffed by CI), for the typed tests.
        .target(name: "NorthwindProxies", dependencies: ["ODataTyped", "ODataCore"], path: "Proxies/Northwind"),
        .target(name: "GWSampleBasicProxies", dependencies: ["ODataTyped", "ODataCore"], path: "Proxies/GWSampleBasic"),
        .target(name: "APIProductProxies", dependencies: ["ODataTyped", "ODataCore"], path: "Proxies/APIProduct"),
        .target(name: "RealServicesProxies", dependencies: ["ODataTyped", "ODataCore"], path: "Proxies/RealServices"),

        // Tests: one target per module.
        .testTarget(name: "ODataCoreTests", dependencies: ["ODataCore"]),
        .testTarget(name: "CurlHTTPTests", dependencies: ["CurlHTTP", "ODataCore", "ODataFixtures", .product(name: "HTTPTypes", package: "swift-http-types")]),
        .testTarget(name: "LMDBTests", dependencies: ["LMDB"]),
        .testTarget(name: "SQLCipherTests", dependencies: ["SQLCipher"]),
        // The Redis client and the cache's Redis tier, against real redis-servers started by the tests.
        .testTarget(
            name: "RedisTests",
            dependencies: ["Redis", "TechnicalCache", "OnlineStore", "ODataFixtures", "ODataCore",
                           .product(name: "Logging", package: "swift-log"), .product(name: "InMemoryLogging", package: "swift-log"),
                           .product(name: "HTTPTypes", package: "swift-http-types")]
        ),
        .testTarget(
            name: "TechnicalCacheTests",
            dependencies: ["TechnicalCache", "LMDB", "ODataCore", "ODataFixtures", .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "HTTPTypes", package: "swift-http-types")]
        ),
        // The OASIS OData ABNF test cases (unchanged copy, with their licence) drive ABNFConformanceTests.
        .testTarget(
            name: "ODataQueryTests",
            dependencies: ["ODataQuery"],
            resources: [.copy("ABNF/odata-abnf-testcases.yaml"), .copy("ABNF/LICENSE.md")]
        ),
        .testTarget(
            name: "ODataSessionTests",
            dependencies: ["ODataSession", "OnlineStore", "OfflineStore", "ODataFixtures", "CurlHTTP", "ODataCore", "TechnicalCache", "ODataTesting",
                           .product(name: "HTTPTypes", package: "swift-http-types")]
        ),
        .testTarget(name: "OnlineStoreTests", dependencies: ["OnlineStore", "ODataTesting", "ODataFixtures", "CurlHTTP"]),
        .testTarget(name: "OfflineStoreTests", dependencies: ["OfflineStore", "CurlHTTP", "ODataFixtures", "ODataTyped", "SQLCipher", "ODataTesting"]),
        .testTarget(
            name: "ODataTestingTests",
            dependencies: ["ODataTesting", "OnlineStore", "OfflineStore", "CurlHTTP", "ODataCore", .product(name: "HTTPTypes", package: "swift-http-types")]
        ),
        .testTarget(name: "ODataFixturesTests", dependencies: ["ODataFixtures", "CurlHTTP"]),
        .testTarget(name: "GuideTests", dependencies: ["OnlineStore", "CurlHTTP", "OfflineStore", "ODataTesting", "ODataTyped", "NorthwindProxies", "ODataSession", "TechnicalCache", "ODataKeys", "Redis", "ODataCore", "ODataTelemetry", .product(name: "HTTPTypes", package: "swift-http-types"), .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "ProofTests", dependencies: ["ODataCore", "ODataQuery", "OnlineStore", "TechnicalCache", "ODataFixtures", .product(name: "HTTPTypes", package: "swift-http-types")]),
        .testTarget(
            name: "ODataTypedTests",
            dependencies: ["ODataTyped", "ODataCore", "ODataQuery", "OnlineStore", "OfflineStore", "ODataFixtures",
                           "NorthwindProxies", "GWSampleBasicProxies", "APIProductProxies", "RealServicesProxies", "TechnicalCache", "ODataTesting",
                           .product(name: "HTTPTypes", package: "swift-http-types")]
        ),
        // Both stores as ServiceLifecycle services in a ServiceGroup: graceful shutdown under load.
        .testTarget(
            name: "ODataServiceTests",
            dependencies: [
                "OnlineStore", "OfflineStore", "ODataFixtures", "ODataCore", "TechnicalCache", "ODataTesting",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "ODataProxyGeneratorTests", dependencies: ["ODataProxyGenerator", "ODataMetadata", "ODataCore"]),
        .testTarget(name: "ODataMetadataTests", dependencies: ["ODataMetadata", "ODataCore"]),
        // ilodata's own parsing (its typed requests) and progress printer, without a store; OfflineStoreTests runs the built binary.
        .testTarget(name: "ilodataTests", dependencies: ["ilodata", "ODataCore", "OfflineStore", .product(name: "HTTPTypes", package: "swift-http-types")]),
        .testTarget(
            name: "ODataTelemetryTests",
            dependencies: [
                "ODataTelemetry", "OnlineStore", "OfflineStore", "ODataFixtures", "ODataCore", "CurlHTTP", "ODataSession", "TechnicalCache", "ODataTesting",
                .product(name: "Logging", package: "swift-log"), .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "CoreMetrics", package: "swift-metrics"), .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
    ]
)

// One settings loop for all targets: Swift 6 language mode (strict concurrency) everywhere.
for target in package.targets where target.type != .system && target.type != .plugin {
    var settings = target.swiftSettings ?? []
    settings.append(.swiftLanguageMode(.v6))
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    target.swiftSettings = settings
}
