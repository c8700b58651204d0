/// An error of the key kit: a key, a passphrase, a key derivation, a key envelope or a key store.
///
/// Match a kind with its static member, as with an enum case (`catch KeyError.wrongKey { … }`). Equality looks at
/// the kind only, not at the detail text. The caches and stores that use the kit report these as their own errors
/// (`CacheError.wrongKey`, `OfflineODataError.wrongKey`, …); a caller of the kit itself meets them as they are. No
/// detail text holds a passphrase or key material.
public struct KeyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kinds, for the caches and stores that map them to their own errors.
    public enum Kind: Hashable, Sendable {
        /// A key has the wrong size or a passphrase is empty.
        case invalidKey
        /// The passphrase does not open the envelope.
        case wrongKey
        /// A key derivation's parameters are out of range, or the derivation failed.
        case invalidDerivation
        /// Stored envelope bytes are not an envelope.
        case corruptEnvelope
        /// A key store could not load or save its key.
        case keyStore
        /// A key store holds no key where one must exist.
        case keyUnavailable
    }

    /// The kind of error.
    public let kind: Kind
    /// What went wrong, in words (for logs; not compared by `==`).
    public let detail: String
    /// The error that caused this one, when there is one.
    public let underlying: (any Error & Sendable)?

    private init(_ kind: Kind, _ detail: String, underlying: (any Error & Sendable)? = nil) {
        self.kind = kind
        self.detail = detail
        self.underlying = underlying
    }

    /// A key has the wrong size or a passphrase is empty.
    public static let invalidKey = KeyError(.invalidKey, "invalid key")
    /// The passphrase does not open the envelope.
    public static let wrongKey = KeyError(.wrongKey, "the key does not open the key envelope")
    /// A key derivation's parameters are out of range, or the derivation failed.
    public static let invalidDerivation = KeyError(.invalidDerivation, "invalid key derivation")
    /// Stored envelope bytes are not an envelope.
    public static let corruptEnvelope = KeyError(.corruptEnvelope, "the key envelope is malformed")
    /// A key store could not load or save its key.
    public static let keyStore = KeyError(.keyStore, "the key store failed")
    /// A key store holds no key where one must exist.
    public static let keyUnavailable = KeyError(.keyUnavailable, "the key store holds no key")

    /// The same kind of error with a more precise detail text and, when there is one, the error that caused it.
    ///
    /// - Parameters:
    ///   - detail: What exactly was wrong.
    ///   - underlying: The error that caused this one; the default is none.
    /// - Returns: An error equal to `self` (same kind) carrying `detail` and `underlying`.
    public func with(detail: String, underlying: (any Error & Sendable)? = nil) -> KeyError {
        KeyError(kind, detail, underlying: underlying)
    }

    /// Compares kinds only.
    public static func == (lhs: KeyError, rhs: KeyError) -> Bool { lhs.kind == rhs.kind }

    /// Hashes the kind only.
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// The kind and the detail text.
    public var description: String { "KeyError.\(kind): \(detail)" }
}
