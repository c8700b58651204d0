import Foundation
import ODataCore
import SQLCipher

/// The one-way migration of a store in the LMDB format (format 1) into SQLCipher (format 2), at open.
///
/// A format-1 store may hold requests not yet uploaded, so it is migrated rather than downloaded again:
/// 1. the LMDB store is read whole with its key (``LegacyLMDBStore``; a wrong key is `.wrongKey`, as before);
/// 2. its key-check record is written beside it unchanged (the same passphrase opens the new store) and its
///    entities, queue, ErrorArchive, configuration and counters are copied into a new database in one
///    transaction, which also marks the database as migrated;
/// 3. the new database is read back and compared with what was read from LMDB;
/// 4. only then are `data.mdb` and `lock.mdb` removed.
///
/// A failure before step 4 removes the new files and leaves `data.mdb` as it was: the error is
/// `.migrationFailed` (or the key check's own error). A crash after the commit of step 2 leaves a marked
/// database beside the LMDB files: the next open finds the mark and finishes with step 4.
enum StoreMigration {
    static let marker = "migratedFrom"

    static func migrate(directory: String, parameters: OfflineODataParameters) throws {
        // A migration that committed before a crash: the LMDB files only wait to be removed.
        if try finishedBefore(directory: directory, parameters: parameters) {
            try removeLegacyFiles(directory)
            return
        }
        removeNewFiles(directory)
        let contents: LegacyLMDBStore.Contents
        do {
            contents = try LegacyLMDBStore.read(directory: directory, parameters: parameters)
        } catch let error as OfflineODataError where error.code == .storage {
            throw OfflineODataError(.migrationFailed, "the store at \(directory) could not be migrated from the LMDB format; it is left as it was: \(error.message)")
        }
        do {
            try StoreKeyCheck.write(contents.keyCheck, in: directory)
            let store = try EntityStore(directory: directory, secret: contents.secret, cacheBudget: parameters.pageCacheBudget,
                                        pageSize: parameters.databasePageSize)
            defer { store.close() }
            try store.writeNow { changes in
                if let configuration = contents.configuration { try changes.putConfiguration(configuration) }
                if let counters = contents.counters { try changes.putCounters(counters) }
                for record in contents.records { try changes.put(record) }
                for request in contents.queue { try changes.enqueue(request) }
                for (id, entry) in contents.errors { try changes.archiveError(entry, id: id) }
                try changes.putMeta(marker, Array("lmdb format 1".utf8))
            }
            try check(store, against: contents)
        } catch {
            removeNewFiles(directory)
            let reason = (error as? OfflineODataError)?.message ?? "\(error)"
            throw OfflineODataError(.migrationFailed, "the store at \(directory) could not be migrated from the LMDB format; it is left as it was: \(reason)")
        }
        try removeLegacyFiles(directory)
    }

    /// Whether a database beside the LMDB files holds a committed migration.
    private static func finishedBefore(directory: String, parameters: OfflineODataParameters) throws -> Bool {
        guard let stored = try StoreKeyCheck.read(in: directory),
              FileManager.default.fileExists(atPath: EntityStore.databasePath(in: directory)),
              let secret = try? StoreKeyCheck.open(stored, parameters: parameters, directory: directory),
              let store = try? EntityStore(directory: directory, secret: secret, cacheBudget: 1 << 20)
        else { return false }
        defer { store.close() }
        return (try? store.withWriter { connection in
            let select = try connection.prepare("SELECT value FROM meta WHERE name = ?")
            try select.bind(.text(marker), at: 1)
            return try select.step()
        }) == true
    }

    /// Reads the new store back and compares it with the LMDB store's contents.
    private static func check(_ store: EntityStore, against contents: LegacyLMDBStore.Contents) throws {
        func fail(_ what: String) -> OfflineODataError { OfflineODataError(.storage, "the migrated \(what) differs from the LMDB store's") }
        let stored = try store.configuration()
        guard stored?.0 == contents.configuration || contents.configuration == nil else { throw fail("configuration") }
        guard stored?.1 ?? StoreCounters() == contents.counters ?? StoreCounters() else { throw fail("counters") }
        // The new store is walked one record at a time (the LMDB store's contents are in memory already).
        let expected = Dictionary(contents.records.map { ($0.reference, $0) }, uniquingKeysWith: { first, _ in first })
        var seen: Set<String> = []
        var same = true
        for set in store.storedSets() {
            try store.forEachRecord(in: set) { record in
                same = expected[record.reference] == record && seen.insert(record.reference).inserted
                return same
            }
            guard same else { throw fail("entities") }
        }
        guard seen.count == expected.count else { throw fail("entities") }
        guard try store.queuedRequests() == contents.queue.sorted(by: { $0.id < $1.id }) else { throw fail("request queue") }
        let errors = try store.errorEntriesWithIDs()
        guard errors.map(\.id) == contents.errors.map(\.id).sorted(),
              errors.map(\.entry) == contents.errors.sorted(by: { $0.id < $1.id }).map(\.entry)
        else { throw fail("ErrorArchive") }
    }

    private static func removeNewFiles(_ directory: String) {
        let database = EntityStore.databasePath(in: directory)
        for path in [database, database + "-wal", database + "-shm", database + "-journal", StoreKeyCheck.path(in: directory)] {
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    private static func removeLegacyFiles(_ directory: String) throws {
        // data.mdb last: while it is there, the next open looks at the migration again.
        for name in ["lock.mdb", "data.mdb"] where FileManager.default.fileExists(atPath: directory + "/" + name) {
            do {
                try FileManager.default.removeItem(atPath: directory + "/" + name)
            } catch {
                throw OfflineODataError(.storage, "the store at \(directory) was migrated, but its LMDB file \(name) cannot be removed: \(error.localizedDescription)")
            }
        }
    }
}
