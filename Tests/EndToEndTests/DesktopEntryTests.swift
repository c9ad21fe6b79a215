// Earshot's desktop entry, Config/earshot.desktop (issue 24), which the .deb installs as
// /usr/share/applications/earshot.desktop: it validates, it offers exactly the types the decoder plays, and its Exec
// line, run as a launcher runs it ("Open with Earshot" on two files: `%F` expanded to both, the program found on
// PATH), queues both files in the running service and plays them. About 2 s of audio on the private server.
import AudioPipeline
import EarshotTestSupport
import Foundation
import Testing
import TrackPaths

@Suite("The desktop entry", .serialized)
struct DesktopEntryTests {
    /// The desktop entry in the repository.
    static let file = TestEnvironment.packageRoot.appendingPathComponent("Config/earshot.desktop")

    /// The `Key=value` lines of the entry's [Desktop Entry] group.
    static func keys() throws -> [String: String] {
        let text = try String(contentsOf: file, encoding: .utf8)
        var keys: [String: String] = [:]
        var inGroup = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) where !line.hasPrefix("#") {
            if line.hasPrefix("[") { inGroup = line == "[Desktop Entry]"; continue }
            guard inGroup, let equals = line.firstIndex(of: "=") else { continue }
            keys[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return keys
    }

    @Test("desktop-file-validate accepts it without a word")
    func validates() throws {
        let validator = try ProcessRunner.requireTool("desktop-file-validate", package: "desktop-file-utils")
        let result = try ProcessRunner.run(validator, [Self.file.path])
        #expect(result.status == 0, "\(result.standardOutput)\(result.standardError)")
        #expect((result.standardOutput + result.standardError).trimmed.isEmpty, "it printed something")
    }

    @Test("its MimeType is AudioFileKind.mimeTypes and PlaylistFormat.mimeTypes, its name and icon are Earshot's")
    func typesAreTheDecoders() throws {
        let keys = try Self.keys()
        let types = keys["MimeType"]?.split(separator: ";").map(String.init)
        #expect(types == AudioFileKind.mimeTypes + PlaylistFormat.mimeTypes)
        #expect(keys["Name"] == "Earshot")
        #expect(keys["Icon"] == "earshot")
        let icon = TestEnvironment.packageRoot.appendingPathComponent("Config/icons/earshot.svg")
        #expect(FileManager.default.fileExists(atPath: icon.path), "the icon the package installs")
    }

    @Test("its Exec line, with %F expanded to two files as a launcher does, queues both in the service and plays")
    func execQueuesBothFiles() async throws {
        let exec = try #require(try Self.keys()["Exec"]).split(separator: " ").map(String.init)
        try await ServiceHarness.run { harness in
            let service = try await harness.startService()
            let music = harness.root.appendingPathComponent("open with", isDirectory: true)
            let first = try Fixtures.copy(try Fixtures.tone(.mp3, frequency: 440, seconds: 1), to: music,
                                          named: "first song.mp3")
            let second = try Fixtures.copy(try Fixtures.tone(.flac, frequency: 660, seconds: 1), to: music,
                                           named: "second song.flac")
            // The desktop entry specification's field codes: %F is every file, one argument each; the launcher
            // finds the program on PATH (here the build's folder first), as GLib's and KDE's launchers do.
            let arguments = exec.flatMap { $0 == "%F" ? [first.path, second.path] : [$0] }
            #expect(arguments.first == "earshot", "Exec runs \(exec)")
            let binaryFolder = try TestEnvironment.earshotBinary.deletingLastPathComponent().path
            let path = binaryFolder + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            var environment = harness.environment
            environment["PATH"] = path
            let launched = try ProcessRunner.run("/usr/bin/env", ["PATH=\(path)"] + arguments,
                                                 environment: environment, timeout: .seconds(20))
            #expect(launched.status == 0, "`\(arguments.joined(separator: " "))`: \(launched.standardError)")
            let queue = try harness.earshotChecked(["queue"]).standardOutput
            #expect(queue.split(separator: "\n").map { $0.dropFirst(5) } == [Substring(first.path), second.path[...]],
                    "the queue after Open with: \(queue)")
            try await harness.waitForStatus(of: service, "playing what was opened") { $0.playback == "playing" }
            let end = try await harness.waitForStatus(of: service, "both played to the end",
                                                      timeout: .seconds(30)) { $0.playback == "stopped" }
            #expect(end.lastError == nil, "a track failed: \(end)")
            #expect(await harness.stopService(service) == 0, "earshot serve after SIGTERM")
        }
    }
}
