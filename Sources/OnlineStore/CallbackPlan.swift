/// The store's mode is TechnicalCache's (one name for passive mode in every module), re-exported so that code that
/// imports OnlineStore names it as before.
@_exported public import enum TechnicalCache.StoreMode

/// The state of a store's technical cache, as the state tables see it.
public enum CacheState: String, Sendable, Hashable, CaseIterable {
    /// Enabled and open: usable.
    case open
    /// Enabled but closed (for example while the process is idle).
    case closed
    /// Not enabled for this store.
    case disabled
}

/// What a request asks of the cache, as the state tables see it.
public enum RequestKind: String, Sendable, Hashable, CaseIterable {
    /// A read with `useCache=true`, or a `$batch` with at least one such read.
    case cachedRead
    /// Create/update/delete, a read with `useCache=false`, or a batch without a cached read.
    case other
}

/// Which callbacks an execution makes, decided before any I/O from SPEC's two state tables.
public enum CallbackPlan: Sendable, Hashable {
    /// `requestCacheResponse` (always, cached or not), then the server: `requestServerResponse`
    /// or `requestFailed`.
    case cacheThenServer
    /// Only the server: `requestServerResponse` or `requestFailed`.
    case serverOnly
    /// Passive mode's cached read: only the cache (`requestCacheResponse`), no network.
    case passiveRead
    /// `requestFailed` at once, for this reason.
    case failure(String)

    /// Whether the plan asks the technical cache.
    public var readsCache: Bool { self == .cacheThenServer || self == .passiveRead }
    /// Whether the plan goes to the server.
    public var contactsServer: Bool { self == .cacheThenServer || self == .serverOnly }

    /// SPEC's two state tables as one pure function.
    ///
    /// | mode | store | cache open | cache closed | cache disabled |
    /// |---|---|---|---|---|
    /// | active, cached read | open | cache + server | server | server |
    /// | active, other | open | server | server | server |
    /// | any | closed | failure | failure | failure |
    /// | passive, cached read | open | cache | failure | n/a |
    /// | passive, other | open | failure | failure | n/a |
    ///
    /// - Parameters:
    ///   - mode: the store's mode.
    ///   - storeIsOpen: whether the store is open.
    ///   - cache: the cache's state.
    ///   - kind: what the request asks of the cache.
    /// - Returns: the plan.
    public static func plan(mode: StoreMode, storeIsOpen: Bool, cache: CacheState, kind: RequestKind) -> CallbackPlan {
        guard storeIsOpen else { return .failure("the store is not open") }
        switch (mode, kind, cache) {
        case (.active, .cachedRead, .open): return .cacheThenServer
        case (.active, _, _): return .serverOnly
        case (.passive, _, .disabled): return .failure("passive mode needs the technical cache, which is disabled")
        case (.passive, .other, _): return .failure("passive mode answers cached reads only; this request needs the server")
        case (.passive, .cachedRead, .closed): return .failure("passive mode needs the technical cache, which is closed")
        case (.passive, .cachedRead, .open): return .passiveRead
        }
    }
}
