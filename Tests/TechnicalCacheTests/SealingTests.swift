import Foundation
import Testing
import TechnicalCache

@Suite struct SealingTests {
    @Test func sealOpenRoundTripAndOverhead() throws {
        let sealer = Sealer(key: .random())
        let plaintext = Data("hello, sealed world".utf8)
        let sealed = try sealer.seal(plaintext, authenticating: Data("key-1".utf8))
        #expect(sealed.count == plaintext.count + Sealer.overhead)
        #expect(sealed.range(of: plaintext) == nil)
        #expect(try sealer.open(sealed, authenticating: Data("key-1".utf8)) == plaintext)
        // Two seals of the same plaintext differ (random nonce).
        #expect(try sealer.seal(plaintext, authenticating: Data("key-1".utf8)) != sealed)
    }

    @Test func openRefusesTamperingOtherDataAndOtherKeys() throws {
        let sealer = Sealer(key: .random())
        let sealed = try sealer.seal(Data(repeating: 7, count: 100), authenticating: Data("a".utf8))
        #expect(throws: CacheError.authenticationFailed) { try sealer.open(sealed, authenticating: Data("b".utf8)) }
        #expect(throws: CacheError.authenticationFailed) { try Sealer(key: .random()).open(sealed, authenticating: Data("a".utf8)) }
        for position in [0, 11, 12, 60, sealed.count - 1] {
            var tampered = sealed
            tampered[position] ^= 0x01
            #expect(throws: CacheError.authenticationFailed) { try sealer.open(tampered, authenticating: Data("a".utf8)) }
        }
        #expect(throws: CacheError.authenticationFailed) { try sealer.open(Data([1, 2, 3]), authenticating: Data()) }
    }

    @Test func sealingKeyNeeds32Bytes() throws {
        #expect(throws: KeyError.invalidKey) { try SealingKey(bytes: [UInt8](repeating: 1, count: 31)) }
        let key = try SealingKey(bytes: [UInt8](repeating: 1, count: 32))
        let copy = key.withUnsafeBytes { Array($0) }
        #expect(copy == [UInt8](repeating: 1, count: 32))
    }

    /// Published PBKDF2-HMAC-SHA256 vectors for ("password", "salt"), also checked with Python's hashlib.
    @Test(arguments: [
        (1, "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b"),
        (2, "ae4d0c95af6b46d32d0adff928f06dd02a303f8ef3c251dfd6e2d85a95474c43"),
        (4096, "c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a"),
    ])
    func pbkdf2MatchesKnownAnswers(rounds: Int, expectedHex: String) throws {
        let key = try KeyDerivation.pbkdf2(rounds: rounds).deriveKey(from: "password", salt: Data("salt".utf8))
        let hex = key.withUnsafeBytes { $0.map { String(format: "%02x", $0) }.joined() }
        #expect(hex == expectedHex)
    }

    @Test func scryptDerivesADifferentDeterministicKey() throws {
        let salt = Data("0123456789abcdef".utf8)
        let scrypt = KeyDerivation.scrypt(costLog2: 10)
        let first = try scrypt.deriveKey(from: "secret", salt: salt).withUnsafeBytes { Array($0) }
        let second = try scrypt.deriveKey(from: "secret", salt: salt).withUnsafeBytes { Array($0) }
        let pbkdf2 = try cheapDerivation.deriveKey(from: "secret", salt: salt).withUnsafeBytes { Array($0) }
        #expect(first == second)
        #expect(first != pbkdf2)
        #expect(first.count == 32)
    }

    @Test func badDerivationInputIsRefused() {
        #expect(throws: KeyError.invalidKey) { try cheapDerivation.deriveKey(from: "", salt: Data([1])) }
        #expect(throws: KeyError.invalidDerivation) { try KeyDerivation.pbkdf2(rounds: 0).deriveKey(from: "x", salt: Data([1])) }
        #expect(throws: KeyError.invalidDerivation) { try KeyDerivation.scrypt(costLog2: 40).deriveKey(from: "x", salt: Data([1])) }
    }

