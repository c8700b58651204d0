import CurlHTTP
import Foundation
import ODataCore
import ODataTyped
import ODataQuery
import ODataTelemetry
import Synchronization
public import ODataCore
public import ODataSession

/// An offline OData store: a local, encrypted copy of the entities that its defining queries
/// select, read and changed locally, with the changes queued as requests for a later upload.
///
/// Create it with a service root and ``OfflineODataParameters``, add defining queries, then
/// ``open()``: the first open downloads every defining query (following server-driven paging,
/// with `$expand`ed relationships) into an encrypted SQLCipher database; later opens need no network. Requests run
/// through ``execute(_:)`` with the same `ODataRequest` model as the online store and are
/// answered with the same OData V4 JSON the back end gives.
///
/// One store directory (`storePath/storeName`) can be open only once at a time, in this process
/// or any other (an exclusive lock on `storePath/storeName.lock`, which the kernel drops when the process ends).
///
/// ## Topics
/// - ``add(definingQuery:)``
/// - ``open()``
/// - ``execute(_:)``
/// - ``hasPendingUpload``
/// - ``cancelPendingRequests()``
/// - ``close()``
public actor OfflineODataProvider {
    /// The service root the store belongs to (ends with `/`).
    public nonisolated let serviceRoot: String
    /// The parameters the provider was created with.
    public nonisolated let parameters: OfflineODataParameters
    /// The session with the back end: authentication, CSRF tokens and cookies
    /// (``OfflineODataParameters/session``). Downloads and uploads go through it; it ends at ``close()``.
    public nonisolated let session: ServiceSession
    /// What the session sends through: the parameters' transport, or a `CurlTransport` made on first use and
    /// shut down at ``close()``.
    private nonisolated let baseTransport: any HTTPTransport
    /// The base transport with the parameters' telemetry: what every session sends through.
    private nonisolated let instrumentedTransport: any HTTPTransport
    /// Held strongly until replaced (``setDelegate(_:)``): see ``setDelegate(_:)`` for the rule.
    private var delegate: (any OfflineODataDelegate)?

    var definingQueryList: [OfflineODataDefiningQuery] = []
    private(set) var state: OfflineODataStoreState = .closed
    var store: EntityStore?
    private var lock: StorageLock?
    var configuration: StoreConfiguration?
    var counters = StoreCounters()
    var model = ServiceModel() { didSet { session.defaultUpdateMethod = model.isV2 ? .merge : .patch } }  // V2 (EDMX 1.0): MERGE unless the parameters say
    /// The user whose credentials back-end requests carry instead of the current user's (during
    /// the upload of a previous user's requests at open).
    var credentialsUser: String?
    /// The previous user's own session while their requests are uploaded at open: it shares no cookie,
    /// token or credential with the current user's ``session``.
    private var previousUserSession: ServiceSession?
    /// The open store and its model, for reads that do not enter the actor.
    nonisolated let readSnapshot = ReadSnapshot()
    /// Who is told when a local change was queued (``OfflineSynchronizer``), by token.
    nonisolated let queueObservers = LockedValue<(next: UInt64, handlers: [UInt64: @Sendable () -> Void])>((0, [:]))

    /// Creates a provider; nothing is opened or sent until ``open()``.
    ///
    /// - Parameters:
    ///   - serviceRoot: The back end's service root, an absolute `http(s)` URL.
    ///   - parameters: Store name, path, encryption, paging and upload settings.
    ///   - delegate: Receives state changes, failed requests and progress; held strongly until replaced with
    ///     ``setDelegate(_:)``.
    /// - Throws: `OfflineODataError.invalidParameters` for a service root that is not an absolute
    ///   http(s) URL or unusable parameters.
    public init(serviceRoot: String, parameters: OfflineODataParameters = OfflineODataParameters(),
                delegate: (any OfflineODataDelegate)? = nil) throws {
        do {
            _ = try ODataRequest.join(serviceRoot: serviceRoot, relative: "")
        } catch {
            throw OfflineODataError(.invalidParameters, "the service root '\(serviceRoot)' is not an absolute http(s) URL without query")
        }
        try parameters.validate()
        self.serviceRoot = serviceRoot.hasSuffix("/") ? serviceRoot : serviceRoot + "/"
        self.parameters = parameters
        self.delegate = delegate
        baseTransport = parameters.transport ?? LazyCurlTransport(configuration: parameters.transportConfiguration)
        instrumentedTransport = InstrumentedTransport.wrapping(baseTransport, telemetry: parameters.telemetry)
        session = ServiceSession(serviceRoot: self.serviceRoot, options: parameters.session, transport: instrumentedTransport)
    }

    /// The service root of an existing store, read from its (encrypted) configuration.
    ///
    /// - Parameter parameters: The store's name, path and key.
    /// - Returns: The service root, or `nil` when no complete store exists there.
    /// - Throws: `OfflineODataError` — `.storeLocked` when the store is open, `.wrongKey`,
    ///   `.encryptionMismatch`, `.unsupportedStoreFormat` (a newer format, or the LMDB format), `.storage`.
    public static func storedServiceRoot(parameters: OfflineODataParameters) throws -> String? {
        try parameters.validate()
        try EntityStore.refuseLMDBFormat(in: parameters.storeDirectory)
        guard FileManager.default.fileExists(atPath: StoreKeyCheck.path(in: parameters.storeDirectory)) else { return nil }
        let lock = try StorageLock.store(parameters.storeDirectory)
        defer { lock.release() }
        let store = try EntityStore.open(directory: parameters.storeDirectory, parameters: parameters)
        defer { store.close() }
        guard let (configuration, _) = try store.configuration(), configuration.downloadComplete else { return nil }
        return configuration.serviceRoot
    }

    // MARK: Defining queries

    /// Adds a defining query; it is checked now, and downloaded at the first open.
    ///
    /// - Parameter definingQuery: The query.
    /// - Throws: `OfflineODataError.invalidDefiningQuery` naming the query when its name is empty or
    ///   taken, its path is not an entity set (with an optional key), or an option is malformed.
    public func add(definingQuery: OfflineODataDefiningQuery) throws {
        guard !definingQuery.name.isEmpty else {
            throw OfflineODataError(.invalidDefiningQuery, "a defining query needs a name (query '\(definingQuery.query)')")
        }
        guard !definingQueryList.contains(where: { $0.name == definingQuery.name }) else {
            throw OfflineODataError(.invalidDefiningQuery, "a defining query named '\(definingQuery.name)' exists already")
        }
        do {
            _ = try LocalRequest(definingQuery.query, serviceRoot: serviceRoot, checkDefiningQuery: true)
        } catch {
            throw OfflineODataError(.invalidDefiningQuery, "defining query '\(definingQuery.name)': \(error.message)")
        }
        for property in definingQuery.indexes where property.isEmpty || !property.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) {
            throw OfflineODataError(.invalidDefiningQuery, "defining query '\(definingQuery.name)': the index '\(property)' is not a property name")
        }
        if store != nil { try checkDefiningQuery(definingQuery, against: model) }
        definingQueryList.append(definingQuery)
    }

    /// Refuses a defining query (already checked to parse) whose entity set the service's model cannot download:
    /// no such set, or a set whose type has no key.
    func checkDefiningQuery(_ definingQuery: OfflineODataDefiningQuery, against model: ServiceModel) throws(OfflineODataError) {
        // `add(definingQuery:)` refused a query that does not parse, with its error: nothing is dropped here.
        if let set = try? LocalRequest(definingQuery.query, serviceRoot: serviceRoot).path.segments.first?.name,
           let problem = model.definingQueryProblem(set: set) {
            throw OfflineODataError(.invalidDefiningQuery, "defining query '\(definingQuery.name)': \(problem)")
        }
    }

    /// Removes a defining query by name (its data goes at the next download; see part 2).
    ///
    /// - Parameter name: The defining query's name.
    /// - Returns: Whether a query of that name was removed.
    @discardableResult
    public func remove(definingQuery name: String) -> Bool {
        guard let index = definingQueryList.firstIndex(where: { $0.name == name }) else { return false }
        definingQueryList.remove(at: index)
        return true
    }

    /// The defining queries, in the order they were added.
    public var definingQueries: [OfflineODataDefiningQuery] { definingQueryList }

    /// The store's current state.
    public var currentState: OfflineODataStoreState { state }

    // MARK: Open and close

    /// Opens the store; the first open performs the initial download.
    ///
    /// Opening an open store does nothing. A store whose initial download did not complete is
    /// wiped and downloaded again. On failure the store is closed and no half-store remains.
    ///
    /// It runs on the background threads (``OfflineODataParameters/backgroundExecutor``), at their lower priority,
    /// beside the process's other work; the caller is resumed where it runs.
    ///
    /// - Throws: `OfflineODataError` — `.storeLocked` when the store is open elsewhere,
    ///   `.wrongKey` (nothing erased), `.encryptionMismatch`, `.serviceRootMismatch`,
    ///   `.unsupportedStoreFormat` for a store of a newer version or of the unreleased LMDB format (left as it is),
    ///   `.invalidDefiningQuery` when none is given for a new store, `.downloadFailed` or
    ///   `.invalidMetadata` when the initial download fails.
    public nonisolated func open() async throws {
        try await parameters.backgroundExecutor.run { try await self.performOpen() }
    }

    /// ``open()``, on the actor.
    private func performOpen() async throws {
        guard state == .closed else { return }
        setState(.opening)
        do {
            try FileManager.default.createDirectory(atPath: parameters.storePath, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            let lock = try StorageLock.store(parameters.storeDirectory)
            self.lock = lock
            let store = try EntityStore.open(directory: parameters.storeDirectory, parameters: parameters)
            self.store = store
            if let (config, counters) = try store.configuration(), config.downloadComplete {
                guard config.serviceRoot == serviceRoot else {
                    throw OfflineODataError(.serviceRootMismatch, "the store at \(parameters.storeDirectory) belongs to \(config.serviceRoot), not \(serviceRoot)")
                }
                model = try ServiceModel.parse(Data(config.metadata.utf8), references: parameters.metadataReferences)
                configuration = config
                self.counters = counters
                for query in config.definingQueries where !definingQueryList.contains(where: { $0.name == query.name }) {
                    definingQueryList.append(query)
                }
                try await store.declareIndexes(try DeclaredIndexes.wanted(definingQueryList, model: model, serviceRoot: serviceRoot), model: model)
                try await switchUser(from: config, store: store)
            } else {
                try await reported(.initialDownload) { try await initialDownload(store: store) }
            }
            readSnapshot.set(store, model)
            setState(.open)
        } catch {
            shutDown()
            setState(.closed)
            throw error
        }
    }

    /// Closes the store and releases its lock; it can be opened again.
    public func close() {
        guard state != .closed else { return }
        shutDown()
        setState(.closed)
    }

    /// When the store's requests were queued by another user: with `forceUploadOnUserSwitch`,
    /// uploads them first with that user's credentials; then the store belongs to the current user.
    /// Without it, the open is refused: another user's requests are never sent with the current
    /// user's credentials.
    ///
    /// - Throws: `OfflineODataError.userSwitchUploadFailed` (-10425) naming the previous user when
    ///   a request fails (it stays in the ErrorArchive; the accepted ones are not sent again);
    ///   `.pendingRequestsOfAnotherUser` naming them without `forceUploadOnUserSwitch`.
    private func switchUser(from config: StoreConfiguration, store: EntityStore) async throws {
        guard let current = parameters.currentUser, config.user != current else { return }
        if !parameters.forceUploadOnUserSwitch, let previous = config.user, case let count = try store.queueCount(), count > 0 {
            throw OfflineODataError(.pendingRequestsOfAnotherUser,
                                    "the store holds \(count) requests queued by '\(previous)': open it as '\(previous)' and upload them, or set forceUploadOnUserSwitch",
                                    previousUser: previous)
        }
        if parameters.forceUploadOnUserSwitch, let previous = config.user, try store.queueCount() > 0 {
            readSnapshot.set(store, model)
            state = .open
            credentialsUser = previous
            var previousOptions = parameters.session
            previousOptions.authentication = nil  // the previous user's credentials are `credentials[previous]`
            previousUserSession = ServiceSession(serviceRoot: serviceRoot, options: previousOptions, transport: instrumentedTransport)
            previousUserSession?.defaultUpdateMethod = session.defaultUpdateMethod
            defer {
                credentialsUser = nil
                previousUserSession?.endSession()
                previousUserSession = nil
            }
            let result = try await performUpload()
            guard result.failed.isEmpty else {
                throw OfflineODataError(.userSwitchUploadFailed,
                                        "\(result.failed.count) of the requests queued by '\(previous)' failed to upload (see the ErrorArchive); the store stays with '\(previous)'",
                                        previousUser: previous)
            }
        }
        var updated = config
        updated.user = current
        let record = updated
        try await store.write { changes in try changes.putConfiguration(record) }
        configuration = updated
    }

    private func shutDown() {
        readSnapshot.clear()
        store?.close()
        store = nil
        lock?.release()
        lock = nil
        session.endSession()
        (baseTransport as? LazyCurlTransport)?.shutdown()
        configuration = nil
    }

    /// Sets the delegate that receives state changes, failed requests (``OfflineODataDelegate/offlineODataProvider(_:requestDidFail:)``)
    /// and progress from now on, replacing the one given to `init` or set before; `nil` removes it.
    ///
    /// The provider keeps a **strong** reference to its delegate until it is replaced or the provider goes away, so a
    /// delegate made on the spot keeps receiving callbacks without the caller holding it (the reference's
    /// `setRequestErrorDelegate:`). Every callback hands over the provider, so a delegate need not hold it; one that
    /// does makes a reference cycle, which `setDelegate(nil)` breaks when the work is done.
    ///
    /// - Parameter delegate: The new delegate, or `nil`.
    public func setDelegate(_ delegate: (any OfflineODataDelegate)?) {
        self.delegate = delegate
    }

    func setState(_ newState: OfflineODataStoreState) {
        state = newState
        delegate?.offlineODataProvider(self, didChangeState: newState)
    }

    func reportFailure(_ failure: ErrorArchiveEntry) {
        delegate?.offlineODataProvider(self, requestDidFail: failure)
    }

    func reportConflict(_ resolved: OfflineODataResolvedConflict) {
        delegate?.offlineODataProvider(self, didResolveConflict: resolved)
    }

    func reportUploadProgress(_ progress: OfflineODataUploadProgress) {
        delegate?.offlineODataProvider(self, didUpdateUploadProgress: progress)
    }

    func reportProgress(_ progress: OfflineODataDownloadProgress) {
        delegate?.offlineODataProvider(self, didUpdateDownloadProgress: progress)
    }

    func openStore() throws(OfflineODataError) -> EntityStore {
        guard let store, state != .closed, state != .opening else {
            throw OfflineODataError(.notOpen, "the offline store is not open")
        }
        return store
    }

    func transport() throws -> any HTTPTransport {
        previousUserSession ?? session
    }

    // MARK: What the offline store does not have

    /// The offline store has no technical cache and no passive mode: this always throws.
    ///
    /// - Parameter passive: The mode asked for.
    /// - Throws: `OfflineODataError.unsupported`.
    public func setPassiveMode(_ passive: Bool) throws {
        throw OfflineODataError(.unsupported, "the offline store has no passive mode (it never uses the technical cache)")
    }

    /// The offline store has no technical cache: this always throws.
    ///
    /// - Throws: `OfflineODataError.unsupported`.
    public func clearTechnicalCache() throws {
        throw OfflineODataError(.unsupported, "the offline store has no technical cache")
    }

    // MARK: Pending requests

    /// Whether requests wait in the queue for an upload.
    ///
    /// - Throws: `OfflineODataError.notOpen` on a closed store.
    public var hasPendingUpload: Bool {
        get throws {
            try openStore().queueCount() > 0
        }
    }

    /// The queued requests, in queue order, as the `RequestQueue` entity set shows them.
    ///
    /// - Returns: One entity per request (RequestID, Method, URL, Body, CustomTag, Status, AffectedEntity).
    /// - Throws: `OfflineODataError.notOpen` on a closed store, `.storage` for an unreadable record.
    public func pendingRequests() throws -> [ODataEntity] {
        try openStore().queuedRequests().map { ODataEntity(properties: $0.jsonObject()) }
    }

    /// Undoes every local change: the queue empties, updated entities return to their downloaded
    /// state, created ones disappear, deleted ones return.
    ///
    /// - Throws: `OfflineODataError.notOpen` on a closed store, `.storage` when the store cannot be written.
    public func cancelPendingRequests() async throws {
        let store = try openStore()
        try await store.write { changes in
            for var record in try changes.locallyChangedRecords() {
                if let original = record.original {
                    record.entity = original
                    record.original = nil
                    record.state = .downloaded
                    try changes.put(record)
                } else {
                    try changes.remove(set: record.set, key: record.key)
                }
            }
            try changes.clearQueue()
        }
    }
}

/// The open store and model, readable without entering the provider's actor.
final class ReadSnapshot: Sendable {
    private let value = LockedValue<(EntityStore, ServiceModel)?>(nil)

    var current: (EntityStore, ServiceModel)? { value.withLock { $0 } }

    /// The open store and model, for a read outside the actor.
    /// - Throws: `OfflineODataError.notOpen` when the store is not open.
    func opened() throws(OfflineODataError) -> (EntityStore, ServiceModel) {
        guard let current else { throw OfflineODataError(.notOpen, "the offline store is not open") }
        return current
    }

    func set(_ store: EntityStore, _ model: ServiceModel) { value.withLock { $0 = (store, model) } }

    func clear() { value.withLock { $0 = nil } }
}
