/// An error of the offline store: a state the call is not allowed in, a refused open, a bad
/// defining query or request, a failed download.
///
/// Match a kind with its static member, as with an enum case:
///
/// ```swift
/// do { try await provider.open() }
/// catch OfflineODataError.storeLocked { … }
/// ```
///
/// (`error == .storeLocked` and a `case OfflineODataError.storeLocked:` in a `switch` work too.) Errors are
/// equal when they are of the same kind. ``message`` says what exactly was wrong; ``errorNumber`` is the number
/// SAP's offline store uses for the kind; ``underlying`` is the error that caused this one, when there is one.
/// ``previousUser`` is set for ``userSwitchUploadFailed`` (SAP error -10425) and ``pendingRequestsOfAnotherUser``.
public struct OfflineODataError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Kind: String, Hashable, Sendable {
        case notOpen, storeLocked, serviceRootMismatch, wrongKey, encryptionMismatch, invalidParameters
        case invalidDefiningQuery, downloadFailed, invalidMetadata, invalidRequest, entityNotFound, entityExists
        case unsupported, storage, userSwitchUploadFailed, pendingRequestsOfAnotherUser, unsupportedStoreFormat
        case migrationFailed, invalidNextLink, backEndUnreachable, authenticationFailed, relationshipNotDownloaded
        case operationNotAvailableOffline

