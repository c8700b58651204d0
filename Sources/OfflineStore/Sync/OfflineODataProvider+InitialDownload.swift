import Foundation
import Logging
import ODataTelemetry
import ODataCore

extension OfflineODataProvider {
    /// Downloads every defining query, committing each page as it arrives (memory stays bounded by a
    /// page), and resumes an initial download that did not finish — failed, or its process killed — at
    /// the first page not committed.
    ///
    /// Until the last page is in, the configuration says where to go on (``DownloadResume``) and the
    /// store does not count as downloaded: `open()` resumes (same service root and defining queries; else
    /// it starts over), nothing else reads it. A resumed link the back end no longer accepts starts
    /// the download over at the next `open()`.
    ///
    /// The rows go in with their key alone; the other indexes are built once the last page is in, one pass each
    /// (`EntityStore+Indexes.swift`; an index a killed process did not build is built at the next `open()`).
    func initialDownload(store: EntityStore) async throws {
        guard !definingQueryList.isEmpty else {
            throw OfflineODataError(.invalidDefiningQuery, "a new offline store needs at least one defining query")
        }
        var configuration: StoreConfiguration
        var counters: StoreCounters
        let resumed: Bool
        if let (stored, storedCounters) = try store.configuration(), !stored.downloadComplete, stored.resume != nil,
           stored.serviceRoot == serviceRoot, stored.definingQueries == definingQueryList {
            model = try ServiceModel.parse(Data(stored.metadata.utf8), references: parameters.metadataReferences)
            configuration = stored
            counters = storedCounters
            resumed = true
        } else {
            let metadataBytes = try await fetch(serviceRoot + "$metadata", accept: "application/xml")
            model = try ServiceModel.parse(metadataBytes, references: parameters.metadataReferences)
            for warning in model.metadataWarnings {
                parameters.telemetry.logger.warning("offline store: the $metadata document is read in a weaker form than written", metadata: [
                    "warning": "\(warning)",
                ])
            }
            for query in definingQueryList { try checkDefiningQuery(query, against: model) }
            configuration = StoreConfiguration(serviceRoot: serviceRoot, definingQueries: definingQueryList, downloadComplete: false,
                                               deltaLinks: [:], metadata: String(decoding: metadataBytes, as: UTF8.self),
                                               user: parameters.currentUser, resume: DownloadResume(query: 0))
            counters = StoreCounters()
            let (start, startCounters) = (configuration, counters)
            try await store.write { changes in
                try changes.wipeEntities()
                try changes.clearQueue()
                try changes.putCounters(startCounters)
                try changes.putConfiguration(start)
            }
            resumed = false
        }
        store.deferringIndexes.withLock { $0 = true }
        defer { store.deferringIndexes.withLock { $0 = false } }
        var firstRead = true
        while var resume = configuration.resume {
            let query = definingQueryList[resume.query]
            do {
                try await readPages(query, .full(from: resume.next), entities: resume.entities, bytes: resume.bytes) { page in
                    firstRead = false
                    var ingest = Ingest(model: self.model, nextOrder: counters.nextOrder)
                    for entity in page.entities { _ = try ingest.add(entity, set: page.set, query: query.name) }
                    counters.nextOrder = ingest.nextOrder
                    resume.next = page.next
                    (resume.entities, resume.bytes) = (page.totalEntities, page.totalBytes)
                    if let link = page.deltaLink { configuration.deltaLinks[query.name] = link }
                    if page.next == nil {
                        let following = resume.query + 1
                        resume = DownloadResume(query: following)
                        configuration.resume = following < self.definingQueryList.count ? resume : nil
                        configuration.downloadComplete = configuration.resume == nil
                    } else {
                        configuration.resume = resume
                    }
                    let records = ingest.inArrivalOrder
                    let (pageConfiguration, pageCounters) = (configuration, counters)
                    try await store.write { changes in
                        for record in records { try changes.putDownloaded(record) }
                        try changes.putCounters(pageCounters)
                        try changes.putConfiguration(pageConfiguration)
                    }
                }
            } catch let error as OfflineODataError where resumed && firstRead && resume.next != nil && error.httpStatus.map({ (400..<500).contains($0) }) == true {
                // The back end refuses the stored link (an expired skip token): start over next time.
                var abandoned = configuration
                abandoned.resume = nil
                let restart = abandoned
                try await store.write { changes in try changes.putConfiguration(restart) }
                throw OfflineODataError(.downloadFailed, "the initial download could not resume (\(error.message)); the next open starts it over")
            }
        }
        store.deferringIndexes.withLock { $0 = false }
        try await store.buildMissingIndexes(model: model)
        self.configuration = configuration
        self.counters = counters
        try await downloadMedia(definingQueryList, store: store)
    }
}
