import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A thread of its own, at the default priority, that sleeps 1 ms again and again and records each time it woke
/// late (jHiccup's idea): a stall it sees is one of the machine (the scheduler, the hypervisor, the kernel), not of the
/// code measured beside it, which it shares nothing with but the process. A benchmark compares its slow moments with
/// the meter's: a read that stalled while the meter stalled too waited for the machine.
public final class HiccupMeter: Sendable {
    /// One late wake-up: when the sleep began (`DispatchTime` nanoseconds) and how much later than 1 ms it woke.
    public struct Hiccup: Sendable {
        public let at: UInt64
        public let late: Double
    }

    private let threshold: Double
    private let state = Mutex<(hiccups: [Hiccup], stopped: Bool)>(([], false))

    /// Starts the meter; wake-ups later than `threshold` nanoseconds (default 2 ms) are recorded.
    public init(threshold: Double = 2e6) {
        self.threshold = threshold
        let thread = Thread { [self] in
            var request = timespec(tv_sec: 0, tv_nsec: 1_000_000)
            while !state.withLock({ $0.stopped }) {
                let start = DispatchTime.now().uptimeNanoseconds
                nanosleep(&request, nil)
                let late = Double(DispatchTime.now().uptimeNanoseconds - start) - 1e6
                if late > threshold { state.withLock { $0.hiccups.append(Hiccup(at: start, late: late)) } }
            }
        }
        thread.name = "hiccup meter"
        thread.start()
    }

    /// The hiccups that began in `from..<to` (`DispatchTime` nanoseconds).
    public func hiccups(from: UInt64, to: UInt64) -> [Hiccup] {
        state.withLock { $0.hiccups.filter { $0.at >= from && $0.at < to } }
    }

    /// Stops the thread at its next wake-up.
    public func stop() { state.withLock { $0.stopped = true } }
}

/// A file of `/proc` that could not be read or did not say what a benchmark reads from it.
public struct ProcFileError: Error, CustomStringConvertible {
    public let path: String
    public var description: String { "\(path) could not be read or has no figure the benchmark reads" }
}

/// Reads a file of `/proc` whole.
func readProcFile(_ path: String) throws -> String {
    do { return try String(contentsOfFile: path, encoding: .utf8) } catch { throw ProcFileError(path: path) }
}

/// The whole machine's pages that are dirty and under writeback (`nr_dirty`, `nr_writeback` of `/proc/vmstat`, 4 KiB
/// pages): what the kernel still has to write.
public func dirtyPages() throws -> (dirty: Int, writeback: Int) {
    var dirty: Int?, writeback: Int?
    for line in try readProcFile("/proc/vmstat").split(separator: "\n") {
        let parts = line.split(separator: " ")
        guard parts.count == 2 else { continue }
        if parts[0] == "nr_dirty" { dirty = Int(parts[1]) }
        if parts[0] == "nr_writeback" { writeback = Int(parts[1]) }
    }
    guard let dirty, let writeback else { throw ProcFileError(path: "/proc/vmstat") }
    return (dirty, writeback)
}

/// The machine's CPU time so far by kind, from `/proc/stat`'s first line, in clock ticks of all CPUs together.
public struct MachineCPU: Sendable {
    /// Everything the CPUs did or waited in (user, nice, system, idle, iowait, irq, softirq, steal).
    public let total: Int
    /// The time the hypervisor ran something else while this machine's virtual CPUs wanted to run.
    public let steal: Int

    /// Now.
    public static func now() throws -> MachineCPU {
        let line = try readProcFile("/proc/stat").split(separator: "\n").first ?? ""
        let fields = line.split(separator: " ").dropFirst().prefix(8).compactMap { Int($0) }
        guard line.hasPrefix("cpu "), fields.count == 8 else { throw ProcFileError(path: "/proc/stat") }
        return MachineCPU(total: fields.reduce(0, +), steal: fields[7])
    }

    /// The share of the CPUs' time from `earlier` to this one that the hypervisor took (steal), in percent.
    public func stealPercent(since earlier: MachineCPU) -> Double {
        total > earlier.total ? Double(steal - earlier.steal) * 100 / Double(total - earlier.total) : 0
    }
}
