package import Crypto
import Foundation
import _CryptoExtras

/// A 256-bit AES key for sealing data; the key material never leaves the process except wrapped in a
/// ``KeyEnvelope``.
///
/// `@unchecked Sendable`: swift-crypto 3's `SymmetricKey` is not declared `Sendable`, but it is an
/// immutable value whose secure storage is written only while it is created.
public struct SealingKey: @unchecked Sendable {
    package let symmetricKey: SymmetricKey

    /// The size of a key in bytes (32, for AES-256).
    public static let byteCount = 32

    /// Creates a key from raw key material.
    ///
    /// - Parameter bytes: Exactly 32 bytes of key material.
    /// - Throws: `KeyError.invalidKey` when `bytes` is not 32 bytes long.
    public init(bytes: some DataProtocol) throws(KeyError) {
        guard bytes.count == Self.byteCount else {
            throw KeyError.invalidKey.with(detail: "a sealing key must be \(Self.byteCount) bytes, got \(bytes.count)")
        }
        symmetricKey = SymmetricKey(data: Data(bytes))
    }

    package init(_ key: SymmetricKey) {
        symmetricKey = key
    }

    /// Generates a fresh random key from the system's secure random generator.
    ///
    /// - Returns: A new key.
    public static func random() -> SealingKey {
        SealingKey(SymmetricKey(size: .bits256))
    }

    /// Runs `body` with the raw key material (for wrapping it; do not keep the buffer).
    ///
    /// - Parameter body: Receives the 32 key bytes.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try symmetricKey.withUnsafeBytes(body)
    }
}

/// How a passphrase becomes a key: PBKDF2-HMAC-SHA256 with a number of rounds, or scrypt.
///
/// The cost is a parameter: production uses ``standard``; tests may pass a cheap setting.
public struct KeyDerivation: Sendable, Hashable, CustomStringConvertible {
    enum Kind: UInt8, Sendable { case pbkdf2 = 1, scrypt = 2 }
    let kind: Kind
    let rounds: Int
    let blockSize: Int
    let parallelism: Int

    /// PBKDF2-HMAC-SHA256 with `rounds` iterations.
    ///
    /// OWASP recommends at least 600,000 rounds for PBKDF2-HMAC-SHA256; fewer rounds are accepted
    /// (for tests) but make a guessed passphrase cheaper to check.
    ///
    /// - Parameter rounds: The iteration count, at least 1.
    /// - Returns: The derivation.
    public static func pbkdf2(rounds: Int) -> KeyDerivation {
        KeyDerivation(kind: .pbkdf2, rounds: rounds, blockSize: 0, parallelism: 0)
    }

    /// scrypt with cost `2^costLog2`, block size `r` and parallelism `p`.
    ///
    /// - Parameters:
    ///   - costLog2: log₂ of the CPU/memory cost N (1…24); 17 is a common interactive setting.
    ///   - blockSize: The block size r (8 is usual).
    ///   - parallelism: The parallelism p (1 is usual).
    /// - Returns: The derivation.
    public static func scrypt(costLog2: Int, blockSize: Int = 8, parallelism: Int = 1) -> KeyDerivation {
        KeyDerivation(kind: .scrypt, rounds: costLog2, blockSize: blockSize, parallelism: parallelism)
    }

    /// The production default: PBKDF2-HMAC-SHA256 with 600,000 rounds (OWASP 2023), about 0.1 s here.
    public static let standard = KeyDerivation.pbkdf2(rounds: 600_000)

    /// A readable description, for example `PBKDF2-HMAC-SHA256(600000)`.
    public var description: String {
        switch kind {
        case .pbkdf2: return "PBKDF2-HMAC-SHA256(\(rounds))"
        case .scrypt: return "scrypt(N=2^\(rounds), r=\(blockSize), p=\(parallelism))"
        }
    }

