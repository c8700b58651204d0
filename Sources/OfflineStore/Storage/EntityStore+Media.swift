import Foundation
import SQLCipher

/// Media resources — the `$value` of a media entity and the stream properties (`Edm.Stream`) of any entity: a row in
/// `media` per entity and property (`property` is `''` for `$value`; ETag, content type, size, and whether it was
/// changed locally), its bytes in `media_chunks` as rows of at most ``EntityStore/mediaChunkSize`` bytes, so that
/// neither writing nor reading a stream ever holds more than one chunk in memory. Both tables are in the store's
/// (encrypted) database.
extension EntityStore {
    /// The largest chunk of a media resource in one row.
    static let mediaChunkSize = 256 * 1024

    /// The media tables (format 6: keyed by set, key and property).
    static let mediaSchema = """
        CREATE TABLE IF NOT EXISTS media ("set" TEXT NOT NULL, "key" TEXT NOT NULL, property TEXT NOT NULL DEFAULT '', etag TEXT, content_type TEXT NOT NULL, size INTEGER NOT NULL, local INTEGER NOT NULL DEFAULT 0, PRIMARY KEY ("set", "key", property));
        CREATE TABLE IF NOT EXISTS media_chunks ("set" TEXT NOT NULL, "key" TEXT NOT NULL, property TEXT NOT NULL DEFAULT '', position INTEGER NOT NULL, bytes BLOB NOT NULL, PRIMARY KEY ("set", "key", property, position));
        """

    /// Makes the media tables when missing, or brings format 5's (keyed by set and key, `$value` only) to format 6 in
    /// place: each of their rows becomes the `$value` row (`property` `''`) of its entity. Inside the caller's
    /// transaction.
    static func prepareMediaTables(_ connection: SQLCipherConnection) throws {
        // `PRAGMA table_info` rows: cid, name, type, … (no rows: the table does not exist).
        var names: [String] = []
        do {  // the statement is finalized before the tables change
            let columns = try connection.prepare("PRAGMA table_info(media)")
            while try columns.step() { names.append(columns.text(at: 1)) }
        }
        if !names.isEmpty && !names.contains("property") {
            try connection.execute("""
                ALTER TABLE media RENAME TO media_format5;
                ALTER TABLE media_chunks RENAME TO media_chunks_format5;
                \(mediaSchema)
                INSERT INTO media ("set", "key", property, etag, content_type, size, local) SELECT "set", "key", '', etag, content_type, size, local FROM media_format5;
                INSERT INTO media_chunks ("set", "key", property, position, bytes) SELECT "set", "key", '', position, bytes FROM media_chunks_format5;
                DROP TABLE media_format5;
                DROP TABLE media_chunks_format5;
                """)
        } else {
            try connection.execute(mediaSchema)
        }
    }

    /// What the store knows of one media resource.
    struct MediaRecord: Sendable, Hashable {
        var set: String
        var key: String
        /// The stream property; `''` for the media entity's `$value`.
        var property: String
        /// The back end's media ETag when it was downloaded or last uploaded; `nil` when it gave none.
        var etag: String?
        var contentType: String
        var size: Int64
        /// Whether it was replaced locally and the replace is not uploaded yet.
        var isLocal: Bool
    }

    /// The media record of an entity's `$value` (`property` `''`) or stream property, as committed.
    func mediaRecord(set: String, key: String, property: String) throws -> MediaRecord? {
        try reading("the media of \(set)\(key)") { connection in try Self.mediaRecord(set: set, key: key, property: property, connection) }
    }

    /// The media record of an entity's `$value` or stream property as `connection` sees it.
    static func mediaRecord(set: String, key: String, property: String, _ connection: SQLCipherConnection) throws -> MediaRecord? {
        let select = try connection.cachedStatement("SELECT etag, content_type, size, local FROM media WHERE \"set\" = ? AND \"key\" = ? AND property = ?")
        defer { select.reset() }
        try select.bind(.text(set), at: 1)
        try select.bind(.text(key), at: 2)
        try select.bind(.text(property), at: 3)
        guard try select.step() else { return nil }
        return MediaRecord(set: set, key: key, property: property, etag: select.isNull(at: 0) ? nil : select.text(at: 0),
                           contentType: select.text(at: 1), size: select.integer(at: 2), isLocal: select.integer(at: 3) != 0)
    }

    /// The page cache of the connection a media resource is read through.
    static let mediaReadCacheBudget = 2 << 20

    /// Hands the media bytes of an entity's `$value` (`property` `''`) or stream property to `body` chunk by chunk, in
    /// order, as one statement sees them.
    ///
    /// The bytes are read through a connection of their own with a small page cache
    /// (``mediaReadCacheBudget``), opened for the read and closed after it: a stream of any size passes through
    /// it without filling the reading connection's cache (which the queries keep warm) or memory.
    func readMedia(set: String, key: String, property: String, _ body: ([UInt8]) throws -> Void) throws {
        let connection = try Self.connect(path: Self.databasePath(in: directory), key: mediaAccess.key, budget: Self.mediaReadCacheBudget,
                                          pageSize: mediaAccess.pageSize)
        defer { connection.close() }
        do {
            let select = try connection.prepare("SELECT bytes FROM media_chunks WHERE \"set\" = ? AND \"key\" = ? AND property = ? ORDER BY position")
            try select.bind(.text(set), at: 1)
            try select.bind(.text(key), at: 2)
            try select.bind(.text(property), at: 3)
            while try select.step() { try body(select.blob(at: 0)) }
        } catch let error as SQLCipherError {
            throw Self.storageError(error, "cannot read the media of \(set)\(key)")
        }  // what `body` throws goes to the caller as it is
    }
}

