import Foundation

/// Whether this process runs under a sanitizer, as `make test-tsan` and `make test-asan` run the suite (they set
/// `TSAN_OPTIONS` and `ASAN_OPTIONS`; a child started by such a test inherits them).
///
/// A test that repeats a seeded workload many times (fuzz inputs, stress rounds, random queries, kills) runs fewer
/// rounds there: each costs several times as much, a sanitizer reports a race or a memory error in the code paths the
/// first rounds reach (it needs the accesses, not their unlucky timing), and the plain run of the suite still runs every
/// round. CI runs the suite three times; the sanitized two are most of its test time.
public enum Sanitizers {
    /// `true` under ThreadSanitizer or AddressSanitizer.
    public static let active: Bool = {
        let environment = ProcessInfo.processInfo.environment
        return environment["TSAN_OPTIONS"] != nil || environment["ASAN_OPTIONS"] != nil
    }()

    /// How many rounds to run: `plain` in a plain run, `sanitized` under a sanitizer.
    ///
    /// - Parameters:
    ///   - plain: the rounds of a plain run.
    ///   - sanitized: the rounds under a sanitizer.
    /// - Returns: One of the two.
    public static func rounds(plain: Int, sanitized: Int) -> Int { active ? sanitized : plain }
}
