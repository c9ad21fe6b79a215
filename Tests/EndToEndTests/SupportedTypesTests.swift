// What the service advertises it plays (issue 15): MPRIS's `SupportedMimeTypes` on the root object, read with
// dbus-send over the private session bus as a desktop's media controls would, must list MP3, FLAC, Ogg and Opus,
// must be the product's own table (AudioFileKind.mimeTypes, the one list PlayerService hands the MPRIS server, then
// the playlists' PlaylistFormat.mimeTypes, which PlaylistOpenTests opens), and every audio type it lists must really
// play: one track of each type is queued and heard, in order, off the monitor.
import AudioPipeline
import EarshotTestSupport
import Foundation
import Testing
import TrackPaths

@Suite("SupportedMimeTypes lists what plays", .serialized)
struct SupportedTypesTests {
    /// The types a desktop's file manager offers to Earshot that it must take: MP3, FLAC, Ogg, and the Opus one.
    static let required = ["audio/mpeg", "audio/flac", "audio/ogg", "audio/opus"]
    /// What this test makes for each type it knows: a tone in that format. `audio/ogg` is the Ogg container, whose
    /// usual content is Vorbis. A type the service lists that is missing here fails the test: nothing advertised
    /// goes unplayed.
    static let fixtureFormats: [String: Fixtures.Format] = [
        "audio/mpeg": .mp3, "audio/flac": .flac, "audio/ogg": .vorbis, "audio/vorbis": .vorbis, "audio/opus": .opus,
    ]
    /// How long each type's track lasts, in seconds.
    static let trackSeconds = 1.0

    @Test("the MPRIS root's SupportedMimeTypes is the product's table, names MP3, FLAC, Ogg and Opus, and each plays")
    func advertisedTypesPlay() async throws {
        try await ServiceHarness.run { harness in
            // Each file's heard length is measured to 30 ms: fades off, or the first play's fade-in (`fadeMs`) takes
            // that much off the start (EdgesTests measure the fades themselves).
            try harness.writeConfiguration(#"{"fadeMs": 0}"#)
            let service = try await harness.startService(waitForMPRIS: true)
            let advertised = try Self.supportedMimeTypes(on: harness)
            for type in Self.required {
                #expect(advertised.contains(type), "SupportedMimeTypes lacks \(type): \(advertised)")
            }
            #expect(advertised == AudioFileKind.mimeTypes + PlaylistFormat.mimeTypes, "the service lists \(advertised)")
            #expect(Set(advertised).count == advertised.count, "a type listed twice: \(advertised)")

            // One track per listed type, each a tone 300 Hz above the one before (10 ms windows tell them apart).
            let music = harness.root.appendingPathComponent("music", isDirectory: true)
            var queue: [(type: String, frequency: Double, file: URL)] = []
            // The playlists it opens are listed too (issue 39); PlaylistOpenTests plays them.
            for type in advertised where !PlaylistFormat.mimeTypes.contains(type) {
                guard let format = Self.fixtureFormats[type] else {
                    Issue.record("SupportedMimeTypes lists \(type), which this test cannot make a file of")
                    continue
                }
                let frequency = 400 + 300 * Double(queue.count)
                let name = "\(queue.count + 1) \(type.replacingOccurrences(of: "/", with: "-")).\(format.fileExtension)"
                let file = try Fixtures.copy(
                    try Fixtures.tone(format, frequency: frequency, seconds: Self.trackSeconds), to: music, named: name)
                queue.append((type, frequency, file))
            }
            try #require(!queue.isEmpty)

            let recording = try await withMonitorRecorders([TestEnvironment.headphones]) { recorders in
                try harness.earshotChecked(["play"] + queue.map(\.file.path))
                try await harness.waitForStatus(of: service, "playing the queue") { $0.playback == "playing" }
                let end = try await harness.waitForStatus(of: service, "the queue played to its end",
                                                          timeout: .seconds(60)) { $0.playback == "stopped" }
                #expect(end.lastError == nil, "a track failed: \(end)")
                // Let the last block reach the monitor.
                try await Task.sleep(for: .milliseconds(300))
                return try await stopRecorders(recorders)[0]
            }

            // Each type's tone is heard, after the one before it, for the track's length.
            var previousEnd = 0.0
            for (type, frequency, _) in queue {
                let heard = recording.toneRanges(atFrequency: frequency, amplitude: 0.2, within: recording.wholeRange)
                guard let start = heard.first?.lowerBound, let end = heard.last?.upperBound else {
                    Issue.record("\(type): its \(frequency) Hz track was not heard; log:\n\(service.standardError())")
                    continue
                }
                report("\(type): heard for", (end - start) * 1000)
                #expect(start >= previousEnd - 0.03, "\(type) began at \(start) s, before the track before ended")
                #expect(abs(end - start - Self.trackSeconds) <= 0.03, "\(type): heard for \(end - start) s")
                previousEnd = end
            }
            #expect(await harness.stopService(service) == 0)
        }
    }

    /// The root object's `SupportedMimeTypes`, as `dbus-send` reads it from the harness's session bus.
    private static func supportedMimeTypes(on harness: ServiceHarness) throws -> [String] {
        let reply = try ProcessRunner.run("dbus-send", [
            "--session", "--print-reply", "--dest=org.mpris.MediaPlayer2.earshot", "/org/mpris/MediaPlayer2",
            "org.freedesktop.DBus.Properties.Get", "string:org.mpris.MediaPlayer2", "string:SupportedMimeTypes",
        ], environment: harness.environment, timeout: .seconds(10)).requireSuccess().standardOutput
        // The answer: `variant array [` then one `string "TYPE"` line per element, then `]`.
        let types = reply.split(separator: "\n").compactMap { line -> String? in
            let text = line.trimmingCharacters(in: .whitespaces)
            guard text.hasPrefix("string \""), text.hasSuffix("\"") else { return nil }
            return String(text.dropFirst("string \"".count).dropLast())
        }
        guard reply.contains("array ["), !types.isEmpty else {
            throw ToolkitError("SupportedMimeTypes is not a list of strings: \(reply)")
        }
        return types
    }
}
