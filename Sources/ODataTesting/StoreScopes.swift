public import Foundation
public import OfflineStore
public import OnlineStore
import TechnicalCache

/// The key derivation of a store a test opens when its options keep the standard one: a throwaway store needs no
/// protection against guessing, and the standard 600,000 PBKDF2 rounds cost about 0.4 s per open.
let testKeyDerivation = KeyDerivation.pbkdf2(rounds: 1_000)

/// Runs `body` with a new, empty temporary directory and removes the directory afterwards, whether `body` returned
/// or threw.
///
/// - Parameters:
///   - isolation: The caller's actor; `body` runs on it.
///   - body: Receives the directory's URL.
/// - Returns: What `body` returns.
/// - Throws: What `body` throws, or the error of creating or removing the directory.
public func withTemporaryDirectory<Result>(isolation: isolated (any Actor)? = #isolation,
                                           _ body: (URL) async throws -> Result) async throws -> Result {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("odata-testing-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let result: Result
    do {
        result = try await body(directory)
    } catch {
        try FileManager.default.removeItem(at: directory)
        throw error
    }
    try FileManager.default.removeItem(at: directory)
    return result
}

extension ScriptedTransport {
    /// Opens an `OnlineODataStore` on this transport at ``serviceRoot``, its cache in a fresh temporary directory,
    /// runs `body` with it, then closes the store and removes the directory (also when `body` throws).
    ///
    /// ```swift
    /// try await transport.withOnlineStore { store in
    ///     let response = try await store.response(for: .get("Products"))
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - options: The store's options; their `storeDirectory` is replaced by the temporary directory, and the
    ///     standard `cacheKeyDerivation` by 1,000 PBKDF2 rounds (a throwaway cache, opened fast). The default is
    ///     `OnlineStoreOptions()` (a cache under a random key kept in that directory).
    ///   - isolation: The caller's actor; `body` runs on it.
    ///   - body: Receives the open store.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or the error of making, opening or removing the store.
    public func withOnlineStore<Result>(options: OnlineStoreOptions = OnlineStoreOptions(),
                                        isolation: isolated (any Actor)? = #isolation,
                                        _ body: (OnlineODataStore) async throws -> Result) async throws -> Result {
        try await withTemporaryDirectory { directory in
            var options = options
            options.storeDirectory = directory
            if options.cacheKeyDerivation == .standard { options.cacheKeyDerivation = testKeyDerivation }
            let store = try OnlineODataStore(serviceRoot: serviceRoot, options: options, transport: self)
            defer { store.close() }
            try await store.open()
            return try await body(store)
        }
    }

    /// Makes an `OfflineODataProvider` on this transport at ``serviceRoot`` in a fresh temporary directory, adds the
    /// defining queries and opens it (the initial download reads `$metadata` and each defining query through this
    /// transport, so script those first), runs `body`, then closes the provider and removes the directory (also
    /// when `body` throws).
    ///
    /// - Parameters:
    ///   - parameters: The provider's parameters; their `storePath` is replaced by the temporary directory, their
    ///     `transport` by this one, and the standard `keyDerivation` by 1,000 PBKDF2 rounds (a throwaway store,
    ///     opened fast). The default is `OfflineODataParameters()` (encrypted under a random key kept in that
    ///     directory).
    ///   - definingQueries: The defining queries to add before opening; the default is none.
    ///   - open: Whether to open the provider before `body`; the default is `true`. Pass `false` to test the open.
    ///   - isolation: The caller's actor; `body` runs on it.
    ///   - body: Receives the provider.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or the error of making, opening or removing the store.
    public func withOfflineStore<Result>(parameters: OfflineODataParameters = OfflineODataParameters(),
                                         definingQueries: [OfflineODataDefiningQuery] = [], open: Bool = true,
                                         isolation: isolated (any Actor)? = #isolation,
                                         _ body: (OfflineODataProvider) async throws -> Result) async throws -> Result {
        try await withTemporaryDirectory { directory in
            var parameters = parameters
            parameters.storePath = directory.path
            parameters.transport = self
            if parameters.keyDerivation == .standard { parameters.keyDerivation = testKeyDerivation }
            let provider = try OfflineODataProvider(serviceRoot: serviceRoot, parameters: parameters)
            do {
                for query in definingQueries { try await provider.add(definingQuery: query) }
                if open { try await provider.open() }
                let result = try await body(provider)
                await provider.close()
                return result
            } catch {
                await provider.close()
                throw error
            }
        }
    }
}
