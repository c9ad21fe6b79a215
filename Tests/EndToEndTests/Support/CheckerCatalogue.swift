// The randomized checker's step catalogue (issue 35 item 4): every kind of step it can take, in one table.
//
// A step is a line of text, `VERB ARGUMENT...` (`add good.mp3 notaudio.mp3`, `unplug`, `call-start`), so that a
// sequence prints as a Swift array of strings that can be pasted into a regression test and replayed as it is.
// Each entry of `CheckerCatalogue.actions` names its verb, how often the generator picks it, how it draws its
// arguments and what it does to the world. Steps must do nothing harmful when they do not apply (a `replug` with
// nothing unplugged, a `call-end` with no call), because the shrinker drops steps and replays what remains.
//
// Later features add their commands here, in this one table, as the library (`findadd file good.ogg`, `update`),
// ReplayGain (`replaygain album`), internet radio (`add-station`, `live`), the MPD front-end (`mpc-next`, through
// the real mpc) and MPRIS (`mpris-pause`, through playerctl) have. The checker's oracle (CheckerOracle.swift) does not change for them: it checks the server
// and the monitors after every step whatever the step was.

import EarshotTestSupport
import Foundation

/// One step of a checker run: a verb and its arguments, written as one line of text.
struct CheckerStep: Sendable, Equatable, CustomStringConvertible {
    /// The catalogue entry's verb.
    let verb: String
    /// Its arguments (file names of `CheckerMusic`, a mode, seconds, percent).
    let arguments: [String]

    /// Reads a step from its text (`add good.mp3 notaudio.mp3`).
    init(_ text: String) {
        let words = text.split(separator: " ").map(String.init)
        verb = words.first ?? ""
        arguments = Array(words.dropFirst())
    }

    /// Makes a step from its parts.
    init(verb: String, arguments: [String] = []) {
        self.verb = verb
        self.arguments = arguments
    }

    /// The step as one line: what a regression test lists.
    var description: String { ([verb] + arguments).joined(separator: " ") }
}

/// One kind of step: the row of the catalogue that generates and performs it.
struct CheckerAction: Sendable {
    /// The step's verb.
    let verb: String
    /// How often the generator picks it, relative to the others.
    let weight: Int
    /// Whether the step may move the track position by itself (a seek, a track change, a stop that rewinds):
    /// the oracle's position check allows a move only after such a step, or while playing.
    let movesPosition: Bool
    /// Draws the step's arguments.
    let arguments: @Sendable (inout SplitMix64) -> [String]
    /// Performs the step on the world; a step that does not apply does nothing.
    let perform: @Sendable (CheckerWorld, [String]) async throws -> Void

    /// A user command sent with the CLI, `earshot VERB ARGUMENTS` (a refusal, such as `next` on an empty queue,
    /// is an answer, not a failure: the oracle judges what follows).
    static func earshot(
        _ verb: String, weight: Int, movesPosition: Bool = false,
        arguments: @escaping @Sendable (inout SplitMix64) -> [String] = { _ in [] }
    ) -> CheckerAction {
        CheckerAction(verb: verb, weight: weight, movesPosition: movesPosition, arguments: arguments) { world, words in
            try world.earshot([verb] + words)
        }
    }

    /// A command sent by the real `mpc` on the MPD socket, as the step `mpc-VERB ARGUMENTS` (an MPD error is an
    /// answer, as a CLI refusal is).
    static func mpc(
        _ verb: String, weight: Int, movesPosition: Bool = false,
        arguments: @escaping @Sendable (inout SplitMix64) -> [String] = { _ in [] }
    ) -> CheckerAction {
        CheckerAction(verb: "mpc-\(verb)", weight: weight, movesPosition: movesPosition, arguments: arguments) {
            world, words in
            try world.mpc([verb] + words)
        }
    }

    /// A method called by the real `playerctl` on MPRIS, as the step `mpris-COMMAND ARGUMENTS`.
    static func mpris(
        _ command: String, weight: Int, movesPosition: Bool = false,
        arguments: @escaping @Sendable (inout SplitMix64) -> [String] = { _ in [] }
    ) -> CheckerAction {
        CheckerAction(verb: "mpris-\(command)", weight: weight, movesPosition: movesPosition, arguments: arguments) {
            world, words in
            try world.playerctl([command] + words)
        }
    }
}

