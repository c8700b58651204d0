import ODataCore
import ODataFixtures
import Testing

@testable import OfflineStore

/// `OfflineODataError` follows the package's error idiom: `catch OfflineODataError.kind` matches its kind only,
/// SAP's error number stays readable, and the description names the kind and never the passphrase.
@Suite struct OfflineODataErrorIdiomTests {
    @Test func aWrongPassphraseIsCaughtByItsKindAndNamesNoPassphrase() async throws {
        let (server, directory, provider) = try await Northwind.openStore()
        defer { withExtendedLifetime(directory) {}; Task { await server.stop() } }
        await provider.close()
        let secret = "not the key, but secret all the same"
        let wrong = try OfflineODataProvider(serviceRoot: server.serviceRoot, parameters: Northwind.parameters(directory, key: secret))
        var matched = ""
        do {
            try await wrong.open()
        } catch OfflineODataError.encryptionMismatch {
            matched = "encryptionMismatch"
        } catch OfflineODataError.wrongKey {
            matched = "wrongKey"
        } catch {
            matched = "\(error)"
        }
        #expect(matched == "wrongKey")
        let error = await #expect(throws: OfflineODataError.self) { try await wrong.open() }
        #expect(error == .wrongKey && error != .storeLocked)
        #expect(error?.errorNumber == -10004)
        let text = error.map { "\($0)" } ?? ""
        #expect(text.hasPrefix("wrongKey (-10004): "), "\(text)")
        #expect(!text.contains(secret) && !text.contains(Northwind.key), "\(text)")
    }
}
