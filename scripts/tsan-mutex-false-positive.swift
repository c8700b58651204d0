// ThreadSanitizer reports "Swift access race" for this program, whose only shared state is a
// Synchronization.Mutex used through withLock (Swift 6.3.1, Linux): the stdlib lock is invisible to
// TSan. Run: swiftc -sanitize=thread scripts/tsan-mutex-false-positive.swift -o /tmp/m && /tmp/m
import Synchronization
import Foundation
final class Box: Sendable { let state = Mutex<[Int: Int]>([:]) }
let box = Box()
let threads = (0..<4).map { i in Thread { for j in 0..<20_000 { box.state.withLock { $0[j % 7, default: 0] += i } } } }
threads.forEach { $0.start() }
Thread.sleep(forTimeInterval: 2)
print(box.state.withLock { $0.values.reduce(0, +) })