/// The table of every step the checker knows.
enum CheckerCatalogue {
    /// Every action, user commands first, then the server's events and the clients'.
    static let actions: [CheckerAction] = [
        // The user, through the CLI (the control socket, as every front-end reaches the rules).
        .earshot("play", weight: 12, movesPosition: true),
        .earshot("pause", weight: 5),
        .earshot("toggle", weight: 5, movesPosition: true),
        .earshot("stop", weight: 3, movesPosition: true),
        .earshot("next", weight: 6, movesPosition: true),
        .earshot("previous", weight: 3, movesPosition: true),
        .earshot("seek", weight: 3, movesPosition: true) { random in
            [String(format: "%.1f", Double(Int.random(in: 0...35, using: &random)) / 10)]
        },
        .earshot("add", weight: 6, movesPosition: true) { random in
            (0..<Int.random(in: 1...3, using: &random)).map { _ in
                CheckerMusic.names.randomElement(using: &random) ?? CheckerMusic.good
            }
        },
        .earshot("clear", weight: 1, movesPosition: true),
        .earshot("repeat", weight: 3) { random in [["off", "track", "queue"].randomElement(using: &random) ?? "off"] },
        .earshot("shuffle", weight: 2) { random in [Bool.random(using: &random) ? "on" : "off"] },
        // Rules 35-37: stop after the track (once or each time), and the played tracks leaving the queue.
        .earshot("single", weight: 1) { random in [["on", "off", "oneshot"].randomElement(using: &random) ?? "off"] },
        .earshot("consume", weight: 1) { random in [Bool.random(using: &random) ? "on" : "off"] },
        // Never below 30 %: a playing stream at 0 % is silent, and the oracle listens for it.
        .earshot("volume", weight: 2) { random in ["\(Int.random(in: 30...120, using: &random))"] },
        // The library (issue 36) of the music folder, through the CLI: a scan while playing, tracks queued by a query.
        .earshot("update", weight: 1),
        .earshot("rescan", weight: 1),
        .earshot("findadd", weight: 3, movesPosition: true) { random in
            ["file", CheckerMusic.names.randomElement(using: &random) ?? CheckerMusic.good]
        },
        .earshot("searchadd", weight: 1, movesPosition: true) { random in
            ["file", ["good", "garbled", "notaudio"].randomElement(using: &random) ?? "good"]
        },
        // Internet radio (issue 40): a station that never ends, and the jump to its live edge (refused off it).
        CheckerAction(verb: "add-station", weight: 2, movesPosition: true, arguments: { _ in [] }) { world, _ in
            try world.addStation()
        },
        .earshot("live", weight: 1, movesPosition: true),
        .earshot("replaygain", weight: 2) { random in
            [["off", "track", "album", "auto"].randomElement(using: &random) ?? "auto"]
        },
        // The user through MPD's protocol (issue 37), with the real mpc on the service's MPD socket.
        .mpc("play", weight: 3, movesPosition: true),
        .mpc("pause", weight: 2),
        .mpc("toggle", weight: 2, movesPosition: true),
        .mpc("stop", weight: 1, movesPosition: true),
        .mpc("next", weight: 2, movesPosition: true),
        .mpc("prev", weight: 1, movesPosition: true),
        .mpc("seek", weight: 1, movesPosition: true) { random in ["\(Int.random(in: 0...3, using: &random))"] },
        .mpc("add", weight: 2, movesPosition: true) { random in
            [CheckerMusic.names.randomElement(using: &random) ?? CheckerMusic.good]
        },
        .mpc("del", weight: 1, movesPosition: true) { random in ["\(Int.random(in: 1...3, using: &random))"] },
        .mpc("move", weight: 1, movesPosition: true) { random in
            ["\(Int.random(in: 1...3, using: &random))", "\(Int.random(in: 1...3, using: &random))"]
        },
        .mpc("crop", weight: 1, movesPosition: true),
        .mpc("repeat", weight: 1) { random in [Bool.random(using: &random) ? "on" : "off"] },
        .mpc("random", weight: 1) { random in [Bool.random(using: &random) ? "on" : "off"] },
        .mpc("single", weight: 1) { random in [["on", "off", "once"].randomElement(using: &random) ?? "off"] },
        .mpc("consume", weight: 1) { random in [Bool.random(using: &random) ? "on" : "off"] },
        .mpc("volume", weight: 1) { random in ["\(Int.random(in: 30...100, using: &random))"] },
        // The desktop's media controls, through MPRIS with the real playerctl.
        .mpris("play", weight: 2, movesPosition: true),
        .mpris("pause", weight: 2),
        .mpris("play-pause", weight: 2, movesPosition: true),
        .mpris("next", weight: 1, movesPosition: true),
        .mpris("previous", weight: 1, movesPosition: true),
        .mpris("stop", weight: 1, movesPosition: true),
        // The sound server and the session.
        CheckerAction(verb: "unplug", weight: 3, movesPosition: false, arguments: { _ in [] }) { world, _ in
            try world.unplugUSB()
        },
        CheckerAction(verb: "replug", weight: 3, movesPosition: false, arguments: { _ in [] }) { world, _ in
            try await world.replugUSB()
        },
        CheckerAction(verb: "call-start", weight: 2, movesPosition: false, arguments: { _ in [] }) { world, _ in
            try world.startPhoneCall()
        },
        CheckerAction(verb: "call-end", weight: 2, movesPosition: false, arguments: { _ in [] }) { world, _ in
            await world.endPhoneCall()
        },
        CheckerAction(verb: "mic-start", weight: 1, movesPosition: false, arguments: { _ in [] }) { world, _ in
            try world.startMicrophone()
        },
        CheckerAction(verb: "mic-end", weight: 1, movesPosition: false, arguments: { _ in [] }) { world, _ in
            await world.endMicrophone()
        },
        CheckerAction(verb: "move", weight: 2, movesPosition: false, arguments: { _ in [] }) { world, _ in
            try await world.moveOurStream()
        },
        CheckerAction(verb: "server-restart", weight: 1, movesPosition: false, arguments: { _ in [] }) { world, _ in
            try await world.restartServer()
        },
        // A client of Earshot that stops reading (a pager left open), and carries on.
        CheckerAction(verb: "follower-stop", weight: 1, movesPosition: false, arguments: { _ in [] }) { world, _ in
            world.stopFollower()
        },
        CheckerAction(verb: "follower-continue", weight: 1, movesPosition: false, arguments: { _ in [] }) { world, _ in
            world.continueFollower()
        },
    ]

