import Dispatch
import Foundation
import OfflineStore

/// `upload` and `sync`: the commands that talk to the back end by themselves.
extension Session {
    /// Uploads; prints what was sent and what failed. A back end that cannot be reached (or refuses the credentials)
    /// stops the upload: it says so and how many requests are still queued. - Returns: whether the upload ended well.
    func upload() async throws -> Bool {
        let result: OfflineODataUploadResult
        do {
            result = try await provider.upload()
        } catch let error as OfflineODataError where error == .backEndUnreachable || error == .authenticationFailed {
            let done = error.uploadResult ?? OfflineODataUploadResult()
            let what = error == .backEndUnreachable ? "unreachable: the back end could not be reached" : "credentials refused by the back end"
            say("\(what); \(done.stillQueued) requests still queued (\(done.sent) sent, \(done.succeeded) succeeded, \(done.failed.count) failed)")
            sayFailures(done.failed)
            say("error: \(error)")
            return false
        }
        say("uploaded: \(result.sent) sent, \(result.succeeded) succeeded, \(result.failed.count) failed")
        sayFailures(result.failed)
        return true
    }

    private func sayFailures(_ failures: [ErrorArchiveEntry]) {
        for failure in failures {
            say("failed \(failure.requestID) \(failure.requestMethod) \(failure.requestURL): \(failure.httpStatusCode.map(String.init) ?? "-") \(failure.message)")
        }
    }

    /// Runs an ``OfflineSynchronizer`` and prints each of its states until SIGINT (Ctrl-C) stops it.
    ///
    /// - Parameter argument: The interval in seconds, or empty for 60.
    /// - Throws: ``UsageError`` for an interval that is not a positive number of seconds.
    func sync(_ argument: String) async throws {
        guard let seconds = argument.isEmpty ? 60 : Int(argument), seconds > 0 else {
            throw UsageError("sync takes an interval in whole seconds, got '\(argument)'")
        }
        let synchronizer = OfflineSynchronizer(provider: provider, configuration: OfflineSyncConfiguration(interval: .seconds(seconds)))
        let states = synchronizer.states()
        let running = Task { await synchronizer.run() }
        signal(SIGINT, SIG_IGN)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT)
        interrupt.setEventHandler { running.cancel() }
        interrupt.resume()
        defer {
            interrupt.cancel()
            signal(SIGINT, SIG_DFL)
        }
        for await state in states {
            say("sync: \(state)")
        }
        await running.value
    }
}
