// Driving and inspecting the private sound server with pactl and paplay, the way a user's system would:
// unplugging and replugging devices, moving streams, placing phone calls; and killing, freezing and restarting
// the server itself through scripts/lib/soundserver-ctl.
//
// Sinks are always named, never remembered by index: indices change when a module is reloaded.
// Lists come from `pactl --format=json` (pactl 16 and later, also against pipewire-pulse).

import Foundation

/// A sink as `pactl list sinks` reports it.
public struct Sink: Sendable, Equatable {
    /// The sink's index now (it changes across reloads: do not keep it).
    public let index: Int
    /// The sink's name, for example `headphones`.
    public let name: String
    /// The index of the module that created the sink, if any.
    public let ownerModule: Int?
    /// The sink's state: `RUNNING`, `IDLE` or `SUSPENDED`.
    public let state: String
}

/// A playback stream as `pactl list sink-inputs` reports it.
public struct SinkInput: Sendable, Equatable {
    /// The sink input's index.
    public let index: Int
    /// The name of the sink it plays on, or `nil` if that sink vanished while listing.
    public let sinkName: String?
    /// Whether the stream is corked (paused) by its client.
    public let corked: Bool
    /// Whether the server has muted it (module-role-cork mutes the streams it corks).
    public let muted: Bool
    /// The stream volume in percent, averaged over channels; `nil` while the server reports no channel volumes
    /// (pipewire-pulse lists a new stream before it knows them).
    public let volumePercent: Int?
    /// All stream properties, such as `media.role` and `application.name`.
    public let properties: [String: String]

    /// The `media.role` property (`music`, `phone`, ...), if set.
    public var role: String? { properties["media.role"] }
    /// The `application.name` property, if set.
    public var applicationName: String? { properties["application.name"] }
    /// The `application.process.id` property: the playing process, if known.
    public var processID: Int32? { properties["application.process.id"].flatMap { Int32($0) } }
    /// The `media.name` property, if set.
    public var mediaName: String? { properties["media.name"] }
}

/// pactl and paplay wrappers: the private sound server as the tests see and change it.
public enum ServerControl {
    /// The human-readable descriptions the standard layout gives its sinks (see Config/pulse-test.pa).
    public static let standardSinkDescriptions = [
        TestEnvironment.headphones: "Headphones", TestEnvironment.speakers: "Speakers",
    ]

    /// Runs `pactl` with `arguments` and returns its standard output; throws if it fails.
    @discardableResult
    public static func pactl(_ arguments: [String]) throws -> String {
        try ProcessRunner.runChecked("pactl", arguments, timeout: .seconds(20)).standardOutput
    }

    /// Runs `pactl --format=json` with `arguments` and returns the decoded array of objects.
    private static func pactlJSON(_ arguments: [String]) throws -> [[String: Any]] {
        let output = try pactl(["--format=json"] + arguments)
        guard let data = output.data(using: .utf8),
              let objects = try JSONSerialization.jsonObject(with: data) as? [[String: Any]]
        else {
            let command = (["pactl", "--format=json"] + arguments).joined(separator: " ")
            throw ToolkitError("unexpected output of `\(command)`: \(output)")
        }
        return objects
    }

    /// The sinks that exist now.
    public static func sinks() throws -> [Sink] {
        try pactlJSON(["list", "sinks"]).compactMap { object in
            guard let index = object["index"] as? Int, let name = object["name"] as? String else { return nil }
            return Sink(
                index: index, name: name, ownerModule: integer(object["owner_module"]),
                state: object["state"] as? String ?? "")
        }
    }

    /// Whether a sink called `name` exists now.
    public static func sinkExists(_ name: String) throws -> Bool {
        try sinks().contains { $0.name == name }
    }

    /// The index of the module that created the sink called `name` (its null-sink module).
    public static func sinkModuleIndex(name: String) throws -> Int {
        guard let sink = try sinks().first(where: { $0.name == name }) else {
            throw ToolkitError("no sink called \(name)")
        }
        guard let module = sink.ownerModule else {
            throw ToolkitError("sink \(name) has no owner module")
        }
        return module
    }

    /// The name of the default sink.
    public static func defaultSink() throws -> String {
        try pactl(["get-default-sink"]).trimmed
    }

