internal import CLMDB
import Synchronization

/// What one write transaction of an ``LMDBEnvironment`` object changed, handed to the observer set with
/// ``LMDBEnvironment/observeCommits(in:_:)`` once it has committed.
///
/// Only a transaction that changed something is reported, so ``transaction`` is for certain the ID its commit
/// took (LMDB does not commit a transaction that changed nothing: the next writer, maybe another process,
/// gets its ID). Commits of other processes sharing the files are not reported; ``LMDBEnvironment/lastTransactionID``
/// shows them.
public struct LMDBCommit: Sendable {
    /// The ID the transaction committed under.
    public let transaction: UInt64
    /// The keys of the observed database that were set or removed (a key changed twice is listed twice).
    public let keys: [[UInt8]]
    /// Whether the observed database changed in a way not listed key by key (emptied, or an entry removed
    /// through ``LMDBCursor/removeCurrent()``): then any of its keys may have changed.
    public let unlisted: Bool
}

extension LMDBEnvironment {
    /// Calls `observer` after each commit of this environment object that changed something, on the committing
    /// thread (the writer queue, before the write returns to its caller), with the keys of `database` it set or
    /// removed. One observer per environment; a second call replaces the first.
    ///
    /// - Parameters:
    ///   - database: The database whose changed keys are reported.
    ///   - observer: Receives each commit; it must be quick and must not write to this environment.
    public func observeCommits(in database: LMDBDatabase, _ observer: @escaping @Sendable (LMDBCommit) -> Void) {
        commitObserver.withLock { $0 = CommitObserver(database: database.handle, observer: observer) }
    }
}

/// The observer of ``LMDBEnvironment/observeCommits(in:_:)``.
struct CommitObserver: Sendable {
    let database: MDB_dbi
    let observer: @Sendable (LMDBCommit) -> Void
}
