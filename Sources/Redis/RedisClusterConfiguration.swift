/// How a ``RedisClient`` speaks to a Redis Cluster (see ``RedisConfiguration/cluster``); every property says its
/// default.
///
/// ```swift
/// var configuration = RedisConfiguration(host: "10.0.0.11", port: 6379, password: secret, username: "tier")
/// configuration.cluster = RedisClusterConfiguration(seeds: [.init(host: "10.0.0.12", port: 6379)])
/// let redis = try RedisClient(configuration: configuration)
/// ```
public struct RedisClusterConfiguration: Sendable, Hashable {
    /// More nodes to read the slot map from when the configuration's own host and port do not answer. The
    /// default is none.
    public var seeds: [RedisNodeAddress]
    /// The most `MOVED` and `ASK` redirects one command follows before it fails with
    /// ``RedisError/serverError``. The default is 5.
    public var maximumRedirects: Int

    /// Creates the options; every parameter has the default documented on its property.
    ///
    /// - Parameters:
    ///   - seeds: More seed nodes.
    ///   - maximumRedirects: The most redirects per command.
    public init(seeds: [RedisNodeAddress] = [], maximumRedirects: Int = 5) {
        self.seeds = seeds
        self.maximumRedirects = maximumRedirects
    }

    /// Checks every value's range.
    ///
    /// - Throws: ``RedisError/invalidArgument`` naming the value out of range.
    public func validate() throws(RedisError) {
        guard (1...100).contains(maximumRedirects) else {
            throw RedisError(.invalidArgument, "maximumRedirects must be 1…100, got \(maximumRedirects)")
        }
        for seed in seeds {
            guard !seed.host.isEmpty, !seed.host.utf8.contains(0), (1...65535).contains(seed.port) else {
                throw RedisError(.invalidArgument, "a seed must have a host and a port 1…65535, got \(seed)")
            }
        }
    }
}

/// A node's address: a host name or IP address and a TCP port.
public struct RedisNodeAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host name or IP address.
    public var host: String
    /// The TCP port.
    public var port: Int

    /// Creates an address.
    ///
    /// - Parameters:
    ///   - host: The host name or IP address.
    ///   - port: The TCP port.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `host:port`.
    public var description: String { "\(host):\(port)" }
}

/// What a cluster client's router did since it was created (``RedisClient/clusterStatistics``).
public struct RedisClusterStatistics: Sendable, Hashable {
    /// `MOVED` redirects followed (each updated the slot map).
    public var movedRedirects = 0
    /// `ASK` redirects followed (`ASKING` and one retry on the named node).
    public var askRedirects = 0
    /// `CLUSTERDOWN` answers seen.
    public var clusterDownReplies = 0
    /// Slot maps read (`CLUSTER SLOTS`), the first one included.
    public var mapRefreshes = 0
    /// Commands that failed because they met more redirects than ``RedisClusterConfiguration/maximumRedirects``.
    public var redirectLimitsReached = 0

    /// Creates zero counters.
    public init() {}
}
