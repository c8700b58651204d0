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
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    ],
    targets: [
        .target(name: "BenchmarkKit"),
        .systemLibrary(name: "CLMDBFloor", providers: [.apt(["liblmdb-dev"])]),
        .executableTarget(
            name: "CacheBenchmarks",
            dependencies: [
                "BenchmarkKit", "CLMDBFloor",
                .product(name: "TechnicalCache", package: "ODataStores"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ]
)

for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.swiftLanguageMode(.v6))
    target.swiftSettings = settings
}