    @Test func envelopeOpensWithTheRightPassphraseOnly() throws {
        let secret = Data((0..<64).map { UInt8($0) })
        let envelope = try KeyEnvelope.seal(secret: secret, passphrase: "right", derivation: cheapDerivation)
        #expect(envelope.salt.count == 16)
        #expect(envelope.derivation == cheapDerivation)
        let restored = try KeyEnvelope(serialized: envelope.serialized)
        #expect(try restored.open(passphrase: "right") == secret)
        #expect(throws: KeyError.wrongKey) { try restored.open(passphrase: "wrong") }
        // The secret is not in the record in clear.
        #expect(envelope.serialized.range(of: secret) == nil)
        // A new passphrase wraps the same secret under a new salt.
        let rewrapped = try KeyEnvelope.rewrapped(secret: secret, passphrase: "new", derivation: cheapDerivation)
        #expect(rewrapped.salt != envelope.salt)
        #expect(try rewrapped.open(passphrase: "new") == secret)
    }

    @Test func damagedEnvelopesAreRefused() throws {
        let envelope = try KeyEnvelope.seal(secret: Data(repeating: 1, count: 64), passphrase: "p", derivation: cheapDerivation)
        let bytes = envelope.serialized
        #expect(throws: KeyError.corruptEnvelope) { try KeyEnvelope(serialized: bytes.prefix(10)) }
        #expect(throws: KeyError.corruptEnvelope) { try KeyEnvelope(serialized: Data("XXXX".utf8) + bytes.dropFirst(4)) }
        #expect(throws: KeyError.corruptEnvelope) { try KeyEnvelope(serialized: bytes + Data([0])) }
        // A flipped byte in the sealed secret is a wrong key, not a crash.
        var flipped = bytes
        flipped[flipped.count - 5] ^= 0xFF
        #expect(throws: KeyError.wrongKey) { try KeyEnvelope(serialized: flipped).open(passphrase: "p") }
    }

    @Test func fileKeyStoreKeepsAnOwnerOnlyKey() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let store = FileKeyStore(path: dir.path + "/k")
        #expect(try store.loadKey() == nil)
        let key = FileKeyStore.generateKey()
        #expect(key != FileKeyStore.generateKey())
        #expect(Data(base64Encoded: key)?.count == 32)
        try store.saveKey(key)
        #expect(try store.loadKey() == key)
        #expect(try permissions(dir.path + "/k") == 0o600)
        try Data().write(to: URL(fileURLWithPath: dir.path + "/k"))
        #expect(throws: KeyError.keyStore) { try store.loadKey() }
        #expect(throws: KeyError.keyStore) { try FileKeyStore(path: dir.path + "/missing/dir/k").saveKey("x") }
    }
}

/// The key kit's errors reach a cache's caller as the cache's own (`CacheError(_:)`), and an offline store's caller
/// as the store's: one kit, each module its own error.
@Suite struct KeyErrorMappingTests {
    @Test(arguments: [(KeyError.invalidKey, CacheError.invalidKey), (.wrongKey, .wrongKey), (.invalidDerivation, .invalidConfiguration),
                      (.corruptEnvelope, .corruptRecord), (.keyStore, .keyStore), (.keyUnavailable, .keyUnavailable)])
    func eachKindBecomesTheCachesKind(kit: KeyError, cache: CacheError) {
        let mapped = CacheError(kit.with(detail: "detail of the kit"))
        #expect(mapped == cache)
        #expect(mapped.underlying as? KeyError == kit)
    }

    @Test func aKeyStoreThatCannotSaveFailsTheCachesOpenWithTheCachesError() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let cache = try ResponseCache(directory: dir.cachePath, configuration: testConfiguration())
        let error = #expect(throws: CacheError.self) {
            try cache.open(encryption: .keyStore(FileKeyStore(path: dir.path + "/missing/dir/key")))
        }
        #expect(error == .keyStore)
        #expect(error?.underlying is KeyError)
    }
}
