/// An error of the offline store: a state the call is not allowed in, a refused open, a bad
/// defining query or request, a failed download.
///
/// Compare ``code`` with the static members (`error.code == .storeLocked`); ``message`` says what
/// exactly was wrong. ``previousUser`` is set for ``Code/userSwitchUploadFailed`` (SAP error -10425) and
/// ``Code/pendingRequestsOfAnotherUser``.
public struct OfflineODataError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of an ``OfflineODataError``.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        /// The numeric code SAP's offline store uses for this kind, when there is one.
        public let number: Int
        private init(_ name: String, _ number: Int) {
            self.name = name
            self.number = number
        }

        /// The store is not open (or already closed).
        public static let notOpen = Code("notOpen", -10001)
        /// The store is already open in this process or another one.
        public static let storeLocked = Code("storeLocked", -10002)
        /// The store files belong to another service root.
        public static let serviceRootMismatch = Code("serviceRootMismatch", -10003)
        /// The encryption key does not open the store.
        public static let wrongKey = Code("wrongKey", -10004)
        /// The store's encryption setting (on/off) differs from the parameters.
        public static let encryptionMismatch = Code("encryptionMismatch", -10005)
        /// A parameter cannot be used.
        public static let invalidParameters = Code("invalidParameters", -10006)
        /// A defining query is malformed or duplicated.
        public static let invalidDefiningQuery = Code("invalidDefiningQuery", -10007)
        /// The initial download failed; the store stays empty and the next open starts over.
        public static let downloadFailed = Code("downloadFailed", -10008)
        /// The back end's `$metadata` could not be read or understood.
        public static let invalidMetadata = Code("invalidMetadata", -10009)
        /// A local request cannot be executed (unknown entity set, bad key, bad body…).
        public static let invalidRequest = Code("invalidRequest", -10010)
        /// The entity addressed by a local request does not exist.
        public static let entityNotFound = Code("entityNotFound", -10011)
        /// An entity with the same key exists already.
        public static let entityExists = Code("entityExists", -10012)
        /// The offline store has no technical cache and no passive mode.
        public static let unsupported = Code("unsupported", -10013)
        /// The stored data could not be read or written (a corrupt or tampered page, a full disk, an SQLite failure).
        public static let storage = Code("storage", -10014)
        /// Pending requests of the previous user could not all be uploaded (SAP: -10425).
        public static let userSwitchUploadFailed = Code("userSwitchUploadFailed", -10425)
        /// The store holds requests queued by another user and ``OfflineODataParameters/forceUploadOnUserSwitch``
        /// is off: they are neither sent with the current user's credentials nor dropped.
        public static let pendingRequestsOfAnotherUser = Code("pendingRequestsOfAnotherUser", -10015)
        /// The store was written by a newer version of this library, in a format this one does not read; it is
        /// left as it is.
        public static let unsupportedStoreFormat = Code("unsupportedStoreFormat", -10016)
        /// A store of an earlier format could not be migrated at open; it is left as it was. No format needs a
        /// migration today (the LMDB format of development builds is refused with ``unsupportedStoreFormat``).
        public static let migrationFailed = Code("migrationFailed", -10017)

        /// A page of a download names a next page in a form that cannot be read (`"__next": 42`, `{"uri": 7}`, a
        /// link that is no URL): the download fails rather than end the set early, and applies nothing.
        /// ``OfflineODataError/entitySet`` and ``OfflineODataError/page`` say where.
        public static let invalidNextLink = Code("invalidNextLink", -10018)

        /// The kind's name, for logs.
        public var description: String { name }
    }

    /// The kind of error.
    public let code: Code
    /// What was wrong, for a person.
    public let message: String
    /// The previous user whose pending requests blocked a user switch.
    public let previousUser: String?
    /// The back end's HTTP status when the error is its answer (a download that was refused), else nil.
    public let httpStatus: Int?
    /// The entity set a download was reading, for ``Code/invalidNextLink``; else nil.
    public let entitySet: String?
    /// The page (from 1, counted from where the read began) whose next link could not be read, for
    /// ``Code/invalidNextLink``; else nil.
    public let page: Int?

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: The kind.
    ///   - message: What was wrong.
    ///   - previousUser: The previous user, for ``Code/userSwitchUploadFailed``.
    ///   - httpStatus: The back end's HTTP status, when the error is its answer.
    ///   - entitySet: The entity set a download was reading, for ``Code/invalidNextLink``.
    ///   - page: The page whose next link could not be read, for ``Code/invalidNextLink``.
    public init(_ code: Code, _ message: String, previousUser: String? = nil, httpStatus: Int? = nil,
                entitySet: String? = nil, page: Int? = nil) {
        self.code = code
        self.message = message
        self.previousUser = previousUser
        self.httpStatus = httpStatus
        self.entitySet = entitySet
        self.page = page
    }

    /// `code (number): message`.
    public var description: String { "\(code) (\(code.number)): \(message)" }

}
