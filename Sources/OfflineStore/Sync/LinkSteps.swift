import Foundation
import ODataCore
import ODataTyped

/// The store changes of a settled relationship request (``QueuedRequest/link``).
extension UploadSteps {
    /// An accepted relationship request: the holder of the foreign key is in step with the back end again once no
    /// queued request changes it any more; the next download reads it again (the change gave it a new ETag there,
    /// which a relationship answer does not carry).
    static func acceptedLink(_ entry: QueuedRequest, _ link: LinkChange, snapshotEnd: Int64) -> UploadStep {
        let (set, key) = split(link.holder)
        return { changes in
            try changes.dequeue(entry.id)
            guard var holder = try changes.current(set: set, key: key), holder.state == .updated, !holder.inErrorState,
                  try !changes.queuedRequests(after: 0).contains(where: { $0.changes(link.holder) })
            else { return }
            holder.state = .downloaded
            holder.original = nil
            holder.needsRefresh = true
            try changes.put(holder)
        }
    }

    /// A failed relationship request: the relationship goes back to its state before the request (a deleted link
    /// reappears) unless a later local change set the foreign key again, both ends go into error state, and the
    /// ErrorArchive entry (affected entity: the "from" end; request body: the "to" end) is written.
    static func failedLink(_ entry: QueuedRequest, _ link: LinkChange, archived: ErrorArchiveEntry) -> UploadStep {
        { changes in
            try changes.archiveError(archived)
            let (holderSet, holderKey) = split(link.holder)
            if var holder = try changes.current(set: holderSet, key: holderKey),
               link.after.allSatisfy({ property, value in (holder.entity[property] ?? .null) == value }) {
                for (property, value) in link.before { holder.entity[property] = value }
                try changes.put(holder)
            }
            for end in [entry.entity, link.target] {
                let (set, key) = split(end)
                guard var record = try changes.current(set: set, key: key) else { continue }
                record.inErrorState = true
                try changes.put(record)
            }
            try changes.dequeue(entry.id)
        }
    }
}