    /// What the server has now, in short, for a failure's message: the default sink, the sinks (index, name, state),
    /// the streams on them (index, sink index, corked, application) and the cards (name, active profile). Never
    /// throws: what cannot be listed says so.
    public static func summary() -> String {
        // A short timeout: a frozen server answers nothing, and the failure is already on its way.
        func list(_ what: String, _ line: ([String: Any]) -> String) -> String {
            guard let output = try? ProcessRunner.runChecked(
                      "pactl", ["--format=json", "list", what], timeout: .seconds(3)).standardOutput,
                  let data = output.data(using: .utf8),
                  let objects = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]]
            else { return "\(what): not listed" }
            return "\(what): " + (objects.isEmpty ? "none" : objects.map(line).joined(separator: "; "))
        }
        let defaultSink = (try? ProcessRunner.runChecked("pactl", ["get-default-sink"], timeout: .seconds(3))
            .standardOutput.trimmed) ?? "not listed"
        // On PipeWire, the session manager's own record of the defaults: the one in use and the one a user chose.
        let metadata = (try? ProcessRunner.runChecked("pw-metadata", ["-n", "default", "0"], timeout: .seconds(3))
            .standardOutput.split(separator: "\n").filter { $0.contains("key:") }.joined(separator: "; "))
            .map { "default metadata: \($0)" }
        return [
            "default sink: \(defaultSink)",
            metadata ?? "default metadata: none (not PipeWire)",
            list("sinks") { "#\($0["index"] ?? "?") \($0["name"] ?? "?") \($0["state"] ?? "?")" },
            list("sink-inputs") { input in
                let properties = input["properties"] as? [String: Any]
                let corked = (input["corked"] as? Bool).map { "\($0)" } ?? "?"
                return "#\(input["index"] ?? "?") on sink #\(input["sink"] ?? "?") corked \(corked)"
                    + " \(properties?["application.name"] ?? "?")"
            },
            list("cards") { "\($0["name"] ?? "?") profile \($0["active_profile"] ?? "?")" },
        ].joined(separator: "\n")
    }

    /// Makes the sink called `name` the default sink.
    public static func setDefaultSink(_ name: String) throws {
        try pactl(["set-default-sink", name])
    }

    /// "Unplugs" the device `sink`: unloads its null-sink module, as a USB or Bluetooth removal does.
    public static func unplug(sink: String) throws {
        try pactl(["unload-module", "\(try sinkModuleIndex(name: sink))"])
    }

    /// "Replugs" the device `sink`: loads a null sink of that name again (and makes headphones the default).
    public static func replug(sink: String) throws {
        let description = standardSinkDescriptions[sink] ?? sink
        try pactl([
            "load-module", "module-null-sink", "sink_name=\(sink)", "sink_properties=device.description=\(description)",
        ])
        if sink == TestEnvironment.headphones {
            try setDefaultSink(sink)
        }
    }

    /// Puts the server back in the standard layout: both sinks present and headphones the default sink.
    ///
    /// Streams left over from other programs are not touched.
    public static func restoreStandardLayout() throws {
        let present = Set(try sinks().map(\.name))
        for sink in [TestEnvironment.headphones, TestEnvironment.speakers] where !present.contains(sink) {
            try replug(sink: sink)
        }
        if try defaultSink() != TestEnvironment.headphones {
            try setDefaultSink(TestEnvironment.headphones)
        }
    }

    /// The playback streams that exist now.
    public static func sinkInputs() throws -> [SinkInput] {
        let sinkNames = Dictionary(try sinks().map { ($0.index, $0.name) }) { first, _ in first }
        return try pactlJSON(["list", "sink-inputs"]).compactMap { object in
            guard let index = object["index"] as? Int else { return nil }
            let properties = (object["properties"] as? [String: Any] ?? [:]).compactMapValues { $0 as? String }
            return SinkInput(
                index: index,
                sinkName: integer(object["sink"]).flatMap { sinkNames[$0] },
                corked: object["corked"] as? Bool ?? false,
                muted: object["mute"] as? Bool ?? false,
                volumePercent: volumePercent(object["volume"]),
                properties: properties)
        }
    }

    /// The playback streams of the process `processID` (for example a running earshot or paplay).
    public static func sinkInputs(ofProcess processID: Int32) throws -> [SinkInput] {
        try sinkInputs().filter { $0.processID == processID }
    }

    /// Moves the stream `sinkInput` to the sink called `sink`, checks that it arrived, and retries.
    ///
    /// pipewire-pulse sometimes acknowledges a move it does not carry out (PLATFORM.md), and on a loaded machine
    /// WirePlumber can take over a second to relink a corked stream: up to three moves, each given two seconds.
    /// - Returns: how many moves it took.
    /// - Throws: if pactl fails, or the stream is still elsewhere after the third move.
    @discardableResult
    public static func move(sinkInput: Int, to sink: String) async throws -> Int {
        let attempts = 3
        for attempt in 1...attempts {
            try pactl(["move-sink-input", "\(sinkInput)", sink])
            let settled = try? await waitUntil(
                "sink input \(sinkInput) is on \(sink)", timeout: .seconds(2), interval: .milliseconds(10)
            ) {
                try sinkInputs().first { $0.index == sinkInput }?.sinkName == sink
            }
            if settled != nil { return attempt }
        }
        throw ToolkitError("sink input \(sinkInput) is not on \(sink) after \(attempts) moves")
    }

    /// Starts playing `file` with paplay on `sink` with `media.role=role`; stop it with `terminate()`.
    ///
    /// - Parameter bufferSeconds: paplay's target buffer, if not the server's default (2 s). A buffer longer
    ///   than the file makes paplay hand over the whole file at once, so that a starved paplay on a loaded
    ///   machine cannot underrun (after an underrun PulseAudio waits to prebuffer again: seconds of silence).
    public static func play(
        _ file: URL, sink: String = TestEnvironment.headphones, role: String = "music", bufferSeconds: Double? = nil
    ) throws -> ChildProcess {
        var arguments = ["--device=\(sink)", "--property=media.role=\(role)"]
        if let bufferSeconds {
            arguments.append("--latency-msec=\(Int(bufferSeconds * 1000))")
        }
        return try ChildProcess("paplay", arguments + [file.path])
    }

    /// Starts a phone call: paplay of `wav` on `sink` with `media.role=phone`, which module-role-cork obeys.
    ///
    /// The call ends when the file ends, or earlier with `terminate()`. `bufferSeconds` as for `play`.
    public static func startPhoneCall(
        wav: URL, sink: String = TestEnvironment.headphones, bufferSeconds: Double? = nil
    ) throws -> ChildProcess {
        try play(wav, sink: sink, role: "phone", bufferSeconds: bufferSeconds)
    }

    /// Reads a JSON number or numeric string as an integer (pactl writes some indices as strings).
    private static func integer(_ value: Any?) -> Int? {
        switch value {
        case let number as Int: number
        case let text as String: Int(text)
        default: nil
        }
    }

    /// The mean of the channels' `value_percent` in pactl's JSON volume object, or `nil` if it has none.
    private static func volumePercent(_ value: Any?) -> Int? {
        guard let channels = value as? [String: Any] else { return nil }
        let percents = channels.values.compactMap { channel -> Int? in
            guard let text = (channel as? [String: Any])?["value_percent"] as? String else { return nil }
            return Int(text.trimmingCharacters(in: CharacterSet(charactersIn: "% ")))
        }
        return percents.isEmpty ? nil : percents.reduce(0, +) / percents.count
    }
}

/// Starting, killing, freezing and restarting the private sound server through scripts/lib/soundserver-ctl.
public enum SoundServerControl {
    /// Runs `$SOUNDSERVER_CTL` (exported by scripts/test) with `arguments` (`kill`, `start`, `freeze`, `thaw`, ...)
    /// for whichever server runs; throws unless it succeeds.
    public static func run(_ arguments: String...) throws {
        _ = try control(arguments)
    }

    /// What `$SOUNDSERVER_CTL pid` prints: the process id of the running server, to tell a restart happened.
    public static func serverProcessID() throws -> String {
        try control(["pid"]).standardOutput.trimmed
    }

    /// Runs `$SOUNDSERVER_CTL` with `arguments` and returns its result; throws unless it succeeds.
    private static func control(_ arguments: [String]) throws -> CommandResult {
        guard let script = ProcessInfo.processInfo.environment["SOUNDSERVER_CTL"], !script.isEmpty else {
            throw ToolkitError("SOUNDSERVER_CTL is not set: run the tests through scripts/test")
        }
        return try ProcessRunner.runChecked(script, arguments, timeout: .seconds(60))
    }
}
