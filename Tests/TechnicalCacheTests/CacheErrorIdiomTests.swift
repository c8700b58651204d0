import LMDB
import Testing
import TechnicalCache

/// `CacheError` follows the package's error idiom: `catch CacheError.kind` matches its kind only, the
/// description names the kind and never the passphrase, and a wrapped failure is kept as a value.
@Suite struct CacheErrorIdiomTests {
    @Test func aWrongKeyIsCaughtByItsKindAndNamesNoPassphrase() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        try cache.open(encryption: .key("right horse battery staple"))
        cache.close()
        var matched = ""
        do {
            try cache.open(encryption: .key("wrong horse battery staple"))
        } catch CacheError.encryptionMismatch {
            matched = "encryptionMismatch"
        } catch CacheError.wrongKey {
            matched = "wrongKey"
        } catch {
            matched = "\(error)"
        }
        #expect(matched == "wrongKey")
        let error = #expect(throws: CacheError.self) { try cache.open(encryption: .key("wrong horse battery staple")) }
        #expect(error == .wrongKey && error != .encryptionMismatch)
        let text = error.map { "\($0)" } ?? ""
        #expect(text.contains("wrongKey"), "\(text)")
        #expect(!text.contains("horse battery"), "\(text)")
    }

    @Test func aWrappedStorageFailureIsKeptAsAValue() {
        let error = CacheError.storage.with(detail: "the map is full", underlying: LMDBError.mapFull)
        #expect(error == .storage)
        #expect(error.underlying as? LMDBError == .mapFull)
        #expect(CacheError.storage ~= error && !(CacheError.corruptRecord ~= error))
    }
}