    package func validate() throws(KeyError) {
        switch kind {
        case .pbkdf2:
            guard rounds >= 1 && rounds <= 100_000_000 else {
                throw KeyError.invalidDerivation.with(detail: "PBKDF2 rounds must be 1…100,000,000, got \(rounds)")
            }
        case .scrypt:
            guard (1...24).contains(rounds), (1...64).contains(blockSize), (1...16).contains(parallelism) else {
                throw KeyError.invalidDerivation.with(detail: "scrypt parameters out of range: \(description)")
            }
        }
    }

    /// Derives a 256-bit key from `passphrase` and `salt`.
    ///
    /// - Parameters:
    ///   - passphrase: The secret (not empty).
    ///   - salt: A random per-store salt (see ``KeyEnvelope``).
    /// - Returns: The derived key.
    /// - Throws: `KeyError.invalidKey` for an empty passphrase, `.invalidDerivation` for
    ///   out-of-range parameters.
    public func deriveKey(from passphrase: String, salt: some DataProtocol) throws(KeyError) -> SealingKey {
        guard !passphrase.isEmpty else { throw KeyError.invalidKey.with(detail: "the encryption key is empty") }
        try validate()
        let secret = Data(passphrase.utf8)
        do {
            switch kind {
            case .pbkdf2:
                // The checked variant refuses fewer than 210,000 rounds; the cost is this type's parameter.
                return SealingKey(try KDF.Insecure.PBKDF2.deriveKey(
                    from: secret, salt: salt, using: .sha256, outputByteCount: SealingKey.byteCount,
                    unsafeUncheckedRounds: rounds))
            case .scrypt:
                return SealingKey(try KDF.Scrypt.deriveKey(
                    from: secret, salt: salt, outputByteCount: SealingKey.byteCount,
                    rounds: 1 << rounds, blockSize: blockSize, parallelism: parallelism))
            }
        } catch {
            throw KeyError.invalidDerivation.with(detail: "key derivation \(description) failed: \(error)", underlying: error)
        }
    }
}

/// A key-check record: secret key material wrapped (AES-256-GCM) under a key derived from a passphrase.
///
/// It stores the derivation parameters, a random salt and the sealed secret. Opening it with the wrong
/// passphrase fails authentication, which is reported as `KeyError.wrongKey` before anything is read
/// or erased. Changing the passphrase re-wraps the same secret (see ``rewrapped(passphrase:derivation:)``).
public struct KeyEnvelope: Sendable {
    /// The derivation the wrapping key comes from.
    public let derivation: KeyDerivation
    /// The random salt of the derivation.
    public let salt: [UInt8]
    private let sealedSecret: Data

    private static let magic: [UInt8] = Array("ODSK".utf8)
    private static let version: UInt8 = 1
    private static let context = Data("ODataStores key envelope v1".utf8)

    private init(derivation: KeyDerivation, salt: [UInt8], sealedSecret: Data) {
        self.derivation = derivation
        self.salt = salt
        self.sealedSecret = sealedSecret
    }

    /// Wraps `secret` under a key derived from `passphrase` with a fresh random salt.
    ///
    /// - Parameters:
    ///   - secret: The key material to protect (for example one or more ``SealingKey``s).
    ///   - passphrase: The caller's encryption key.
    ///   - derivation: The KDF and its cost.
    /// - Returns: The envelope; store ``serialized`` next to the data it protects.
    /// - Throws: `KeyError.invalidKey` or `.invalidDerivation` (see ``KeyDerivation/deriveKey(from:salt:)``).
    public static func seal(secret: some DataProtocol, passphrase: String, derivation: KeyDerivation) throws(KeyError) -> KeyEnvelope {
        var salt = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in salt.indices { salt[index] = generator.next() }
        let wrappingKey = try derivation.deriveKey(from: passphrase, salt: salt)
        let header = headerBytes(derivation: derivation, salt: salt)
        let sealed: Data
        do {
            guard let combined = try AES.GCM.seal(secret, using: wrappingKey.symmetricKey, authenticating: context + header).combined else {
                throw KeyError.invalidKey.with(detail: "AES-GCM produced no combined box")
            }
            sealed = combined
        } catch let error as KeyError { throw error } catch {
            throw KeyError.invalidKey.with(detail: "AES-GCM refused to seal the secret: \(type(of: error))", underlying: error)
        }
        return KeyEnvelope(derivation: derivation, salt: salt, sealedSecret: sealed)
    }

