import Foundation
import OfflineStore
import Synchronization
import Testing

@testable import ilodata

/// `ilodata`'s progress printer with a clock of its own: plain lines (rate limited, the last one always written) and
/// the live bar (redrawn in place, ended with a line break); a total only when the store reports one.
@Suite struct ILODataProgressTests {
    /// What a printer wrote, and the clock it reads, both moved by the test.
    final class Output: Sendable {
        let text = Mutex("")
        let time = Mutex(ContinuousClock.now)

        func printer(live: Bool) -> ProgressPrinter {
            ProgressPrinter(live: live, now: { self.time.withLock { $0 } }) { text in self.text.withLock { $0 += text } }
        }

        func advance(_ duration: Duration) { time.withLock { $0 += duration } }
        var written: String { text.withLock { $0 } }
    }

    @Test func plainLinesAreRateLimitedAndTheLastOneIsAlwaysWritten() {
        let output = Output()
        let printer = output.printer(live: false)
        printer.changed(to: .opening)
        for page in 1...9 {
            output.advance(.milliseconds(300))
            printer.downloaded(OfflineODataDownloadProgress(definingQuery: "orders", entities: min(page * 100, 830), bytes: 0,
                                                            isComplete: page == 9, total: 830))
        }
        output.advance(.milliseconds(200))
        printer.downloaded(OfflineODataDownloadProgress(definingQuery: "customers", entities: 91, bytes: 0, isComplete: true))
        printer.changed(to: .open)
        let lines = output.written.split(separator: "\n").map(String.init)
        #expect(lines == [
            "initial download orders: 100 of 830 entities (12%), 333 entities/s, 0.3 s",
            "initial download orders: 500 of 830 entities (60%), 333 entities/s, 1.5 s",
            "initial download orders: 830 of 830 entities (100%), 307 entities/s, 2.7 s, done",
            "initial download customers: 91 entities, 455 entities/s, 0.2 s, done",
        ], "\(output.written)")
    }

    @Test func theUploadsLastLineIsWrittenWhenTheUploadEnds() {
        let output = Output()
        let printer = output.printer(live: false)
        printer.changed(to: .uploading)
        for settled in 1...5 {
            output.advance(.milliseconds(100))
            printer.uploaded(OfflineODataUploadProgress(settled: settled, total: 5, requestID: Int64(settled)))
        }
        printer.changed(to: .open)
        #expect(output.written == "upload: 1 of 5 requests (20%), 10 requests/s, 0.1 s\nupload: 5 of 5 requests (100%), 10 requests/s, 0.5 s\n")
    }

    @Test func aTerminalGetsOneBarRedrawnInPlace() {
        let output = Output()
        let printer = output.printer(live: true)
        printer.changed(to: .downloading)
        for (step, entities) in [(50, 100), (20, 200), (130, 400)] {
            output.advance(.milliseconds(step))
            printer.downloaded(OfflineODataDownloadProgress(definingQuery: "orders", entities: entities, bytes: 0,
                                                            isComplete: entities == 400, total: 400))
        }
        printer.downloaded(OfflineODataDownloadProgress(definingQuery: "customers", entities: 7, bytes: 0, isComplete: false))
        printer.changed(to: .open)
        let clear = "\u{1B}[K"
        #expect(output.written == [
            "\rdownload orders [#####---------------] 100/400 entities 25% 2000/s 0.0 s" + clear,
            "\rdownload orders [####################] 400/400 entities 100% 2000/s 0.2 s" + clear, "\n",
            "\rdownload customers 7 entities 0/s 0.0 s" + clear, "\n",
        ].joined(), "\(output.written.debugDescription)")
    }

    @Test func aBarHeldBackByTheRateLimitIsDrawnWhenTheUploadEnds() {
        let output = Output()
        let printer = output.printer(live: true)
        printer.changed(to: .uploading)
        for settled in 1...3 {
            output.advance(.milliseconds(10))
            printer.uploaded(OfflineODataUploadProgress(settled: settled, total: 3, requestID: Int64(settled)))
        }
        printer.changed(to: .open)
        let clear = "\u{1B}[K"
        #expect(output.written == [
            "\rupload [######--------------] 1/3 requests 33% 100/s 0.0 s" + clear,
            "\rupload [####################] 3/3 requests 100% 100/s 0.0 s" + clear, "\n",
        ].joined(), "\(output.written.debugDescription)")
    }
}
