import Foundation
import SQLCipher
import Synchronization

/// The reading connection behind a lock its own thread may take again: a query's evaluator, while the query's rows
/// are being stepped, reads the entities a navigation leads to with the same connection (other statements).
///
/// Reads hold one read transaction open from one read to the next (``read(_:)``) for as long as the writing connection
/// commits nothing (``noteCommit()`` counts its commits): each read sees every commit that ended before it began, as
/// with a transaction per statement, without taking and releasing SQLite's file and WAL locks for every statement (an
/// `fcntl` each, and an `fstat`: most of a key lookup's system calls). The store is the only writer of its file (one
/// open store per path, `StorageLock`). The writer lets go of the transaction when it begins a transaction and when
/// it commits, if no read is under way (else the read under way does when it ends), so a held transaction keeps
/// neither the checkpoint of a commit nor the start over of the write-ahead log from happening for longer than one
/// read (SQLite starts the log over only when no reader holds a place in it).
final class ReadingConnection: @unchecked Sendable {
    private let lock = NSRecursiveLock()
    private var connection: SQLCipherConnection?
    /// The writing connection's commits so far.
    private let commits = Atomic<UInt64>(0)
    /// ``commits`` when the read transaction held open began; `nil` when none is.
    private var snapshot: UInt64?
    /// Reads under way on the thread that holds the lock (a read inside a read).
    private var depth = 0

    init(_ connection: SQLCipherConnection) {
        self.connection = connection
    }

    /// Runs `body` with the connection, outside the read transaction's bookkeeping (for its statement cache; `nil`
    /// once closed).
    func withConnection<R>(_ body: (SQLCipherConnection?) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(connection)
    }

    /// Runs `body` in the read transaction held open, begun again first when the writer committed since it began (or
    /// in the read under way on this thread): every statement of `body` sees one commit.
    func read<R>(_ body: (SQLCipherConnection) throws -> R) throws -> R {
        lock.lock()
        defer { lock.unlock() }
        guard let connection else { throw OfflineODataError(.notOpen, "the offline store is closed") }
        if depth == 0 {
            let current = commits.load(ordering: .acquiring)
            if snapshot != current || !connection.isInTransaction {
                endSnapshot(connection)
                try connection.beginReadTransaction()
                snapshot = current
            }
        }
        depth += 1
        defer {
            depth -= 1
            if depth == 0 && snapshot != commits.load(ordering: .acquiring) { endSnapshot(connection) }
        }
        do {
            return try body(connection)
        } catch {
            // Whatever SQLite did to the transaction, the next read begins a new one.
            if depth == 1 { endSnapshot(connection) }
            throw error
        }
    }

    /// Counts a commit of the writing connection and lets go of the read transaction held open when no read is under
    /// way (else the read under way does as it ends).
    func noteCommit() {
        commits.wrappingAdd(1, ordering: .releasing)
        releaseIfIdle()
    }

    /// Lets go of the read transaction held open when no read is under way (never waits for one), before the writing
    /// connection begins a transaction: SQLite starts the log over at the beginning of a write only when no reader
    /// holds a place in it, and checkpoints at a commit only as far as the oldest reader.
    func releaseIfIdle() {
        guard lock.try() else { return }
        defer { lock.unlock() }
        if depth == 0, let connection { endSnapshot(connection) }
    }

    private func endSnapshot(_ connection: SQLCipherConnection) {
        guard snapshot != nil else { return }
        snapshot = nil
        connection.endTransaction()
    }

    func close() {
        lock.lock()
        defer { lock.unlock() }
        if let connection { endSnapshot(connection) }
        connection?.close()
        connection = nil
    }
}
