// swift-tools-version: 6.1
import PackageDescription

/// An example service built on ODataStores: a Hummingbird gateway that serves products from an
/// `OnlineODataStore` (active mode, passive fallback), with Prometheus metrics and graceful shutdown.
let package = Package(
    name: "ODataGateway",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "ODataStores", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        .executableTarget(
            name: "ODataGateway",
            dependencies: [
                .product(name: "OnlineStore", package: "ODataStores"),
                .product(name: "ODataTelemetry", package: "ODataStores"),
                .product(name: "ODataCore", package: "ODataStores"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
