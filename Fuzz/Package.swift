// swift-tools-version: 6.1
import PackageDescription

// libFuzzer targets, in a package of their own: each executable's entry point is
// `LLVMFuzzerTestOneInput`, and `main` comes from libFuzzer, so they only link when built with
// `swift build -c debug -sanitize=fuzzer --product <Target>` (see `make fuzz` at the root).
let package = Package(
    name: "ODataStoresFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "ODataStores", path: "..")],
    targets: [
        .executableTarget(
            name: "FuzzJSON",
            dependencies: [
                .product(name: "ODataCore", package: "ODataStores"), .product(name: "ODataTyped", package: "ODataStores"),
                .product(name: "NorthwindProxies", package: "ODataStores"),
            ]
        ),
        .executableTarget(name: "FuzzErrorBody", dependencies: [.product(name: "ODataCore", package: "ODataStores")]),
        .executableTarget(name: "FuzzMultipart", dependencies: [.product(name: "ODataCore", package: "ODataStores")]),
        .executableTarget(name: "FuzzJSONBatch", dependencies: [.product(name: "ODataCore", package: "ODataStores")]),
        .executableTarget(
            name: "FuzzFilter",
            dependencies: [.product(name: "ODataCore", package: "ODataStores"), .product(name: "ODataQuery", package: "ODataStores")]
        ),
    ]
)

for target in package.targets {
    target.swiftSettings = [.swiftLanguageMode(.v6)]
}
