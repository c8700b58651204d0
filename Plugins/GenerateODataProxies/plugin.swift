// `swift package generate-odata-proxies --metadata X --output Y [--service-name Z] [--reference R] [--only S,…]`: runs odata-proxygen in the
// package's directory (relative paths are the package's), with the arguments passed through.

import Foundation
import PackagePlugin

/// The command plugin that runs `odata-proxygen`.
@main
struct GenerateODataProxies: CommandPlugin {
    /// Runs the tool with the arguments given to the plugin.
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        var extractor = ArgumentExtractor(arguments)
        let metadata = extractor.extractOption(named: "metadata")
        let output = extractor.extractOption(named: "output")
        let serviceName = extractor.extractOption(named: "service-name")
        guard let metadataValue = metadata.last, let outputValue = output.last else {
            throw PluginFailure(
                "usage: swift package generate-odata-proxies --metadata <file or URL> --output <file.swift> "
                    + "[--service-name NAME] [--reference FILE]... [--only SET,...] [--max-file-bytes N]")
        }
        var toolArguments = ["--metadata", metadataValue, "--output", outputValue]
        if let name = serviceName.last { toolArguments += ["--service-name", name] }
        toolArguments += extractor.remainingArguments

        let tool = try context.tool(named: "odata-proxygen")
        let process = Process()
        process.executableURL = tool.url
        process.arguments = toolArguments
        process.currentDirectoryURL = context.package.directoryURL
        try process.run()
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw PluginFailure("odata-proxygen failed (exit code \(process.terminationStatus))")
        }
    }
}

/// A plugin failure, reported by SwiftPM.
struct PluginFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
