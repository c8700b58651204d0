import Foundation
import ODataCore
import ODataQuery

extension OfflineODataProvider {
    /// What a paged read reads.
    enum PagedRead {
        /// A defining query's answer: from its first page (nil), or from a next link (a resumed initial download).
        case full(from: String?)
        /// The changes behind a delta link.
        case delta(link: String)
    }

    /// One page of a paged read, as ``readPages(_:_:entities:bytes:_:)`` hands it on.
    struct DownloadedPage {
        /// The entity set the defining query reads.
        var set: String
        /// The page's number in this read, from 1.
        var number: Int
        /// The URL the page was read from.
        var url: String
        /// A full read's entities (V4 JSON with annotations and expanded navigation properties).
        var entities: [JSONObject] = []
        /// A delta read's members (changed entities and tombstones) and links, as read.
        var changes = ODataEntitySet(entities: [])
        /// The absolute URL of the next page; nil on the last page.
        var next: String?
        /// The delta link of the last page, if the back end gave one.
        var deltaLink: String?
        /// Entities and bytes of this read so far, this page included.
        var totalEntities = 0
        var totalBytes = 0
    }

    /// The one paging loop of the offline store, for full and delta reads alike: reads a defining query page by
    /// page, following next links (asking for change tracking), hands each page to `body` and reports progress
    /// after it (with the total the back end announced, when the defining query asked for a count).
    ///
    /// A next link is followed in every form a producer writes it (V4 `@odata.nextLink`, `@nextLink`,
    /// `odata.nextLink`; V2 `__next` as a string or as an object with a `uri`, in `d`, in `d.results` or beside
    /// `d`: `ODataPayload`); a page whose next link cannot be read ends the read with an error, never as if it were
    /// the last page. A read is never ended early without a word.
    ///
    /// - Parameters:
    ///   - query: The defining query.
    ///   - read: Its answer in full (from its first page, or from a stored next link), or the changes behind a delta link.
    ///   - entities: Entities of this defining query read before (a resumed initial download), for progress.
    ///   - bytes: Bytes of this defining query read before, for progress.
    ///   - body: Takes each page; what it throws ends the read.
    /// - Throws: `OfflineODataError` — `.invalidDefiningQuery` for a query that names no entity set,
    ///   `.downloadFailed` for a back end that cannot be read or an answer that is no OData payload,
    ///   `.invalidNextLink` naming the entity set and the page whose next link cannot be read;
    ///   ``DeltaExpired`` for a delta link the back end no longer knows.
    func readPages(
        _ query: OfflineODataDefiningQuery, _ read: PagedRead, entities: Int = 0, bytes: Int = 0,
        _ body: (DownloadedPage) async throws -> Void
    ) async throws {
        let parsed = try LocalRequest(query.query, serviceRoot: serviceRoot)
        guard let set = try Ingest(model: model).targetSet(of: parsed.path), model.entityType(ofSet: set) != nil else {
            throw OfflineODataError(.invalidDefiningQuery, "defining query '\(query.name)': '\(parsed.rawPath)' does not name an entity set of the service")
        }
        var next: String?
        var isDelta = false
        var single = false
        switch read {
        case .full(let from):
            single = parsed.path.segments.last?.key != nil
                || (parsed.path.segments.count == 2 && model.entityType(ofSet: parsed.path.segments[0].name)?.navigation[parsed.path.segments[1].name]?.isCollection == false)
            next = from ?? serviceRoot + parsed.relativeURL()
        case .delta(let link):
            isDelta = true
            next = try absolute(link)
        }
        var (entities, bytes) = (entities, bytes)
        var number = 0
        var total: Int?  // the count the back end announced, from the first page that carried one
        while let url = next {
            number += 1
            let answer = try await fetch(url, changeTracking: isDelta ? .delta : single ? .none : .preferred)!
            bytes += answer.count
            var page = DownloadedPage(set: set, number: number, url: url)
            var nextLink: String?
            do throws(ODataError) {
                if single {
                    page.entities = [try ODataPayload.decodeEntity(answer).jsonV4]
                } else if isDelta {
                    page.changes = try ODataPayload.decodeEntitySet(answer)
                    (nextLink, page.deltaLink) = (page.changes.nextLink, page.changes.deltaLink)
                } else {
                    let decoded = try ODataPayload.decodeEntitySetAsV4(answer)
                    page.entities = decoded.entities
                    (nextLink, page.deltaLink) = (decoded.nextLink, decoded.deltaLink)
                    total = total ?? decoded.count
                }
            } catch where error == .malformedNextLink {
                throw unreadableNextLink(query, set: set, page: number, url: url, error.message)
            } catch {
                throw OfflineODataError(.downloadFailed, "defining query '\(query.name)': the \(isDelta ? "delta answer" : "answer") of GET \(url) is not an OData payload: \(error.message)")
            }
            if let nextLink {
                do { page.next = try absolute(nextLink) } catch {
                    throw unreadableNextLink(query, set: set, page: number, url: url, "'\(nextLink)' is not a URL under the service root")
                }
            }
            entities += isDelta ? page.changes.entities.count : page.entities.count
            (page.totalEntities, page.totalBytes) = (entities, bytes)
            next = page.next
            try await body(page)
            reportProgress(OfflineODataDownloadProgress(definingQuery: query.name, entities: entities, bytes: bytes, isComplete: next == nil,
                                                        total: total))
        }
    }

    /// The error of a page whose next link cannot be read: the rest of the set cannot be either.
    private func unreadableNextLink(_ query: OfflineODataDefiningQuery, set: String, page: Int, url: String, _ reason: String) -> OfflineODataError {
        OfflineODataError(.invalidNextLink,
                          "defining query '\(query.name)': page \(page) of '\(set)' (GET \(url)) has a next link that cannot be read, so the rest of '\(set)' cannot be: \(reason)",
                          entitySet: set, page: page)
    }
}