        /// The numeric code SAP's offline store uses for this kind.
        var number: Int {
            switch self {
            case .notOpen: return -10001
            case .storeLocked: return -10002
            case .serviceRootMismatch: return -10003
            case .wrongKey: return -10004
            case .encryptionMismatch: return -10005
            case .invalidParameters: return -10006
            case .invalidDefiningQuery: return -10007
            case .downloadFailed: return -10008
            case .invalidMetadata: return -10009
            case .invalidRequest: return -10010
            case .entityNotFound: return -10011
            case .entityExists: return -10012
            case .unsupported: return -10013
            case .storage: return -10014
            case .pendingRequestsOfAnotherUser: return -10015
            case .unsupportedStoreFormat: return -10016
            case .migrationFailed: return -10017
            case .invalidNextLink: return -10018
            case .backEndUnreachable: return -10019
            case .authenticationFailed: return -10020
            case .relationshipNotDownloaded: return -10021
            case .operationNotAvailableOffline: return -10022
            case .userSwitchUploadFailed: return -10425
            }
        }
    }

    private let kind: Kind
    /// What was wrong, for a person.
    public let message: String
    /// The error that caused this one (an SQLite failure, a transport error), when there is one.
    public let underlying: (any Error & Sendable)?
    /// The previous user whose pending requests blocked a user switch.
    public let previousUser: String?
    /// The back end's HTTP status when the error is its answer (a download that was refused), else nil.
    public let httpStatus: Int?
    /// The entity set a download was reading, for ``invalidNextLink``; else nil.
    public let entitySet: String?
    /// The page (from 1, counted from where the read began) whose next link could not be read, for
    /// ``invalidNextLink``; else nil.
    public let page: Int?
    /// What an upload stopped by ``backEndUnreachable`` did: sent, succeeded, failed, and how many requests are
    /// still queued; else nil.
    public let uploadResult: OfflineODataUploadResult?

    private init(_ kind: Kind) {
        self.kind = kind
        self.message = "\(kind)"
        self.underlying = nil
        self.previousUser = nil
        self.httpStatus = nil
        self.entitySet = nil
        self.page = nil
        self.uploadResult = nil
    }

    /// Creates an error of the same kind as `kind`.
    ///
    /// - Parameters:
    ///   - kind: The kind, one of the static members (`.storeLocked`).
    ///   - message: What was wrong.
    ///   - underlying: The error that caused this one, when there is one.
    ///   - previousUser: The previous user, for ``userSwitchUploadFailed``.
    ///   - httpStatus: The back end's HTTP status, when the error is its answer.
    ///   - entitySet: The entity set a download was reading, for ``invalidNextLink``.
    ///   - page: The page whose next link could not be read, for ``invalidNextLink``.
    ///   - uploadResult: What a stopped upload did, for ``backEndUnreachable``.
    public init(_ kind: OfflineODataError, _ message: String, underlying: (any Error & Sendable)? = nil,
                previousUser: String? = nil, httpStatus: Int? = nil, entitySet: String? = nil, page: Int? = nil,
                uploadResult: OfflineODataUploadResult? = nil) {
        self.kind = kind.kind
        self.message = message
        self.underlying = underlying
        self.previousUser = previousUser
        self.httpStatus = httpStatus
        self.entitySet = entitySet
        self.page = page
        self.uploadResult = uploadResult
    }

    /// The store is not open (or already closed). SAP number -10001.
    public static let notOpen = OfflineODataError(.notOpen)
    /// The store is already open in this process or another one. SAP number -10002.
    public static let storeLocked = OfflineODataError(.storeLocked)
    /// The store files belong to another service root. SAP number -10003.
    public static let serviceRootMismatch = OfflineODataError(.serviceRootMismatch)
    /// The encryption key does not open the store. SAP number -10004.
    public static let wrongKey = OfflineODataError(.wrongKey)
    /// The store's encryption setting (on/off) differs from the parameters. SAP number -10005.
    public static let encryptionMismatch = OfflineODataError(.encryptionMismatch)
    /// A parameter cannot be used. SAP number -10006.
    public static let invalidParameters = OfflineODataError(.invalidParameters)
    /// A defining query is malformed or duplicated. SAP number -10007.
    public static let invalidDefiningQuery = OfflineODataError(.invalidDefiningQuery)
    /// The initial download failed; the store stays empty and the next open starts over. SAP number -10008.
    public static let downloadFailed = OfflineODataError(.downloadFailed)
    /// The back end's `$metadata` could not be read or understood. SAP number -10009.
    public static let invalidMetadata = OfflineODataError(.invalidMetadata)
    /// A local request cannot be executed (unknown entity set, bad key, bad body…). SAP number -10010.
    public static let invalidRequest = OfflineODataError(.invalidRequest)
    /// The entity addressed by a local request does not exist. SAP number -10011.
    public static let entityNotFound = OfflineODataError(.entityNotFound)
    /// An entity with the same key exists already. SAP number -10012.
    public static let entityExists = OfflineODataError(.entityExists)
    /// The offline store has no technical cache and no passive mode. SAP number -10013.
    public static let unsupported = OfflineODataError(.unsupported)
    /// The stored data could not be read or written (a corrupt or tampered page, a full disk, an SQLite
    /// failure). SAP number -10014.
    public static let storage = OfflineODataError(.storage)
    /// Pending requests of the previous user could not all be uploaded. SAP number -10425.
    public static let userSwitchUploadFailed = OfflineODataError(.userSwitchUploadFailed)
    /// The store holds requests queued by another user and ``OfflineODataParameters/forceUploadOnUserSwitch``
    /// is off: they are neither sent with the current user's credentials nor dropped. SAP number -10015.
    public static let pendingRequestsOfAnotherUser = OfflineODataError(.pendingRequestsOfAnotherUser)
    /// The store was written by a newer version of this library, in a format this one does not read; it is
    /// left as it is. SAP number -10016.
    public static let unsupportedStoreFormat = OfflineODataError(.unsupportedStoreFormat)
    /// A store of an earlier format could not be migrated at open; it is left as it was. No format needs a
    /// migration today (the LMDB format of development builds is refused with ``unsupportedStoreFormat``).
    /// SAP number -10017.
    public static let migrationFailed = OfflineODataError(.migrationFailed)
    /// A page of a download names a next page in a form that cannot be read (`"__next": 42`, `{"uri": 7}`, a
    /// link that is no URL): the download fails rather than end the set early, and applies nothing.
    /// ``entitySet`` and ``page`` say where. SAP number -10018.
    public static let invalidNextLink = OfflineODataError(.invalidNextLink)
    /// The back end could not be reached: no answer came (refused, reset before a status line, no name, TLS, a
    /// timeout, a session step that got no answer) and the retry policy gave up. An upload stops there: what settled
    /// before is committed, the rest stays queued as it was (``uploadResult`` says how many), nothing goes to the
    /// ErrorArchive for the outage. A download applies nothing of the defining query it was reading (an initial
    /// download stays resumable). ``underlying`` is the transport's error. Not an SAP number: -10019.
    public static let backEndUnreachable = OfflineODataError(.backEndUnreachable)
    /// The back end refused the credentials (`401`, after the session renewed them where it can): an upload stops at
    /// the request it refused, which stays queued with every later one (``uploadResult``), for a person to fix the
    /// credentials; nothing is archived for it. Not an SAP number: -10020.
    public static let authenticationFailed = OfflineODataError(.authenticationFailed)
    /// A local read follows a navigation property whose links the store does not know for an entity: the service
    /// declares no referential constraint for it, and no defining query that brought the entity expanded it. The
    /// message names the entity, the navigation property and the defining queries to add `$expand` to; a
    /// relationship a download expanded and found empty still answers `[]`. Not an SAP number: -10021.
    public static let relationshipNotDownloaded = OfflineODataError(.relationshipNotDownloaded)
    /// A local request calls an action or function of the service (an import, or a bound operation after an entity or
    /// collection): its effect is the back end's to compute, so the offline store neither answers it nor queues it.
    /// The message names the operation; call it through an online store. Not an SAP number: -10022.
    public static let operationNotAvailableOffline = OfflineODataError(.operationNotAvailableOffline)

    /// The numeric code SAP's offline store uses for this kind of error, for example -10425 for
    /// ``userSwitchUploadFailed``.
    public var errorNumber: Int { kind.number }

    /// The kind alone, such as `storeLocked`: safe for logs and metric labels.
    public var shortDescription: String { kind.rawValue }

    /// `kind (number): message`.
    public var description: String { "\(kind.rawValue) (\(kind.number)): \(message)" }

    /// Errors are equal when they are of the same kind.
    ///
    /// - Parameters:
    ///   - lhs: An error.
    ///   - rhs: Another error.
    /// - Returns: `true` when both are of the same kind, whatever their message.
    public static func == (lhs: OfflineODataError, rhs: OfflineODataError) -> Bool { lhs.kind == rhs.kind }

    /// Hashes the kind.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// Matches an arbitrary error against this kind, so `catch OfflineODataError.storeLocked` works.
    ///
    /// - Parameters:
    ///   - pattern: The kind to match.
    ///   - error: The error that was thrown.
    /// - Returns: `true` when `error` is an `OfflineODataError` of the same kind.
    public static func ~= (pattern: OfflineODataError, error: any Error) -> Bool {
        (error as? OfflineODataError) == pattern
    }
}
