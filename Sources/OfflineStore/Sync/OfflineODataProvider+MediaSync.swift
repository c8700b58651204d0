import Foundation
import HTTPTypes
import Logging
import ODataCore
import ODataTelemetry

extension OfflineODataProvider {
    /// Downloads the media resources (`$value`) of the media entities, and the stream properties (`Edm.Stream`) of the
    /// entities, that the defining queries with ``OfflineODataDefiningQuery/automaticallyRetrievesStreams`` hold, after
    /// their entities were applied.
    ///
    /// A media resource whose stored ETag equals the entity's `@odata.mediaEtag` (V2: `__metadata.media_etag`; a
    /// stream property's `Name@odata.mediaEtag`) is not read again, nor one replaced locally and not yet uploaded. Each
    /// one is read from its `@odata.mediaReadLink` (V2: `media_src`; a stream property's `Name@odata.mediaReadLink`;
    /// without one, the entity's `Set(key)/$value` or `Set(key)/Name`) into a ``SealedSpool`` as it arrives (the
    /// request's ``TransportRequest/responseBodySink``: sealed chunks in a file of the store's directory, their key in
    /// memory only), then copied into the encrypted database in chunks (``EntityStore/mediaChunkSize``) and the spool
    /// removed: memory holds one chunk, whatever the stream's size, and no readable media byte reaches the disk. A
    /// transport of the application's that ignores the sink and answers with the body in the response is served too.
    /// A stream property the back end answers with `204 No Content` (a null stream) is not stored.
    ///
    /// - Throws: `OfflineODataError.downloadFailed` when a media resource cannot be read, `.storage`.
    func downloadMedia(_ queries: [OfflineODataDefiningQuery], store: EntityStore) async throws {
        let streaming = Set(queries.filter(\.automaticallyRetrievesStreams).map(\.name))
        guard !streaming.isEmpty else { return }
        var wanted: [(set: String, key: String, property: String, link: String, etag: String?)] = []
        for set in store.storedSets() {
            guard let type = model.entityType(ofSet: set) else { continue }
            // `''` is the media entity's `$value`, each other name a stream property.
            let properties = (type.hasStream ? [""] : []) + type.streamProperties
            if properties.isEmpty { continue }
            try store.forEachRecord(in: set) { record in
                guard record.queries.contains(where: streaming.contains) else { return true }
                for property in properties {
                    let link = record.entity[property + "@odata.mediaReadLink"]?.stringValue
                        ?? record.reference + "/" + (property.isEmpty ? "$value" : property)
                    wanted.append((set, record.key, property, link, record.entity[property + "@odata.mediaEtag"]?.stringValue))
                }
                return true
            }
        }
        let spool = try SealedSpool(path: parameters.storeDirectory + "/media-download.part")
        defer { removeMediaFile(spool.path) }
        for item in wanted {
            let stored = try store.mediaRecord(set: item.set, key: item.key, property: item.property)
            if let stored, stored.isLocal || (item.etag != nil && stored.etag == item.etag) { continue }
            let url = try absolute(item.link)
            var request = TransportRequest(method: "GET", url: url, headerFields: backEndHeaders(accept: "*/*"))
            request.responseBodySink = spool
            let response: TransportResponse
            do { response = try await transport().send(request) } catch {
                throw Self.downloadError("GET \(url)", error)
            }
            if response.status == 204 && !item.property.isEmpty { continue }  // a null stream property
            guard response.status == 200 else {
                let serviceError = ODataServiceError.parse(response.body, statusCode: response.status)
                throw OfflineODataError(.downloadFailed, "GET \(url) answered \(response.status): \(serviceError.code) \(serviceError.message)",
                                        httpStatus: response.status)
            }
            if !spool.isFinished {  // a transport that kept the body in the response
                try spool.begin()
                try response.body.withUnsafeBytes { try spool.write($0) }
                try spool.finish()
            }
            let etag = response.headerFields[.eTag] ?? item.etag
            let contentType = response.headerFields[.contentType] ?? "application/octet-stream"
            let (set, key, property) = (item.set, item.key, item.property)
            _ = try await store.write { changes in
                try changes.putMedia(set: set, key: key, property: property, etag: etag, contentType: contentType, isLocal: false,
                                     chunks: spool.forEachChunk)
            }
        }
    }

    /// The body of a queued media upload (`$value` or a stream property): the media resource as the store holds it
    /// now, copied a chunk at a time into a ``SealedSpool`` in the store's directory, which the request reads as its
    /// ``TransportRequest/bodySource`` (the caller removes the spool once the request is answered).
    ///
    /// - Throws: `OfflineODataError.storage` when the media cannot be read or the spool written.
    func mediaUploadBody(_ entry: QueuedRequest, store: EntityStore) throws -> SealedSpool {
        let (set, key) = UploadSteps.split(entry.entity)
        let spool = try SealedSpool(path: parameters.storeDirectory + "/media-upload.part")
        try store.readMedia(set: set, key: key, property: entry.mediaProperty ?? "") { chunk in try spool.append(chunk) }
        try spool.finish()
        return spool
    }

    /// Removes a media spool of the store's directory; one that is missing is fine, any other failure is logged (the
    /// next media transfer empties it before it writes, and its bytes cannot be read without the key that went with
    /// it).
    func removeMediaFile(_ path: String) {
        guard FileManager.default.fileExists(atPath: path) else { return }
        do { try FileManager.default.removeItem(atPath: path) } catch {
            parameters.telemetry.logger.warning("offline store: a media file stays in the store's directory until the next download", metadata: [
                "store": .string(parameters.storeName), "error": .string(error.localizedDescription),
            ])
        }
    }
}
