import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Wall-clock samples of one measured operation, with the statistics the tables print.
public struct Samples: Sendable {
    /// The name printed in the table.
    public let name: String
    /// Nanoseconds per operation, one entry per sample, sorted ascending.
    public let nanoseconds: [Double]

    /// Creates samples from unsorted nanosecond timings.
    public init(name: String, nanoseconds: [Double]) {
        self.name = name
        self.nanoseconds = nanoseconds.sorted()
    }

    /// The value at a percentile (0…100).
    public func percentile(_ p: Double) -> Double {
        guard !nanoseconds.isEmpty else { return .nan }
        let rank = Int((p / 100 * Double(nanoseconds.count - 1)).rounded())
        return nanoseconds[min(max(rank, 0), nanoseconds.count - 1)]
    }

    /// The median.
    public var median: Double { percentile(50) }
}

/// Measures `body` `iterations` times after `warmup` untimed runs; each sample is one call.
public func measure(_ name: String, warmup: Int = 10, iterations: Int, _ body: () throws -> Void) rethrows -> Samples {
    for _ in 0..<warmup { try body() }
    var timings: [Double] = []
    timings.reserveCapacity(iterations)
    for _ in 0..<iterations {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        timings.append(Double(DispatchTime.now().uptimeNanoseconds - start))
    }
    return Samples(name: name, nanoseconds: timings)
}

/// Measures an async `body` `iterations` times after `warmup` untimed runs.
public func measureAsync(_ name: String, warmup: Int = 10, iterations: Int, _ body: () async throws -> Void) async rethrows -> Samples {
    for _ in 0..<warmup { try await body() }
    var timings: [Double] = []
    timings.reserveCapacity(iterations)
    for _ in 0..<iterations {
        let start = DispatchTime.now().uptimeNanoseconds
        try await body()
        timings.append(Double(DispatchTime.now().uptimeNanoseconds - start))
    }
    return Samples(name: name, nanoseconds: timings)
}

/// Formats nanoseconds as a short human duration (ns, µs, ms, s).
public func formatDuration(_ nanoseconds: Double) -> String {
    switch nanoseconds {
    case ..<1_000: return String(format: "%.0f ns", nanoseconds)
    case ..<1_000_000: return String(format: "%.1f µs", nanoseconds / 1_000)
    case ..<1_000_000_000: return String(format: "%.2f ms", nanoseconds / 1_000_000)
    default: return String(format: "%.2f s", nanoseconds / 1_000_000_000)
    }
}

/// Prints a Markdown table (so it can be pasted into BENCHMARKS.md as it is).
public func printTable(title: String, header: [String], rows: [[String]]) {
    print("\n### \(title)\n")
    print("| " + header.joined(separator: " | ") + " |")
    print("|" + header.map { _ in "---" }.joined(separator: "|") + "|")
    for row in rows { print("| " + row.joined(separator: " | ") + " |") }
}

/// A one-line description of this machine for the report: cores, CPU model, kernel.
public func machineDescription() -> String {
    let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
        .split(separator: "\n").first { $0.hasPrefix("model name") }?
        .split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
    return "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(cpu), \(ProcessInfo.processInfo.operatingSystemVersionString)"
}

/// The resident set size of this process in bytes (from `/proc/self/statm`), for memory comparisons.
public func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}
