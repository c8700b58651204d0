import Foundation
import OfflineStore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Prints the progress of an offline store's initial download, downloads and uploads, as the store's delegate
/// reports it: entities or requests done (of the total, when it is known), the rate and the time since the step
/// started.
///
/// On a terminal it draws one live bar, redrawn in place (a carriage return) at most ten times a second and ended
/// with a line break when a defining query or the upload is done. Elsewhere (a pipe, a file, a test) it writes plain
/// lines: the first report of each step, then at most one line a second, and always the last one — a download of
/// many pages writes a few lines, not one per page. Progress goes to standard error, so standard output keeps only
/// the answers of the commands.
final class ProgressPrinter: OfflineODataDelegate {
    /// Where a step stands: what runs, since when, and the last line not yet written.
    private struct State {
        /// `initial download`, `download` or `upload`, from the store's state.
        var phase = "download"
        /// When the current step (a defining query, or the upload) started.
        var stepStart: ContinuousClock.Instant
        /// When the last line or bar was written; nil before the first of a step.
        var lastWrite: ContinuousClock.Instant?
        /// The last line (or bar) held back by the rate limit, written when the step ends.
        var pending: String?
        /// Whether a live bar is on the screen without its line break.
        var barOpen = false
    }

    private let state: Mutex<State>
    private let live: Bool
    private let write: @Sendable (String) -> Void
    private let now: @Sendable () -> ContinuousClock.Instant

    /// The shortest time between two plain lines of one step.
    static let lineInterval = Duration.seconds(1)
    /// The shortest time between two redraws of the live bar.
    static let barInterval = Duration.milliseconds(100)

    /// A printer that writes to `write`, as a live bar when `live`, else as plain lines.
    ///
    /// - Parameters:
    ///   - live: Whether to draw a bar redrawn in place (the output is a terminal).
    ///   - now: The clock (a test gives its own).
    ///   - write: Writes text as given (no line break is added).
    init(live: Bool, now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
         write: @escaping @Sendable (String) -> Void) {
        self.live = live
        self.now = now
        self.write = write
        state = Mutex(State(stepStart: now()))
    }

    /// A printer on standard error: a live bar when standard error is a terminal, plain lines otherwise.
    static func standardError() -> ProgressPrinter {
        ProgressPrinter(live: isatty(STDERR_FILENO) == 1) { text in FileHandle.standardError.write(Data(text.utf8)) }
    }

    func offlineODataProvider(_ provider: OfflineODataProvider, didChangeState state: OfflineODataStoreState) {
        changed(to: state)
    }

    func offlineODataProvider(_ provider: OfflineODataProvider, didUpdateDownloadProgress progress: OfflineODataDownloadProgress) {
        downloaded(progress)
    }

    func offlineODataProvider(_ provider: OfflineODataProvider, didUpdateUploadProgress progress: OfflineODataUploadProgress) {
        uploaded(progress)
    }

    /// The store's state changed: the current step ends, and a download or an upload names the steps that follow.
    func changed(to state: OfflineODataStoreState) {
        let time = now()
        self.state.withLock { current in
            endStep(&current)
            switch state {
            case .opening: current.phase = "initial download"
            case .downloading: current.phase = "download"
            case .uploading: current.phase = "upload"
            case .open, .closed: break
            }
            current.stepStart = time
        }
    }

    /// A defining query's download made progress.
    func downloaded(_ progress: OfflineODataDownloadProgress) {
        report(label: { "\($0) \(progress.definingQuery)" }, done: progress.entities, total: progress.total, unit: "entities",
               isComplete: progress.isComplete)
    }

    /// The upload settled a request (its last line is written when the store's state leaves `uploading`).
    func uploaded(_ progress: OfflineODataUploadProgress) {
        report(label: { $0 }, done: progress.settled, total: progress.total, unit: "requests", isComplete: false)
    }

    /// Writes (or holds back) one report of the current step; a complete one ends the step.
    private func report(label: (String) -> String, done: Int, total: Int?, unit: String, isComplete: Bool) {
        let time = now()
        state.withLock { current in
            let elapsed = time - current.stepStart
            let name = label(current.phase)
            let interval = live ? Self.barInterval : Self.lineInterval
            let due = isComplete || current.lastWrite.map { time - $0 >= interval } ?? true
            // A bar is redrawn in place; a plain line ends with a line break.
            let text = live ? "\r" + Self.bar(name, done: done, total: total, unit: unit, elapsed: elapsed) + "\u{1B}[K"
                : Self.line(name, done: done, total: total, unit: unit, elapsed: elapsed, isComplete: isComplete) + "\n"
            current.barOpen = current.barOpen || live
            if due {
                write(text)
                current.pending = nil
                current.lastWrite = time
            } else {
                current.pending = text
            }
            if isComplete {
                endStep(&current)
                current.stepStart = time
            }
        }
    }

    /// Ends the current step: the line or bar held back is written, a live bar gets its line break.
    private func endStep(_ current: inout State) {
        if let pending = current.pending { write(pending) }
        if current.barOpen { write("\n") }
        current.pending = nil
        current.barOpen = false
        current.lastWrite = nil
    }

    /// A plain progress line: `download orders: 300 of 830 entities (36%), 2400 entities/s, 0.1 s`, or without a
    /// known total `download orders: 300 entities, 2400 entities/s, 0.1 s`; `, done` ends the last line of a
    /// defining query.
    static func line(_ label: String, done: Int, total: Int?, unit: String, elapsed: Duration, isComplete: Bool) -> String {
        var text = "\(label): \(done)"
        if let total { text += " of \(total) \(unit)\(percent(done, of: total).map { " (\($0)%)" } ?? "")" } else { text += " \(unit)" }
        text += ", \(rate(done, elapsed)) \(unit)/s, \(seconds(elapsed))"
        return isComplete ? text + ", done" : text
    }

    /// The live bar: `download orders [########------------] 300/830 entities 36% 2400/s 0.1 s`; without a known
    /// total no bar is drawn, only the count, the rate and the time.
    static func bar(_ label: String, done: Int, total: Int?, unit: String, elapsed: Duration) -> String {
        let tail = "\(rate(done, elapsed))/s \(seconds(elapsed))"
        guard let total, let percent = percent(done, of: total) else { return "\(label) \(done) \(unit) \(tail)" }
        let width = 20
        let filled = min(width, done * width / max(total, 1))
        let drawn = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        return "\(label) [\(drawn)] \(done)/\(total) \(unit) \(percent)% \(tail)"
    }

    /// The share done in whole percent, capped at 100; nil for a total of zero.
    static func percent(_ done: Int, of total: Int) -> Int? {
        total > 0 ? min(100, done * 100 / total) : nil
    }

    /// Units a second, rounded; 0 before any time has passed.
    static func rate(_ done: Int, _ elapsed: Duration) -> Int {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return seconds > 0 ? Int((Double(done) / seconds).rounded()) : 0
    }

    /// The elapsed time with one decimal: `0.1 s`, `31.4 s`.
    static func seconds(_ elapsed: Duration) -> String {
        let tenths = elapsed.components.seconds * 10 + elapsed.components.attoseconds / 100_000_000_000_000_000
        return "\(tenths / 10).\(tenths % 10) s"
    }
}
