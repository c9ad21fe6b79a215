// For tests of "never waits for X": X is held stuck by the test (a follower that reads nothing, a named pipe nobody
// opens, a file under a lease) until the test frees it, so a call that waited for X would not return before then.
// Whether it returns at all is the check; how fast it returns is not (these machines are shared and noisy, and the
// sanitizer builds run several times slower).
import Foundation

/// Runs `body` on a thread of its own and answers whether it returned within `limit`: a guard against a hang, far
/// above what the body takes on a loaded machine under a sanitizer, and below any timeout of what holds X stuck (a
/// file lease breaks after 45 s).
public func returnsWhileStuck(limit: Duration = .seconds(30), _ body: @escaping @Sendable () -> Void) -> Bool {
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        body()
        done.signal()
    }
    let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
    return done.wait(timeout: .now() + seconds) == .success
}