extension EntityStore.Changes {
    /// Stores a media resource (`$value`, `property` `''`, or a stream property) from `chunks`, which hands its bytes
    /// to the function it is given a piece at a time (``EntityStore/fileChunks(_:)``, ``SealedSpool/forEachChunk(_:)``),
    /// replacing what the entity had there. Each piece becomes a row of at most ``EntityStore/mediaChunkSize`` bytes.
    /// - Returns: The record written.
    @discardableResult
    func putMedia(set: String, key: String, property: String, etag: String?, contentType: String, isLocal: Bool,
                  chunks: (([UInt8]) throws -> Void) throws -> Void) throws -> EntityStore.MediaRecord {
        try removeMedia(set: set, key: key, property: property)
        let insert = try connection.cachedStatement("INSERT INTO media_chunks (\"set\", \"key\", property, position, bytes) VALUES (?, ?, ?, ?, ?)")
        var size: Int64 = 0
        var position: Int64 = 0
        try chunks { piece in
            var start = 0
            while start < piece.count {
                let end = min(piece.count, start + EntityStore.mediaChunkSize)
                defer { insert.reset() }
                try insert.bind(.text(set), at: 1)
                try insert.bind(.text(key), at: 2)
                try insert.bind(.text(property), at: 3)
                try insert.bind(.integer(position), at: 4)
                try insert.bind(.blob(Array(piece[start..<end])), at: 5)
                _ = try insert.step()
                position += 1
                size += Int64(end - start)
                start = end
            }
        }
        let record = EntityStore.MediaRecord(set: set, key: key, property: property, etag: etag, contentType: contentType, size: size, isLocal: isLocal)
        let row = try connection.cachedStatement("INSERT INTO media (\"set\", \"key\", property, etag, content_type, size, local) VALUES (?, ?, ?, ?, ?, ?, ?)")
        defer { row.reset() }
        try row.bind(.text(set), at: 1)
        try row.bind(.text(key), at: 2)
        try row.bind(.text(property), at: 3)
        try row.bind(etag.map { .text($0) } ?? .null, at: 4)
        try row.bind(.text(contentType), at: 5)
        try row.bind(.integer(size), at: 6)
        try row.bind(.integer(isLocal ? 1 : 0), at: 7)
        _ = try row.step()
        return record
    }

    /// Marks a media resource uploaded: its new ETag; local only while `stillLocal` (a later replace is queued).
    func markMediaUploaded(set: String, key: String, property: String, etag: String?, stillLocal: Bool) throws {
        let update = try connection.cachedStatement("UPDATE media SET etag = ?, local = ? WHERE \"set\" = ? AND \"key\" = ? AND property = ?")
        defer { update.reset() }
        try update.bind(etag.map { .text($0) } ?? .null, at: 1)
        try update.bind(.integer(stillLocal ? 1 : 0), at: 2)
        try update.bind(.text(set), at: 3)
        try update.bind(.text(key), at: 4)
        try update.bind(.text(property), at: 5)
        _ = try update.step()
    }

    /// Moves an entity's media resources to its new key (a local create's temporary key replaced by the back end's).
    func renameMedia(set: String, from oldKey: String, to newKey: String) throws {
        for table in ["media_chunks", "media"] {
            let update = try connection.cachedStatement("UPDATE \(table) SET \"key\" = ? WHERE \"set\" = ? AND \"key\" = ?")
            defer { update.reset() }
            try update.bind(.text(newKey), at: 1)
            try update.bind(.text(set), at: 2)
            try update.bind(.text(oldKey), at: 3)
            _ = try update.step()
        }
    }

    /// The media record of an entity's `$value` or stream property as this transaction sees it.
    func currentMedia(set: String, key: String, property: String) throws -> EntityStore.MediaRecord? {
        try EntityStore.mediaRecord(set: set, key: key, property: property, connection)
    }

    /// Removes the media resources of an entity: one (`property`, `''` for `$value`), or all (`nil`), if it has them.
    func removeMedia(set: String, key: String, property: String? = nil) throws {
        for table in ["media_chunks", "media"] {
            let delete = try connection.cachedStatement("DELETE FROM \(table) WHERE \"set\" = ? AND \"key\" = ?" + (property == nil ? "" : " AND property = ?"))
            defer { delete.reset() }
            try delete.bind(.text(set), at: 1)
            try delete.bind(.text(key), at: 2)
            if let property { try delete.bind(.text(property), at: 3) }
            _ = try delete.step()
        }
    }
}

extension EntityStore {
    /// A file's bytes for ``Changes/putMedia(set:key:property:etag:contentType:isLocal:chunks:)``, read
    /// ``mediaChunkSize`` bytes at a time.
    ///
    /// - Parameter path: The file (an application's media to create or replace locally).
    /// - Returns: The function that hands the file's bytes on.
    static func fileChunks(_ path: String) -> (([UInt8]) throws -> Void) throws -> Void {
        { body in
            let handle: FileHandle
            do { handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path)) } catch {
                throw OfflineODataError(.storage, "cannot read the media file \(path): \(error.localizedDescription)", underlying: error)
            }
            defer { try? handle.close() }  // read-only: closing cannot lose anything
            while true {
                let chunk: Data
                do { chunk = try handle.read(upToCount: mediaChunkSize) ?? Data() } catch {
                    throw OfflineODataError(.storage, "cannot read the media file \(path): \(error.localizedDescription)", underlying: error)
                }
                if chunk.isEmpty { return }
                try body([UInt8](chunk))
            }
        }
    }
}
