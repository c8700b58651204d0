import Foundation
import LMDB
import Testing

/// `LMDBError` follows the package's error idiom: `catch LMDBError.kind` matches its kind only, the numeric
/// code stays readable, and the description names the kind.
@Suite struct LMDBErrorIdiomTests {
    @Test func aFileThatIsNoEnvironmentIsCaughtByItsKind() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lmdb-idiom-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(repeating: 0x5A, count: 16_384).write(to: URL(fileURLWithPath: directory + "/data.mdb"))
        var matched = ""
        do {
            _ = try LMDBEnvironment(path: directory)
        } catch LMDBError.mapFull {
            matched = "mapFull"
        } catch LMDBError.invalid {
            matched = "invalid"
        } catch {
            matched = "\(error)"
        }
        #expect(matched == "invalid")
        #expect(LMDBError.invalid.code == -30793)  // MDB_INVALID, readable as data
        #expect(LMDBError.mapFull.description.hasPrefix("LMDBError.mapFull: "))
        #expect(LMDBError.mapFull != .invalid)
    }
}
