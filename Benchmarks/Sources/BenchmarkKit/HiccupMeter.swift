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

/// The machine's CPU time so far by kind, from `/proc/stat`'s first line, in clock ticks of all CPUs together.
public struct MachineCPU: Sendable {
    /// Everything the CPUs did or waited in (user, nice, system, idle, iowait, irq, softirq, steal).
    public let total: Int
    /// The time the hypervisor ran something else while this machine's virtual CPUs wanted to run.
    public let steal: Int

    /// Now; zeros where `/proc/stat` cannot be read.
    public static func now() -> MachineCPU {
        let line = (try? String(contentsOfFile: "/proc/stat", encoding: .utf8))?.split(separator: "\n").first ?? ""
        let fields = line.split(separator: " ").dropFirst().prefix(8).map { Int($0) ?? 0 }
        return MachineCPU(total: fields.reduce(0, +), steal: fields.count == 8 ? fields[7] : 0)
    }

    /// The share of the CPUs' time from `earlier` to this one that the hypervisor took (steal), in percent.
    public func stealPercent(since earlier: MachineCPU) -> Double {
        total > earlier.total ? Double(steal - earlier.steal) * 100 / Double(total - earlier.total) : 0
    }
}
