import Foundation

/// A private certificate authority and the certificates TLS tests need, made with the `openssl` command (P-256
/// keys, so making them takes a few milliseconds each) into a directory: a server certificate for 127.0.0.1 and
/// localhost, one that has expired, one for another host name, a client certificate whose key is encrypted with
/// a passphrase, and a client certificate of another CA.
///
/// ```swift
/// let certificates = try TestCertificates.make(in: directory)
/// var transport = CurlConfiguration()
/// transport.caFile = certificates.caCertificate
/// ```
public struct TestCertificates: Sendable {
    /// The directory that holds every file.
    public let directory: URL
    /// The private CA's certificate (PEM): what a client trusts to verify the servers.
    public var caCertificate: String { path("ca.pem") }
    /// The server certificate for `IP:127.0.0.1` and `DNS:localhost`, signed by the CA, valid for two days.
    public var serverCertificate: String { path("server.pem") }
    /// The server's private key (unencrypted), also the key of ``expiredCertificate``.
    public var serverKey: String { path("server.key") }
    /// A server certificate for 127.0.0.1 and localhost, signed by the CA, that expired a day ago (its `notAfter`
    /// lies before its `notBefore`); its key is ``serverKey``.
    public var expiredCertificate: String { path("expired.pem") }
    /// A server certificate for `DNS:wrong.example` only, signed by the CA.
    public var wrongHostCertificate: String { path("wrong-host.pem") }
    /// The key of ``wrongHostCertificate``.
    public var wrongHostKey: String { path("wrong-host.key") }
    /// A client certificate (`CN=test-client`, `extendedKeyUsage=clientAuth`) signed by the CA.
    public var clientCertificate: String { path("client.pem") }
    /// The key of ``clientCertificate``, encrypted (AES-256) with ``clientKeyPassphrase``.
    public var clientKey: String { path("client-encrypted.key") }
    /// The passphrase of ``clientKey``.
    public let clientKeyPassphrase: String
    /// A client certificate (`CN=intruder`) signed by another CA, which the servers do not trust.
    public var foreignClientCertificate: String { path("foreign-client.pem") }
    /// The key of ``foreignClientCertificate`` (unencrypted).
    public var foreignClientKey: String { path("foreign-client.key") }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The `openssl` executable: `$OPENSSL`, else `/usr/bin/openssl`.
    public static var executable: String {
        if let path = ProcessInfo.processInfo.environment["OPENSSL"], !path.isEmpty { return path }
        return "/usr/bin/openssl"
    }

    /// Makes the CA and every certificate in `directory` (created when missing).
    ///
    /// - Parameter directory: Where the files go; the caller removes it.
    /// - Returns: The certificates' paths.
    /// - Throws: ``FixtureError`` `.serverFailure` when `openssl` is missing (run `make deps`) or fails (with its
    ///   output).
    public static func make(in directory: URL) throws(FixtureError) -> TestCertificates {
        let certificates = TestCertificates(directory: directory, clientKeyPassphrase: "client-key-\(UUID().uuidString.prefix(8))")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw FixtureError(.serverFailure, "cannot create \(directory.path): \(error)")
        }
        try certificates.makeFiles()
        return certificates
    }

    private func makeFiles() throws(FixtureError) {
        let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        let serverExtensions = "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
        let clientExtensions = "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n"
        try write("server.ext", serverExtensions)
        try write("wrong-host.ext", "subjectAltName=DNS:wrong.example\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
        try write("client.ext", clientExtensions)
        for (name, subject) in [("ca", "/CN=ODataStores Test CA"), ("foreign-ca", "/CN=Foreign Test CA")] {
            try openssl(["req", "-x509"] + key + ["-keyout", path("\(name).key"), "-out", path("\(name).pem"), "-days", "2",
                         "-subj", subject, "-addext", "basicConstraints=critical,CA:TRUE",
                         "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        }
        /// A key and a certificate request for `subject`, signed by `ca` for `days` days.
        func issue(_ name: String, subject: String, key keyName: String? = nil, ca: String = "ca", days: String = "2", extensions: String) throws(FixtureError) {
            let keyFile = path("\(keyName ?? name).key")
            if keyName == nil {
                try openssl(["req"] + key + ["-keyout", keyFile, "-out", path("\(name).csr"), "-subj", subject])
            } else {
                try openssl(["req", "-new", "-key", keyFile, "-out", path("\(name).csr"), "-subj", subject])
            }
            try openssl(["x509", "-req", "-in", path("\(name).csr"), "-CA", path("\(ca).pem"), "-CAkey", path("\(ca).key"),
                         "-set_serial", String(UInt32.random(in: 1...UInt32.max)), "-out", path("\(name).pem"), "-days", days,
                         "-extfile", path(extensions)])
        }
        try issue("server", subject: "/CN=127.0.0.1", extensions: "server.ext")
        // `-days -1`: notAfter a day before notBefore (now), so the certificate has expired.
        try issue("expired", subject: "/CN=127.0.0.1", key: "server", days: "-1", extensions: "server.ext")
        try issue("wrong-host", subject: "/CN=wrong.example", extensions: "wrong-host.ext")
        try issue("client", subject: "/CN=test-client", key: nil, extensions: "client.ext")
        try issue("foreign-client", subject: "/CN=intruder", ca: "foreign-ca", extensions: "client.ext")
        try openssl(["ec", "-in", path("client.key"), "-out", path("client-encrypted.key"), "-aes256",
                     "-passout", "env:ODATASTORES_TEST_KEY_PASSPHRASE"], environment: ["ODATASTORES_TEST_KEY_PASSPHRASE": clientKeyPassphrase])
    }

    private func write(_ name: String, _ text: String) throws(FixtureError) {
        do { try Data(text.utf8).write(to: directory.appendingPathComponent(name)) } catch {
            throw FixtureError(.serverFailure, "cannot write \(name): \(error)")
        }
    }

    /// Runs `openssl` with `arguments` and waits; the passphrase goes through the environment, never an argument.
    private func openssl(_ arguments: [String], environment: [String: String] = [:]) throws(FixtureError) {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw FixtureError(.serverFailure, "openssl is not installed at \(Self.executable): run `make deps`")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        do { try process.run() } catch {
            throw FixtureError(.serverFailure, "openssl did not start: \(error)")
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw FixtureError(.serverFailure, "openssl \(arguments.first ?? "") failed (status \(process.terminationStatus)): \(text)")
        }
    }
}
