extension LMDBEnvironment {
    /// How much of a commit reaches the disk before `write` returns.
    public enum Durability: Sendable, Hashable {
        /// Data and meta pages are flushed (`fsync`) on every commit: nothing committed is lost, even on
        /// a power failure. The slowest choice and the default.
        case full
        /// Data pages are flushed but the meta page is not (`MDB_NOMETASYNC`): a system crash may undo
        /// the last committed transaction, but the database stays intact. A process crash loses nothing.
        case noMetaSync
        /// Nothing is flushed on commit (`MDB_NOSYNC`); call ``LMDBEnvironment/sync(force:)``
        /// periodically. A process crash loses nothing (the data is in the page cache), but a system
        /// crash may undo recent transactions, and on a file system that does not keep write order it
        /// may corrupt the database.
        case noSync
    }

    /// The settings an environment is opened with.
    public struct Options: Sendable, Hashable {
        /// The initial size of the memory map in bytes, rounded up to a page multiple.
        /// The default is 16 MiB.
        public var mapSize: Int
        /// The largest size the map may grow to when a write finds it full. The default is 1 TiB (the
        /// map is virtual address space; the file only grows as pages are used).
        public var maxMapSize: Int
        /// The number of named databases the environment may hold. The default is 8.
        public var maxDatabases: Int
        /// The number of concurrent read transactions. The default is 126 (LMDB's default).
        public var maxReaders: Int
        /// What a commit flushes to disk. The default is ``Durability/full``.
        public var durability: Durability
        /// Permissions of the files LMDB creates. The default is `0o600`.
        public var fileMode: UInt32
        /// Whether to create the directory (with mode `0o700`) when it does not exist. The default is `true`.
        public var createDirectory: Bool
        /// Whether commits write their pages straight into a writable shared map (`MDB_WRITEMAP`) instead of
        /// `pwrite`-ing them. The default is `false`.
        ///
        /// It saves the copy and the page-cache lookup of every written page; the map is opened without the
        /// kernel's readahead (`MDB_NORDAHEAD`), which would otherwise read or zero-fill the pages around each
        /// page a commit first touches. `data.mdb` then always has the
        /// map's size (a sparse file: its allocated blocks, not its size, are what is used), and with
        /// ``Durability/noSync`` a system crash may damage the file whatever the file system, because the
        /// kernel writes the map's pages back in any order. Every process that opens the environment must
        /// pass the same value.
        public var writeMap: Bool

        /// Creates options; every parameter has the default documented on its property.
        ///
        /// - Parameters:
        ///   - mapSize: The initial map size in bytes.
        ///   - maxMapSize: The largest map size in bytes.
        ///   - maxDatabases: The number of named databases.
        ///   - maxReaders: The number of concurrent readers.
        ///   - durability: What a commit flushes to disk.
        ///   - fileMode: The permissions of created files.
        ///   - createDirectory: Whether to create a missing directory.
        ///   - writeMap: Whether commits write into a writable map.
        public init(
            mapSize: Int = 16 << 20,
            maxMapSize: Int = 1 << 40,
            maxDatabases: Int = 8,
            maxReaders: Int = 126,
            durability: Durability = .full,
            fileMode: UInt32 = 0o600,
            createDirectory: Bool = true,
            writeMap: Bool = false
        ) {
            self.mapSize = mapSize
            self.maxMapSize = maxMapSize
            self.maxDatabases = maxDatabases
            self.maxReaders = maxReaders
            self.durability = durability
            self.fileMode = fileMode
            self.createDirectory = createDirectory
            self.writeMap = writeMap
        }
    }
}