    /// The action of `verb`, if the catalogue has one.
    static func action(_ verb: String) -> CheckerAction? {
        actions.first { $0.verb == verb }
    }

    /// A random sequence of `count` steps from `seed`: the same seed gives the same steps.
    static func sequence(seed: UInt64, count: Int) -> [CheckerStep] {
        var random = SplitMix64(seed: seed)
        let total = actions.reduce(0) { $0 + $1.weight }
        // Every run starts with something to play, so that the first steps are not spent on an empty queue.
        var steps = [CheckerStep(verb: "add", arguments: [CheckerMusic.good])]
        while steps.count < count {
            var pick = Int.random(in: 0..<total, using: &random)
            let action = actions.first { action in
                defer { pick -= action.weight }
                return pick < action.weight
            } ?? actions[0]
            steps.append(CheckerStep(verb: action.verb, arguments: action.arguments(&random)))
        }
        return Array(steps.prefix(count))
    }
}

/// The files the checker's steps name: good files of every format and bad ones, made by the tests' fixtures.
enum CheckerMusic {
    /// How long each good track lasts: short, so that runs reach the ends of tracks and queues.
    static let trackSeconds = 4.0
    /// The station's tone (`add-station`), above the files' tones.
    static let stationHz = 3000.0
    /// A good MP3, the first file of every run.
    static let good = "good.mp3"
    /// A file of random bytes named like an MP3 (issue 35's case).
    static let notAudio = "notaudio.mp3"
    /// Every file name a step may add.
    static let names = [
        good, "good.flac", "good.ogg", "good.opus", notAudio,
        "garbled.mp3", "garbled.flac", "garbled.ogg", "garbled.opus",
    ]

    /// Makes every file in `folder` (tones at distinct frequencies, all above the band of anything else played).
    static func make(in folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Fixtures.copy(try Fixtures.tone(frequency: 1000, seconds: trackSeconds), to: folder, named: good)
        try Fixtures.copy(try Fixtures.undecodable(bytes: 20_000), to: folder, named: notAudio)
        let formats: [(Fixtures.Format, String, Double)] = [(.flac, "flac", 1500), (.vorbis, "ogg", 2000),
                                                            (.opus, "opus", 2500)]
        for (format, fileExtension, frequency) in formats {
            let wav = try Fixtures.toneWAV(frequency: frequency, seconds: trackSeconds)
            try Fixtures.encode(wav, as: format, into: folder.appendingPathComponent("good.\(fileExtension)"))
        }
        // A garbled file keeps its format's first 2 KiB (so the decoder opens it) and random bytes after: it fails
        // at open or within the first frames, depending on the decoder.
        var random = SplitMix64(seed: 0x35_4)
        for fileExtension in ["mp3", "flac", "ogg", "opus"] {
            let original = try Data(contentsOf: folder.appendingPathComponent("good.\(fileExtension)"))
            let noise = (0..<max(0, original.count - 2048)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            try (original.prefix(2048) + Data(noise))
                .write(to: folder.appendingPathComponent("garbled.\(fileExtension)"))
        }
    }
}
