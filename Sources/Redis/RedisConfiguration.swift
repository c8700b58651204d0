/// Where a ``RedisClient`` connects and how long it waits; every property says its default.
public struct RedisConfiguration: Sendable, Hashable {
    /// The server's host name or IP address. The default is `127.0.0.1`.
    public var host: String
    /// The server's TCP port. The default is 6379.
    public var port: Int
    /// The longest a connection attempt may take. The default is 200 ms.
    public var connectTimeout: Duration
    /// The longest a command may wait for its reply (and for its bytes to be sent). The default is 100 ms.
    public var commandTimeout: Duration
    /// After a connection failure the client answers ``RedisError/unavailable`` at once, without trying
    /// the server, for this long; then the next command tries again. The default is 1 s.
    public var retryInterval: Duration
    /// The most connections the client keeps; commands from concurrent callers run on different connections,
    /// a caller waits only when all are busy. The default is 4.
    public var maximumConnections: Int
    /// The password sent with `AUTH` after connecting (Redis `requirepass`, or the password of ``username``),
    /// or `nil`. It is never logged nor put in an error. The default is `nil`.
    public var password: String?
    /// The ACL user sent with `AUTH username password` (Redis 6 and later), or `nil` for the `default` user
    /// (`AUTH password`). Used only with a ``password``. The default is `nil`.
    public var username: String?
    /// Speak to a Redis Cluster, with ``host`` and ``port`` as its first seed node; `nil` speaks to one server.
    /// The default is `nil`.
    public var cluster: RedisClusterConfiguration?
    /// The database number selected with `SELECT` after connecting. The default is 0.
    public var database: Int

    /// Creates a configuration; every parameter has the default documented on its property.
    ///
    /// - Parameters:
    ///   - host: The server's host.
    ///   - port: The server's port.
    ///   - connectTimeout: The connect timeout.
    ///   - commandTimeout: The command timeout.
    ///   - retryInterval: The back-off after a failure.
    ///   - maximumConnections: The most connections kept.
    ///   - password: The `AUTH` password.
    ///   - database: The database number.
    ///   - username: The ACL user.
    ///   - cluster: The cluster's options, or `nil` for one server.
    public init(
        host: String = "127.0.0.1",
        port: Int = 6379,
        connectTimeout: Duration = .milliseconds(200),
        commandTimeout: Duration = .milliseconds(100),
        retryInterval: Duration = .seconds(1),
        maximumConnections: Int = 4,
        password: String? = nil,
        database: Int = 0,
        username: String? = nil,
        cluster: RedisClusterConfiguration? = nil
    ) {
        self.host = host
        self.port = port
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
        self.retryInterval = retryInterval
        self.maximumConnections = maximumConnections
        self.password = password
        self.database = database
        self.username = username
        self.cluster = cluster
    }

    /// Checks every value's range.
    ///
    /// - Throws: ``RedisError/invalidArgument`` naming the value out of range.
    public func validate() throws(RedisError) {
        guard !host.isEmpty, !host.utf8.contains(0) else { throw RedisError(.invalidArgument, "the host is empty") }
        guard (1...65535).contains(port) else { throw RedisError(.invalidArgument, "port must be 1…65535, got \(port)") }
        guard connectTimeout > .zero, commandTimeout > .zero else {
            throw RedisError(.invalidArgument, "the connect and command timeouts must be positive")
        }
        guard retryInterval >= .zero else { throw RedisError(.invalidArgument, "the retry interval must not be negative") }
        guard (1...256).contains(maximumConnections) else {
            throw RedisError(.invalidArgument, "maximumConnections must be 1…256, got \(maximumConnections)")
        }
        guard database >= 0 else { throw RedisError(.invalidArgument, "the database number must not be negative") }
        guard username == nil || password != nil else { throw RedisError(.invalidArgument, "a username needs a password") }
        if let cluster {
            guard database == 0 else { throw RedisError(.invalidArgument, "a cluster has only database 0") }
            try cluster.validate()
        }
    }
}
