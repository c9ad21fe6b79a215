// The command line answers like a Unix tool (issue 11): `--version`, the whole help and each verb's help, usage
// errors with exit status 64 and the usage line on standard error, `status --json` printing the status object the
// README documents, the bash completion's verbs and options matching the CLI's own help, and `earshot play` without a
// sound server.
import EarshotTestSupport
import Foundation
import Testing

@Suite("The command line", .serialized)
struct CommandLineTests {
    @Test("--version prints `earshot <version>`, and --help, -h and help print the whole usage")
    func versionAndHelp() throws {
        let version = try Self.earshot(["--version"])
        #expect(version.status == 0)
        #expect(version.standardOutput.wholeMatch(of: /earshot [0-9]+\.[0-9]+\.[0-9]+\n/) != nil,
                "\(version.standardOutput.debugDescription)")
        let overview = try Self.earshot(["--help"])
        #expect(overview.status == 0)
        #expect(overview.standardOutput.hasPrefix("Usage: earshot VERB"), "\(overview.standardOutput)")
        #expect(overview.standardOutput.contains("Exit status:\n  0 "), "\(overview.standardOutput)")
        for alias in [["-h"], ["help"]] {
            let other = try Self.earshot(alias)
            #expect(other.status == 0)
            #expect(other.standardOutput == overview.standardOutput, "earshot \(alias)")
        }
    }

    @Test("help VERB and VERB --help print that verb's usage line, what it does and its options")
    func verbHelp() throws {
        let verbs = try Self.verbs()
        #expect(verbs.count >= 17, "\(verbs)")
        for verb in verbs {
            let help = try Self.earshot(["help", verb])
            #expect(help.status == 0, "earshot help \(verb): \(help.standardError)")
            #expect(help.standardOutput.hasPrefix("Usage: earshot \(verb)"), "\(help.standardOutput)")
            #expect(help.standardOutput.contains("\nOptions:\n"), "\(help.standardOutput)")
            for asking in ["--help", "-h"] {
                let same = try Self.earshot([verb, asking])
                #expect(same.status == 0, "earshot \(verb) \(asking)")
                #expect(same.standardOutput == help.standardOutput, "earshot \(verb) \(asking)")
            }
        }
        let play = try Self.earshot(["help", "play"]).standardOutput
        #expect(play.contains("--resume-window MINUTES"), "\(play)")
    }

    @Test("an unknown verb or option, a missing or bad value: the usage line on standard error and exit status 64")
    func usageErrors() throws {
        let cases: [(arguments: [String], usage: String)] = [
            ([], "Usage: earshot VERB"),
            (["frobnicate"], "Usage: earshot VERB"),
            (["--frobnicate"], "Usage: earshot VERB"),
            (["help", "frobnicate"], "Usage: earshot help"),
            (["pause", "--frobnicate"], "Usage: earshot pause"),
            (["pause", "now"], "Usage: earshot pause"),
            (["status", "--yaml"], "Usage: earshot status"),
            (["play", "--frobnicate", "x.mp3"], "Usage: earshot play"),
            (["play", "--latency", "5", "x.mp3"], "Usage: earshot play"),
            (["play", "--sink"], "Usage: earshot play"),
            (["seek"], "Usage: earshot seek"),
            (["seek", "soon"], "Usage: earshot seek"),
            (["volume", "200"], "Usage: earshot volume"),
            (["add"], "Usage: earshot add"),
        ]
        for (arguments, usage) in cases {
            let result = try Self.earshot(arguments)
            #expect(result.status == 64, "earshot \(arguments): \(result.status), \(result.standardError)")
            #expect(result.standardError.contains("\n" + usage), "earshot \(arguments): \(result.standardError)")
            #expect(result.standardOutput.isEmpty, "earshot \(arguments): \(result.standardOutput)")
        }
        // Every verb reaches its own argument check (a verb without a handler would not answer 64).
        for verb in try Self.verbs() {
            let result = try Self.earshot([verb, "--frobnicate"])
            #expect(result.status == 64, "earshot \(verb) --frobnicate: \(result.status), \(result.standardError)")
        }
        // A verb that needs the player, with no player running, is a failure (1), not a usage error.
        #expect(try Self.earshot(["pause"]).status == 1)
    }

    @Test("status --json prints the status object itself: playback at the top level, no envelope")
    func statusJSON() async throws {
        try await ServiceHarness.run { harness in
            let service = try await harness.startService()
            let output = try harness.earshotChecked(["status", "--json"]).standardOutput
            let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
            #expect(object?["playback"] as? String == "stopped", "\(output)")
            #expect(object?["ok"] == nil && object?["status"] == nil, "\(output)")
            // The control socket itself keeps its envelope.
            let reply = try harness.request(["command": "status"])
            #expect(reply["ok"] as? Bool == true && reply["status"] is [String: Any], "\(reply)")
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("`earshot play FILE` with no sound server says so and exits 1 (the connection is tried off the player)")
    func playWithoutServer() throws {
        let track = try Fixtures.positionTrack(seconds: 2)
        let nowhere = TestEnvironment.processTemporaryDirectory.appendingPathComponent("no-server/native").path
        let started = ContinuousClock.now
        let result = try ProcessRunner.run(
            try TestEnvironment.earshotBinary.path, ["play", track.path],
            environment: ["EARSHOT_SOCKET": Self.nobodySocket, "PULSE_SERVER": "unix:" + nowhere],
            timeout: .seconds(20))
        #expect(result.status == 1, "exit \(result.status): \(result.standardError)")
        #expect(result.standardError.contains("earshot: cannot connect to the sound server\n"),
                "\(result.standardError)")
        #expect(result.standardOutput.isEmpty, "\(result.standardOutput)")
        print("earshot play without a server exited after \(ContinuousClock.now - started)")
    }

    @Test("the bash completion offers the CLI's verbs and each verb's options")
    func completionMatchesHelp() throws {
        let script = try String(
            contentsOf: TestEnvironment.packageRoot.appendingPathComponent("Config/earshot.bash-completion"),
            encoding: .utf8)
        func words(_ variable: String) -> [String]? {
            guard let line = script.split(separator: "\n").first(where: { $0.hasPrefix("\(variable)=\"") }) else {
                return nil
            }
            return line.dropFirst(variable.count + 2).dropLast().split(separator: " ").map(String.init)
        }
        let verbs = try Self.verbs()
        #expect(words("_earshot_verbs") == verbs)
        for verb in verbs {
            let help = try Self.earshot(["help", verb]).standardOutput
            let optionLines = help.components(separatedBy: "\nOptions:\n").last?.split(separator: "\n") ?? []
            // An option line starts with its names (`-h, --help`, `--sink NAME`); the long name is the one offered.
            let options = optionLines.compactMap { line in
                line.split(separator: " ").prefix { $0.hasPrefix("-") }.map { $0.filter { $0 != "," } }
                    .first { $0.hasPrefix("--") }
            }
            let offered = words("_earshot_options_\(verb)") ?? ["--help"]
            #expect(Set(offered) == Set(options), "\(verb): completion \(offered), help \(options)")
        }
    }

    // MARK: Helpers

    /// A control socket where no player answers.
    private static var nobodySocket: String {
        TestEnvironment.processTemporaryDirectory.appendingPathComponent("nobody-here.sock").path
    }

    /// Runs `earshot ARGUMENTS` with a control socket where no player answers.
    private static func earshot(_ arguments: [String]) throws -> CommandResult {
        try ProcessRunner.run(
            try TestEnvironment.earshotBinary.path, arguments, environment: ["EARSHOT_SOCKET": nobodySocket],
            timeout: .seconds(20))
    }

    /// The verbs `earshot --help` lists, in its order: the first word of each line of its Verbs section.
    private static func verbs() throws -> [String] {
        let help = try earshot(["--help"]).requireSuccess().standardOutput
        let section = help.components(separatedBy: "\nVerbs:\n").last?.components(separatedBy: "\n\n").first ?? ""
        return section.split(separator: "\n").filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
    }
}
