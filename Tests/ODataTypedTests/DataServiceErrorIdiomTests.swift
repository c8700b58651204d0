import ODataCore
import ODataTyped
import Testing

/// `DataServiceError` is ``ODataError`` (one type, not a copy): `catch DataServiceError.kind` and
/// `catch ODataError.kind` are the same pattern, matching its kind only; the description names the kind.
@Suite struct DataServiceErrorIdiomTests {
    @Test func anEntityWithoutKeysIsCaughtByItsKindUnderEitherName() {
        var matched = ""
        do {
            _ = try EntityKey().predicate(for: .v4)
        } catch DataServiceError.noData {
            matched = "noData"
        } catch ODataError.invalidEntity {
            matched = "invalidEntity"
        } catch {
            matched = "\(error)"
        }
        #expect(matched == "invalidEntity")
        let error = #expect(throws: DataServiceError.self) { try EntityKey().predicate(for: .v4) }
        #expect(error == ODataError.invalidEntity && error != .typeMismatch)
        #expect(error.map { "\($0)" }?.hasPrefix("invalidEntity: ") == true)
        #expect(DataServiceError.self == ODataError.self)
    }
}
