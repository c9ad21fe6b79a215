// The owner never waits (issue 21), and how that is checked: every place in the product that sleeps until another
// thread, the disk or the sound server acts asks `WaitGuard.check` first, and the owner's thread is marked, so a debug
// build stops the moment the owner reaches one. Every end-to-end test runs the debug service, which makes the whole
// suite the check of what is reachable from the owner's inbox loop; these tests prove the guard itself and that no
// waiting call in Sources goes without it: the C waits, sd-bus's calls, Dispatch semaphores and plain write(2)s
// (issue 35: the progress line's write to a stopped terminal held the owner, and the scan did not see it).
import Foundation
import Testing
import SystemSupport

@Suite("The owner's thread never waits: WaitGuard")
struct WaitGuardTests {
    /// The calls that sleep until someone else acts, as they are spelled in the sources (C's, and sd-bus's call
    /// that waits for the answer).
    static let waitingCalls = [
        "pa_threaded_mainloop_wait(", "pa_threaded_mainloop_stop(", "fsync(", "fdatasync(", "pthread_cond_wait(",
        "pthread_cond_timedwait(", "pthread_join(", "sem_wait(", "sem_timedwait(", "sd_bus_call(",
    ]

    /// A plain write(2), which waits for a full pipe, a stopped terminal or the disk: `write(` called bare or as
    /// `Glibc.write(`, or a `write` closure standing in for one, with no argument label (Swift's own functions named
    /// `write` with labels, such as JSON's `write(_:to:)`, are not system calls). Scanned by hand rather than with a
    /// Regex: the toolchain's regex compiler leaks what it builds, and the AddressSanitizer run reports it.
    static func hasPlainWrite(_ code: String) -> Bool {
        let chars = Array(code)
        let word = Array("write(")
        var start = 0
        while start + word.count <= chars.count {
            defer { start += 1 }
            guard Array(chars[start..<start + word.count]) == word else { continue }
            let before = start > 0 ? chars[start - 1] : " "
            let glibc = start >= 6 && String(chars[start - 6..<start]) == "Glibc."
            guard glibc || !(before == "." || before == "_" || before.isLetter || before.isNumber) else { continue }
            // The arguments up to the next parenthesis: a label (a word followed by a colon) is Swift's own write.
            let arguments = chars[(start + word.count)...].prefix { $0 != "(" && $0 != ")" }
            if !hasLabel(Array(arguments)) { return true }
        }
        return false
    }

    /// Whether argument text holds a label: a word directly followed by a colon.
    static func hasLabel(_ text: [Character]) -> Bool {
        for (index, char) in text.enumerated() where char == ":" && index > 0 {
            let previous = text[index - 1]
            if previous == "_" || previous.isLetter || previous.isNumber { return true }
        }
        return false
    }

    /// The names of the Dispatch semaphores made in a file (`name = DispatchSemaphore(`): their `.wait(` is a wait.
    static func semaphoreNames(in text: String) -> Set<String> {
        var names: Set<String> = []
        for line in text.split(separator: "\n") {
            guard let made = line.range(of: "DispatchSemaphore(") else { continue }
            let head = line[..<made.lowerBound].trimmingCharacters(in: .whitespaces)
            guard head.hasSuffix("=") else { continue }
            let name = head.dropLast().trimmingCharacters(in: .whitespaces)
                .reversed().prefix { $0 == "_" || $0.isLetter || $0.isNumber }.reversed()
            if !name.isEmpty { names.insert(String(name)) }
        }
        return names
    }

    /// What a line waits on, if anything: "call", "write" or "semaphore".
    static func waitKind(of code: String, semaphores: Set<String>) -> String? {
        if waitingCalls.contains(where: { code.contains($0) }) { return "call" }
        if hasPlainWrite(code) { return "write" }
        if semaphores.contains(where: { code.contains("\($0).wait(") }) { return "semaphore" }
        return nil
    }

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
        var found: [String: Int] = [:]
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            let semaphores = Self.semaphoreNames(in: text)
            let lines = text.components(separatedBy: "\n")
            for (number, line) in lines.enumerated() {
                let code = line.components(separatedBy: "//").first ?? ""
                guard let kind = Self.waitKind(of: code, semaphores: semaphores) else { continue }
                found[kind, default: 0] += 1
                // The check sits just before the call (a few lines up at most, inside the same function); or a
                // comment there says why this one never waits ("Never waits: ..."), the allow-list of the scan.
                let above = lines[max(0, number - 6)..<number].joined(separator: "\n")
                if !above.contains("WaitGuard.check(") && !above.contains("Never waits:") {
                    let call = line.trimmingCharacters(in: .whitespaces)
                    unguarded.append("\(file.lastPathComponent):\(number + 1): \(call)")
                }
            }
        }
        // Each kind is found where it is known to be, so that a scan that reads nothing cannot pass.
        #expect(found["call", default: 0] >= 10, "the scan found only \(found) waiting calls: is it reading Sources?")
        #expect(found["write", default: 0] >= 5, "\(found)")
        #expect(found["semaphore", default: 0] >= 5, "\(found)")
        #expect(unguarded.isEmpty, "waiting calls without WaitGuard.check:\n\(unguarded.joined(separator: "\n"))")
    }
}
