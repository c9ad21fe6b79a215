// The owner never waits (issue 21), and how that is checked: every place in the product that sleeps until another
// thread, the disk or the sound server acts asks `WaitGuard.check` first, and the owner's thread is marked, so a debug
// build stops the moment the owner reaches one. Every end-to-end test runs the debug service, which makes the whole
// suite the check of what is reachable from the owner's inbox loop; these tests prove the guard itself and that no
// waiting call in Sources goes without it.
import Foundation
import Testing
import SystemSupport

@Suite("The owner's thread never waits: WaitGuard")
struct WaitGuardTests {
    /// The calls that sleep until someone else acts, as they are spelled in the sources.
    static let waitingCalls = [
        "pa_threaded_mainloop_wait(", "pa_threaded_mainloop_stop(", "fsync(", "fdatasync(", "pthread_cond_wait(",
        "pthread_cond_timedwait(", "pthread_join(", "sem_wait(", "sem_timedwait(",
    ]

    @Test("a marked thread reaching a wait stops a debug build, naming the wait")
    func markedThreadStops() async {
        await #expect(processExitsWith: .failure) {
            WaitGuard.forbidWaitingOnThisThread()
            let condition = Condition()
            condition.lock()
            condition.wait(untilMonotonicNanoseconds: Condition.monotonicNanoseconds() + 1_000_000)
            condition.unlock()
        }
    }

    @Test("other threads wait as before, and nothing is counted for them")
    func otherThreadsWait() {
        let before = WaitGuard.violations
        #expect(!WaitGuard.isForbiddenHere)
        let condition = Condition()
        condition.lock()
        condition.wait(untilMonotonicNanoseconds: Condition.monotonicNanoseconds() + 1_000_000)
        condition.unlock()
        #expect(WaitGuard.violations == before)
    }

    @Test("every call in Sources that waits for another thread, the disk or the server asks the guard first")
    func everyWaitingCallIsGuarded() throws {
        let sources = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources", isDirectory: true)
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
        var unguarded: [String] = []
        var found = 0
        for file in files {
            let lines = try String(contentsOf: file, encoding: .utf8).components(separatedBy: "\n")
            for (number, line) in lines.enumerated() {
                let code = line.components(separatedBy: "//").first ?? ""
                guard Self.waitingCalls.contains(where: { code.contains($0) }) else { continue }
                found += 1
                // The check sits just before the call (a few lines up at most, inside the same branch).
                let above = lines[max(0, number - 4)..<number].joined(separator: "\n")
                if !above.contains("WaitGuard.check(") {
                    let call = line.trimmingCharacters(in: .whitespaces)
                    unguarded.append("\(file.lastPathComponent):\(number + 1): \(call)")
                }
            }
        }
        #expect(found >= 8, "the scan found only \(found) waiting calls: is it reading Sources?")
        #expect(unguarded.isEmpty, "waiting calls without WaitGuard.check:\n\(unguarded.joined(separator: "\n"))")
    }
}
