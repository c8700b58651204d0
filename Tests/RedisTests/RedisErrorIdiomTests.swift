import ODataFixtures
import Redis
import Testing

/// `RedisError` follows the package's error idiom: `catch RedisError.kind` matches its kind only, and the
/// description names the kind and never the password.
@Suite(.serialized)
struct RedisErrorIdiomTests {
    @Test func aRefusedAuthIsCaughtByItsKindAndNamesNoPassword() throws {
        let server = try RedisServer.start()
        defer { server.stop() }
        let password = "correct-horse-battery-staple"
        var matched = ""
        var text = ""
        do {
            let redis = try RedisClient(configuration: RedisConfiguration(port: server.port, password: password))
            try redis.set("k", value: [1])
        } catch RedisError.timeout {
            matched = "timeout"
        } catch RedisError.serverError {
            matched = "serverError"
        } catch {
            matched = "\(error)"
        }
        #expect(matched == "serverError")
        do {
            let redis = try RedisClient(configuration: RedisConfiguration(port: server.port, password: password))
            try redis.set("k", value: [1])
        } catch {
            text = "\(error)"
            #expect(error == .serverError && error != .timeout)
        }
        #expect(text.contains("serverError"), "\(text)")
        #expect(!text.contains(password), "\(text)")
    }
}
