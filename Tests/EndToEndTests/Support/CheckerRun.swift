// Running, shrinking and printing checker sequences. A run takes a fresh world (a new service, the USB sink, new
// recorders), performs each step and lets the oracle judge it, and stops at the first finding. A failing run is
// shrunk by dropping chunks of steps, then single steps, and replaying what remains (each replay a fresh world,
// within a budget of replays), keeping a drop whenever the same check still breaks. The result prints as a Swift
// test to paste into RandomizedCheckerTests.swift.

import EarshotTestSupport
import Foundation

/// Where a sequence broke: the step's index and the finding.
struct CheckerFailure: Sendable, CustomStringConvertible {
    /// The index of the step after which the check broke.
    let stepIndex: Int
    /// That step.
    let step: CheckerStep
    /// The broken check's name.
    let check: String
    /// What was seen.
    let detail: String

    var description: String { "after step \(stepIndex + 1), `\(step)`: \(check): \(detail)" }
}

/// Runs checker sequences against the private server.
enum CheckerRun {
    /// Steps of a CI run, on each of its two servers (docs/testing.md says how long they take).
    static let ciSteps = 60
    /// How many replays the shrinker may make (each a fresh service and about a second and a half a step):
    /// `EARSHOT_CHECKER_SHRINK_REPLAYS`, else 10 (0: report the failing sequence unshrunk).
    static let shrinkReplays = ProcessInfo.processInfo.environment["EARSHOT_CHECKER_SHRINK_REPLAYS"]
        .flatMap { Int($0) } ?? 10

    /// The seed from `EARSHOT_CHECKER_SEED`, else a random one.
    static func seed() -> UInt64 {
        if let text = ProcessInfo.processInfo.environment["EARSHOT_CHECKER_SEED"], let seed = UInt64(text) {
            return seed
        }
        return UInt64.random(in: 1...UInt64(UInt32.max))
    }

    /// Checks whose findings are printed but do not fail a run, from `EARSHOT_CHECKER_IGNORE` (names separated by
    /// commas, as findings print them): to look past a finding already filed while it is being fixed.
    static let ignoredChecks = Set(
        (ProcessInfo.processInfo.environment["EARSHOT_CHECKER_IGNORE"] ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        })

    /// The steps of a run from `EARSHOT_CHECKER_STEPS`, else `ciSteps`.
    static func stepCount() -> Int {
        ProcessInfo.processInfo.environment["EARSHOT_CHECKER_STEPS"].flatMap { Int($0) } ?? ciSteps
    }

    /// The minutes of a soak run from `EARSHOT_CHECKER_MINUTES` (then seed after seed until they pass), or nil.
    static func minutes() -> Double? {
        ProcessInfo.processInfo.environment["EARSHOT_CHECKER_MINUTES"].flatMap { Double($0) }
    }

    /// Plays `steps` in a fresh world and returns the first failure, or nil when every check held.
    /// `log` prints each step as it is taken.
    static func play(_ steps: [CheckerStep], log: Bool = true) async throws -> CheckerFailure? {
        try await ServiceHarness.run { harness in
            let world = try await CheckerWorld(harness: harness)
            let oracle = CheckerOracle(world: world)
            var failure: CheckerFailure?
            var previous: CheckerObservation?
            for (index, step) in steps.enumerated() {
                guard let action = CheckerCatalogue.action(step.verb) else {
                    throw ToolkitError("the checker has no step `\(step.verb)` (CheckerCatalogue.actions)")
                }
                do {
                    try await action.perform(world, step.arguments)
                    previous = try await oracle.check(after: step, previous: previous)
                    if log { print("[checker] \(index + 1). \(step) -> \(previous.map { "\($0.status)" } ?? "?")") }
                } catch let finding as CheckerFinding {
                    if CheckerRun.ignoredChecks.contains(finding.check) {
                        print("[checker] \(index + 1). \(step): ignored (EARSHOT_CHECKER_IGNORE): \(finding)")
                        previous = nil
                        continue
                    }
                    failure = CheckerFailure(stepIndex: index, step: step, check: finding.check, detail: finding.detail)
                } catch {
                    // A step the harness could not take (a command that hung, a server that would not restart) is
                    // a finding too: the user would have seen it.
                    failure = CheckerFailure(stepIndex: index, step: step, check: "step completes", detail: "\(error)")
                }
                if let failure {
                    print("[checker] \(failure)\n[checker] service log:\n\(world.service.standardError())")
                    break
                }
            }
            await world.tearDown()
            return failure
        }
    }

    /// Shrinks the failing `steps` (which broke `failure`) to a shorter sequence that breaks the same check.
    static func shrink(_ steps: [CheckerStep], failure: CheckerFailure) async throws -> [CheckerStep] {
        var current = Array(steps.prefix(failure.stepIndex + 1))
        var replays = 0
        var chunk = max(1, current.count / 2)
        while chunk >= 1, replays < shrinkReplays {
            var start = 0
            var droppedAny = false
            while start < current.count, replays < shrinkReplays {
                let candidate = Array(current[..<start]) + Array(current[min(current.count, start + chunk)...])
                guard !candidate.isEmpty, candidate.count < current.count else { start += chunk; continue }
                replays += 1
                print("[checker] shrinking: replay \(replays) of at most \(shrinkReplays), \(candidate.count) steps: "
                      + "\(candidate.map(\.description))")
                if let again = try await play(candidate, log: false), again.check == failure.check {
                    current = Array(candidate.prefix(again.stepIndex + 1))
                    droppedAny = true
                } else {
                    start += chunk
                }
            }
            if !droppedAny { chunk /= 2 }
        }
        return current
    }

    /// The Swift test that replays `steps`, to paste into RandomizedCheckerTests.swift.
    static func regressionTest(_ steps: [CheckerStep], seed: UInt64, failure: CheckerFailure) -> String {
        let list = steps.map { "\"\($0)\"" }.joined(separator: ", ")
        return """
            @Test("found by seed \(seed): \(failure.check)")
            func foundBySeed\(seed)() async throws {
                try await Self.expectNoFinding([\(list)])
            }
            """
    }
}