    /// Unwraps the secret with `passphrase`.
    ///
    /// - Parameter passphrase: The caller's encryption key.
    /// - Returns: The secret given to ``seal(secret:passphrase:derivation:)``.
    /// - Throws: `KeyError.wrongKey` when the passphrase does not match; `.invalidKey` for an empty one.
    public func open(passphrase: String) throws(KeyError) -> Data {
        let wrappingKey = try derivation.deriveKey(from: passphrase, salt: salt)
        let header = Self.headerBytes(derivation: derivation, salt: salt)
        do {
            return try AES.GCM.open(AES.GCM.SealedBox(combined: sealedSecret), using: wrappingKey.symmetricKey, authenticating: Self.context + header)
        } catch {
            throw KeyError.wrongKey
        }
    }

    /// Wraps the same secret under a new passphrase (and possibly a new derivation) with a new salt.
    ///
    /// - Parameters:
    ///   - secret: The secret, as returned by ``open(passphrase:)``.
    ///   - passphrase: The new encryption key.
    ///   - derivation: The new KDF setting.
    /// - Returns: A new envelope.
    /// - Throws: As ``seal(secret:passphrase:derivation:)``.
    public static func rewrapped(secret: some DataProtocol, passphrase: String, derivation: KeyDerivation) throws(KeyError) -> KeyEnvelope {
        try seal(secret: secret, passphrase: passphrase, derivation: derivation)
    }

    private static func headerBytes(derivation: KeyDerivation, salt: [UInt8]) -> Data {
        var writer = ByteWriter()
        writer.append(magic)
        writer.append(version)
        writer.append(derivation.kind.rawValue)
        writer.append(UInt32(derivation.rounds))
        writer.append(UInt32(derivation.blockSize))
        writer.append(UInt32(derivation.parallelism))
        writer.append(UInt8(salt.count))
        writer.append(salt)
        return writer.data
    }

    /// The record's bytes: magic, version, derivation parameters, salt and the sealed secret.
    public var serialized: Data {
        var writer = ByteWriter()
        writer.append(Self.headerBytes(derivation: derivation, salt: salt))
        writer.append(UInt32(sealedSecret.count))
        writer.append(sealedSecret)
        return writer.data
    }

    /// Reads a record made by ``serialized``.
    ///
    /// - Parameter serialized: The stored bytes.
    /// - Throws: `KeyError.corruptEnvelope` when the bytes are not a valid envelope.
    public init(serialized: some DataProtocol) throws(KeyError) {
        var reader = ByteReader(Data(serialized))
        guard let magic = reader.bytes(4), magic == Self.magic, reader.uint8() == Self.version,
              let kindRaw = reader.uint8(), let kind = KeyDerivation.Kind(rawValue: kindRaw),
              let rounds = reader.uint32(), let blockSize = reader.uint32(), let parallelism = reader.uint32(),
              let saltCount = reader.uint8(), let salt = reader.bytes(Int(saltCount)),
              let sealedCount = reader.uint32(), let sealed = reader.bytes(Int(sealedCount)), reader.isAtEnd
        else { throw KeyError.corruptEnvelope.with(detail: "the key-check record is malformed") }
        let derivation = KeyDerivation(kind: kind, rounds: Int(rounds), blockSize: Int(blockSize), parallelism: Int(parallelism))
        try derivation.validate()
        self.init(derivation: derivation, salt: salt, sealedSecret: Data(sealed))
    }
}
