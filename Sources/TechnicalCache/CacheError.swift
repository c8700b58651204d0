public import ODataKeys

/// An error of the technical cache, its sealing (encryption) or its key store.
///
/// Match a kind with its static member, as with an enum case:
///
/// ```swift
/// do { try await cache.rekey(to: key) }
/// catch CacheError.inUseElsewhere { … }
/// ```
///
/// (`error == .wrongKey` and a `case CacheError.wrongKey:` in a `switch` work too.) Equality looks at the kind
/// only, not at the detail text; ``underlying`` keeps the error that caused this one (an `LMDBError`, a lock's or
/// a file system's failure) as a value.
public struct CacheError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case notOpen
        case alreadyOpen
        case inUseElsewhere
        case cacheIsOpen
        case wrongKey
        case keyUnavailable
        case encryptionMismatch
        case invalidConfiguration
        case invalidKey
        case authenticationFailed
        case corruptRecord
        case storage
        case keyStore
        case fileSystem
        case invalidEntry
    }

    private let code: Code
    /// What went wrong, in words (for logs; not compared by `==`).
    public let detail: String
    /// The error that caused this one (the storage's `LMDBError`, a file system or lock failure), when there is one.
    public let underlying: (any Error & Sendable)?

    private init(_ code: Code, _ detail: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.detail = detail
        self.underlying = underlying
    }

    /// The cache is closed (or was closed while the operation ran).
    public static let notOpen = CacheError(.notOpen, "the cache is not open")
    /// The cache directory is already open in this process (one `ResponseCache` per directory and process).
    public static let alreadyOpen = CacheError(.alreadyOpen, "the cache directory is already open")
    /// Another process holds the cache in a way that excludes this operation: it has the cache open while
    /// this one asks for `reset()` or `rekey(to:)` (which need the cache to themselves), or it is running
    /// one of those while this one opens. Nothing was changed; the detail names the other process.
    public static let inUseElsewhere = CacheError(.inUseElsewhere, "another process holds the cache")
    /// The operation needs a closed cache (for example `reset()`), but the cache is open.
    public static let cacheIsOpen = CacheError(.cacheIsOpen, "the cache is open; close it first")
    /// The encryption key does not match the cache's key-check record; nothing was erased.
    public static let wrongKey = CacheError(.wrongKey, "the encryption key does not match this cache")
    /// The key store holds no key for an existing encrypted cache; nothing was erased.
    public static let keyUnavailable = CacheError(.keyUnavailable, "the key store holds no key for this encrypted cache")
    /// The cache is encrypted but was opened with encryption disabled, or the other way round.
    public static let encryptionMismatch = CacheError(.encryptionMismatch, "the cache's encryption setting does not match")
    /// A configuration value is out of range.
    public static let invalidConfiguration = CacheError(.invalidConfiguration, "invalid cache configuration")
    /// A key has the wrong size or the passphrase is empty.
    public static let invalidKey = CacheError(.invalidKey, "invalid key")
    /// Sealed data failed authentication: it was tampered with, corrupted, or sealed with another key.
    public static let authenticationFailed = CacheError(.authenticationFailed, "sealed data failed authentication")
    /// A stored record could not be decoded.
    public static let corruptRecord = CacheError(.corruptRecord, "a stored record could not be decoded")
    /// The storage (LMDB) failed.
    public static let storage = CacheError(.storage, "the cache storage failed")
    /// The key store could not load or save the key.
    public static let keyStore = CacheError(.keyStore, "the key store failed")
    /// An entry given to the cache is invalid (for example a status outside 100…999).
    public static let invalidEntry = CacheError(.invalidEntry, "invalid cache entry")
    /// A file or directory could not be created, locked or removed.
    public static let fileSystem = CacheError(.fileSystem, "a cache file operation failed")

    /// The cache's error for a failure of the key kit (`ODataKeys`): the same kind where the cache has one, the
    /// kit's detail text (which names no key material) and the kit's error as ``underlying``.
    ///
    /// - Parameter error: What the key kit threw.
    public init(_ error: KeyError) {
        let code: Code = switch error.kind {
        case .invalidKey: .invalidKey
        case .wrongKey: .wrongKey
        case .invalidDerivation: .invalidConfiguration
        case .corruptEnvelope: .corruptRecord
        case .keyStore: .keyStore
        case .keyUnavailable: .keyUnavailable
        }
        self.init(code, code == .wrongKey ? CacheError.wrongKey.detail : error.detail, underlying: error)
    }

    /// The same kind of error with a more precise detail text and, when there is one, the error that caused it.
    ///
    /// - Parameters:
    ///   - detail: What exactly was wrong.
    ///   - underlying: The error that caused this one; the default is none.
    /// - Returns: An error equal to `self` (same kind) carrying `detail` and `underlying`.
    public func with(detail: String, underlying: (any Error & Sendable)? = nil) -> CacheError {
        CacheError(code, detail, underlying: underlying)
    }

    /// A payload-free description of the kind, safe to log.
    public var shortDescription: String {
        switch code {
        case .notOpen: return "CacheError.notOpen"
        case .alreadyOpen: return "CacheError.alreadyOpen"
        case .inUseElsewhere: return "CacheError.inUseElsewhere"
        case .cacheIsOpen: return "CacheError.cacheIsOpen"
        case .wrongKey: return "CacheError.wrongKey"
        case .keyUnavailable: return "CacheError.keyUnavailable"
        case .encryptionMismatch: return "CacheError.encryptionMismatch"
        case .invalidConfiguration: return "CacheError.invalidConfiguration"
        case .invalidKey: return "CacheError.invalidKey"
        case .authenticationFailed: return "CacheError.authenticationFailed"
        case .corruptRecord: return "CacheError.corruptRecord"
        case .storage: return "CacheError.storage"
        case .keyStore: return "CacheError.keyStore"
        case .fileSystem: return "CacheError.fileSystem"
        case .invalidEntry: return "CacheError.invalidEntry"
        }
    }

    /// The kind and the detail.
    public var description: String { "\(shortDescription): \(detail)" }

    /// Errors are equal when they are of the same kind.
    ///
    /// - Parameters:
    ///   - lhs: An error.
    ///   - rhs: Another error.
    /// - Returns: `true` when both are of the same kind, whatever their detail.
    public static func == (lhs: CacheError, rhs: CacheError) -> Bool { lhs.code == rhs.code }

    /// Hashes the kind.
    ///
    /// - Parameter hasher: The hasher to feed.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// Matches an arbitrary error against this kind, so `catch CacheError.wrongKey` works.
    ///
    /// - Parameters:
    ///   - pattern: The kind to match.
    ///   - error: The error that was thrown.
    /// - Returns: `true` when `error` is a `CacheError` of the same kind.
    public static func ~= (pattern: CacheError, error: any Error) -> Bool {
        (error as? CacheError) == pattern
    }
}
