import Foundation
import ODataKeys
import ODataTyped
import SQLCipher

/// Opening a store: its directory, key-check record and database connections.
extension EntityStore {
    /// Opens the store in `directory`, creating it when new.
    ///
    /// - Parameters:
    ///   - directory: The store's directory (created, mode 0700, when missing).
    ///   - parameters: The key and the page cache budget.
    /// - Throws: `OfflineODataError` — `.wrongKey` (nothing is changed), `.encryptionMismatch`,
    ///   `.unsupportedStoreFormat` for a newer format or the LMDB format, `.storage`.
    static func open(directory: String, parameters: OfflineODataParameters) throws -> EntityStore {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw OfflineODataError(.storage, "cannot create the store directory \(directory): \(error.localizedDescription)")
        }
        try refuseLMDBFormat(in: directory)
        let secret: Data?
        if let stored = try StoreKeyCheck.read(in: directory) {
            do { secret = try StoreKeyCheck.open(stored, parameters: parameters, directory: directory) } catch let error as KeyError { throw StoreKeyCheck.storeError(error) }
        } else {
            if let size = try? FileManager.default.attributesOfItem(atPath: databasePath(in: directory))[.size] as? Int, size > 0 {
                throw OfflineODataError(.storage, "the store at \(directory) has lost its key-check record; it cannot be opened")
            }
            let (record, created): ([UInt8], Data?)
            do { (record, created) = try StoreKeyCheck.create(parameters: parameters, directory: directory) } catch let error as KeyError { throw StoreKeyCheck.storeError(error) }
            try StoreKeyCheck.write(record, in: directory)
            secret = created
        }
        return try EntityStore(directory: directory, secret: secret, cacheBudget: parameters.pageCacheBudget,
                               pageSize: parameters.databasePageSize, metadataReferences: parameters.metadataReferences,
                               background: parameters.backgroundExecutor)
    }

    /// Refuses a directory that holds a store of the LMDB format (format 1: `data.mdb`, written by development
    /// builds before SQLCipher and never released) and no SQLCipher database: it is left as it is, with a
    /// typed error that says what to do, rather than opened as a new, empty store beside it.
    ///
    /// - Parameter directory: The store's directory.
    /// - Throws: `OfflineODataError.unsupportedStoreFormat`.
    static func refuseLMDBFormat(in directory: String) throws(OfflineODataError) {
        let files = FileManager.default
        guard files.fileExists(atPath: directory + "/data.mdb"), !files.fileExists(atPath: databasePath(in: directory)) else { return }
        throw OfflineODataError(.unsupportedStoreFormat,
                                "the store at \(directory) is in the LMDB format of development builds (format 1), which this version does not read; remove the directory and download again")
    }

    /// A connection to the database at `path`.
    ///
    /// An encrypted database records its page size nowhere readable, so a new (or empty) file gets `pageSize` and an
    /// existing one is opened with `pageSize`, then with 4 KiB (every store made before the size was a parameter),
    /// then with each other size SQLite accepts, until its first page passes SQLCipher's check. A failed attempt reads
    /// the first page and writes nothing: with a write-ahead log left by a killed process, SQLite refuses to checkpoint
    /// frames of another page size, and the log stays for the attempt with the right one (a test kills a writer and
    /// opens its store with another size). A plaintext database records its size; it is opened once.
    static func connect(path: String, key: [UInt8]?, budget: Int, pageSize: Int) throws -> SQLCipherConnection {
        let exists = ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0) > 0
        var sizes = [pageSize]
        if key != nil && exists {
            for size in [SQLCipherConnection.defaultPageSize] + SQLCipherConnection.pageSizes where !sizes.contains(size) { sizes.append(size) }
        }
        for size in sizes {
            do {
                return try SQLCipherConnection(path: path, key: key, options: .init(cacheBudget: budget, pageSize: size))
            } catch let error where error == .notADatabase {
                continue
            } catch {
                throw OfflineODataError(.storage, "cannot open the store's database \(path): \(error.message)")
            }
        }
        throw OfflineODataError(.storage, "the store's database \(path) does not open with the key of its key-check record (corrupt, or not this store's)")
    }

    static func loadCatalog(_ connection: SQLCipherConnection) throws -> [String: EntityTable] {
        let select = try connection.prepare("SELECT name, table_name, columns FROM entity_sets")
        var result: [String: EntityTable] = [:]
        while try select.step() {
            let set = select.text(at: 0)
            result[set] = try EntityTable.decode(set: set, name: select.text(at: 1), columns: select.blob(at: 2))
        }
        return result
    }

    /// Makes the tables of a new database, brings an older format to ``format`` in place, or refuses a format this
    /// version does not read (`.unsupportedStoreFormat`).
    static func prepareSchema(_ connection: SQLCipherConnection, directory: String) throws {
        let version = try connection.userVersion()
        if version > Self.format {
            throw OfflineODataError(.unsupportedStoreFormat,
                                    "the store at \(directory) has format \(version), newer than this version reads (\(Self.format)); open it with a newer version, or remove it and download again")
        }
        if version == 0 {
            try connection.transaction {
                try connection.execute("""
                    CREATE TABLE meta (name TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL);
                    CREATE TABLE queue (id INTEGER PRIMARY KEY, request BLOB NOT NULL);
                    CREATE TABLE error_archive (id INTEGER PRIMARY KEY, entry BLOB NOT NULL, affected TEXT);
                    CREATE INDEX "error_archive:affected" ON error_archive (affected);
                    CREATE TABLE entity_sets (name TEXT PRIMARY KEY NOT NULL, table_name TEXT NOT NULL UNIQUE, columns BLOB NOT NULL);
                    """)
                try connection.setUserVersion(Self.format)
            }
        } else if version >= Self.oldestFormat && version < Self.format {
            // Every format-2 to -5 table, catalog row and configuration reads as format 6 once the ErrorArchive has
            // its `affected` column and the media tables their `property`; the number changes so that a version that
            // reads an older format only refuses what is written from now on (a format-5 version would read a
            // stream property's bytes as the entity's `$value`).
            try connection.transaction {
                if version < 5 { try Self.indexErrorArchiveByAffectedEntity(connection) }
                try Self.prepareMediaTables(connection)
                try connection.setUserVersion(Self.format)
            }
        } else if version != Self.format {
            throw OfflineODataError(.unsupportedStoreFormat, "the store at \(directory) has format \(version), which this version does not read")
        }
        // The media tables, made when missing (a store made before media has none).
        try connection.transaction { try Self.prepareMediaTables(connection) }
    }

    /// Format 5: gives an older store's ErrorArchive its `affected` column, filled from each entry, and its index
    /// (inside the caller's transaction).
    static func indexErrorArchiveByAffectedEntity(_ connection: SQLCipherConnection) throws {
        // `PRAGMA table_info` rows: cid, name, type, … (SQLCipher 3.4.1 is SQLite 3.15: no `pragma_table_info()`).
        let columns = try connection.cachedStatement("PRAGMA table_info(error_archive)")
        var hasColumn = false
        while try columns.step() {
            if columns.text(at: 1) == "affected" { hasColumn = true }
        }
        columns.reset()
        if !hasColumn { try connection.execute("ALTER TABLE error_archive ADD COLUMN affected TEXT") }
        let select = try connection.cachedStatement("SELECT id, entry FROM error_archive WHERE affected IS NULL")
        var affected: [(Int64, String)] = []
        while try select.step() {
            affected.append((select.integer(at: 0), try decodeErrorEntry(select.blob(at: 1)).affectedEntityReference))
        }
        select.reset()
        let update = try connection.cachedStatement("UPDATE error_archive SET affected = ? WHERE id = ?")
        for (id, reference) in affected {
            try update.bind(.text(reference), at: 1)
            try update.bind(.integer(id), at: 2)
            _ = try update.step()
            update.reset()
        }
        try connection.execute(#"CREATE INDEX IF NOT EXISTS "error_archive:affected" ON error_archive (affected)"#)
    }
}
