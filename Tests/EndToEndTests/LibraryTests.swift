// The music library end to end: `earshot serve` with a generated collection as its music folder (LibraryFixtures)
// fills its library on its own, and the CLI's library verbs answer as mpc's do, checked against the tags written; a
// file added later is found after `earshot update`, one deleted is gone without it (inotify); `findadd` queues an
// album in disc and track order through the owner's `add`, and it plays to its end; a rescan of a thousand files
// while a track plays costs no underrun.
import EarshotTestSupport
import Foundation
import Testing

@Suite("Music library end to end", .serialized)
struct LibraryTests {
    /// The library part of a status reply.
    static func library(_ harness: ServiceHarness) throws -> [String: Any] {
        let reply = try harness.requestChecked(["command": "status"])
        return (reply["status"] as? [String: Any])?["library"] as? [String: Any] ?? [:]
    }

    /// Waits until the library holds `tracks` tracks and no scan runs.
    static func waitForTracks(_ tracks: Int, _ harness: ServiceHarness) async throws {
        // The scan runs under SCHED_IDLE: on a loaded machine it waits its turn, hence the generous timeout.
        try await waitUntil("the library holds \(tracks) tracks", timeout: .seconds(180),
                            interval: .milliseconds(50)) {
            let library = try library(harness)
            return library["scanning"] as? Bool == false && library["tracks"] as? Int == tracks
        }
    }

    /// The lines `earshot ARGUMENTS` prints.
    static func lines(_ harness: ServiceHarness, _ arguments: [String]) throws -> [String] {
        try harness.earshotChecked(arguments).standardOutput.split(separator: "\n").map(String.init)
    }

    @Test("update, search, find, list, ls and findadd answer from the tags written; the album found plays")
    func libraryVerbs() async throws {
        try await ServiceHarness.run { harness in
            let music = try LibraryFixtures.make(in: harness.root.appendingPathComponent("music", isDirectory: true))
            try harness.writeConfiguration(#"{"musicDirectories": ["\#(music.path)"]}"#)
            let service = try await harness.startService()
            // A new library with a music folder is scanned at once.
            try await Self.waitForTracks(LibraryFixtures.tracks.count, harness)
            let skipped = try Self.library(harness)["skipped"] as? [String: Int]
            #expect(skipped?["loop"] == 2, "\(String(describing: skipped))")
            #expect(try harness.earshotChecked(["status"]).standardOutput.contains("\nlibrary: 5 tracks (skipped: "))

            let sigur = LibraryFixtures.tracks.filter { $0.artist == "Sigur Rós" }.map(\.path)
            #expect(try Self.lines(harness, ["search", "artist", "SIGUR ros"]) == sigur)
            #expect(try Self.lines(harness, ["search", "any", "englar", "date", "199"]) == sigur)
            let kind = LibraryFixtures.tracksInOrder.filter { $0.album == "Kind of Blue" }
            #expect(try Self.lines(harness, ["find", "album", "Kind of Blue"]) == kind.map(\.path))
            #expect(try Self.lines(harness, ["find", "album", "kind of blue"]).isEmpty)
            #expect(try Self.lines(harness, ["list", "album"]) == ["Kind of Blue", "Bitches Brew", "Ágætis byrjun"])
            #expect(try Self.lines(harness, ["list", "genre", "artist", "Miles Davis"]) == ["Jazz", "Jazz Fusion"])
            // MPD's filter expressions, the same words mpc sends.
            #expect(try Self.lines(harness, ["find", "((album == 'Kind of Blue') AND (track == '2'))"])
                == [kind[1].path])
            #expect(try Self.lines(harness, ["search", "(album starts_with 'KIND')"]) == kind.map(\.path))
            #expect(try Self.lines(harness, ["list", "album", "(genre starts_with 'Jazz')"])
                == ["Kind of Blue", "Bitches Brew"])
            #expect(try Self.lines(harness, ["list", "album", "(date != '1999')", "group", "artist"])
                == ["Miles Davis\tBitches Brew", "Miles Davis\tKind of Blue"])
            let byTitle = LibraryFixtures.tracks.filter { $0.artist == "Miles Davis" }.sorted { $0.title < $1.title }
            #expect(try Self.lines(harness, ["find", "(artist == 'Miles Davis')", "sort", "title", "window", "1:3"])
                == byTitle[1..<3].map(\.path))
            // `--` lets a descending sort through the CLI's option parsing.
            let descending = ["find", "--", "(artist == 'Miles Davis')", "sort", "-title", "window", "1"]
            #expect(try Self.lines(harness, descending) == [byTitle[byTitle.count - 2].path])
            let regex = try harness.earshot(["find", "(artist =~ 'M.*')"])
            #expect(regex.status == 64 && regex.standardError.contains("no regular expressions"), "\(regex)")
            #expect(try Self.lines(harness, ["ls"]) == ["Miles Davis", "Playlists", "Sigur Rós"])
            #expect(try Self.lines(harness, ["ls", "Playlists"]) == [LibraryFixtures.playlistPath])

            // --json: every track with the tags written.
            let output = try harness.earshotChecked(["search", "--json", "artist", "miles"]).standardOutput
            let tracks = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]])
            let miles = LibraryFixtures.tracksInOrder.filter { $0.artist == "Miles Davis" }
            #expect(tracks.map { $0["file"] as? String } == miles.map(\.path))
            for (track, written) in zip(tracks, miles) {
                #expect(track["title"] as? String == written.title)
                #expect(track["album"] as? String == written.album)
                #expect(track["date"] as? String == written.date)
                #expect(track["genre"] as? String == written.genre)
                #expect(track["track"] as? Int == written.track && track["disc"] as? Int == written.disc)
                #expect(track["path"] as? String == music.appendingPathComponent(written.path).path)
            }

            // A file added later is found once `earshot update` has run.
            let added = music.appendingPathComponent("Sigur Rós/Ágætis byrjun/02 Olsen Olsen.flac")
            try Fixtures.encode(try Fixtures.toneWAV(frequency: 523, seconds: 0.4), as: .flac, into: added,
                                tags: ["TITLE": "Olsen Olsen", "ARTIST": "Sigur Rós", "ALBUM": "Ágætis byrjun",
                                       "DATE": "1999", "TRACKNUMBER": "2", "DISCNUMBER": "1"])
            #expect(try Self.lines(harness, ["update"]).isEmpty)
            try await Self.waitForTracks(LibraryFixtures.tracks.count + 1, harness)
            #expect(try Self.lines(harness, ["find", "album", "Ágætis byrjun"]).last == "Sigur Rós/Ágætis byrjun/02 "
                + "Olsen Olsen.flac")

            // Without an update, the watcher applies a deletion.
            try FileManager.default.removeItem(at: added)
            try await Self.waitForTracks(LibraryFixtures.tracks.count, harness)
            #expect(try Self.lines(harness, ["find", "title", "Olsen Olsen"]).isEmpty)
            // rescan --wait returns when its scan has ended, with the library's line.
            #expect(try Self.lines(harness, ["rescan", "--wait"])
                == ["library: 5 tracks (skipped: 2 loop, 1 notMPEGAudio)"])

            // findadd queues the album in disc and track order, through `add`; then it plays to its end.
            let brew = LibraryFixtures.tracksInOrder.filter { $0.album == "Bitches Brew" }
            let reply = try harness.earshotChecked(["findadd", "--json", "album", "Bitches Brew"]).standardOutput
            #expect(reply.trimmingCharacters(in: .whitespacesAndNewlines) == #"{"added":2}"#)
            let queue = try Self.lines(harness, ["queue"])
            #expect(queue == brew.enumerated().map { index, track in
                "\(index == 0 ? ">" : " ") \(index + 1). \(music.appendingPathComponent(track.path).path)"
            })
            _ = try harness.earshotChecked(["play"])
            // The second track heard proves the first played through; the queue's end stops the player.
            try await harness.waitForStatus(of: service, "the album's second track plays", timeout: .seconds(60)) {
                $0.playback == "playing" && $0.trackIndex == 1
            }
            let end = try await harness.waitForStatus(of: service, "the album has played to its end",
                                                      timeout: .seconds(60)) { $0.playback == "stopped" }
            #expect(end.lastError == nil, "\(end)")
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("a rescan of a thousand files while music plays: no underrun, no server underflow, still playing")
    func scanWhilePlaying() async throws {
        try await ServiceHarness.run { harness in
            let music = try LibraryFixtures.make(in: harness.root.appendingPathComponent("music", isDirectory: true))
            // A thousand more files: hard links of one FLAC in ten folders (each is read as a file of its own).
            let source = music.appendingPathComponent(LibraryFixtures.tracks[1].path)
            for folder in 0..<10 {
                let directory = music.appendingPathComponent("Flood \(folder)", isDirectory: true)
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                for index in 0..<100 {
                    try FileManager.default.linkItem(at: source, to: directory.appendingPathComponent("\(index).flac"))
                }
            }
            try harness.writeConfiguration(#"{"musicDirectories": ["\#(music.path)"]}"#)
            let service = try await harness.startService()
            try await Self.waitForTracks(LibraryFixtures.tracks.count + 1_000, harness)
            let track = try harness.privatePositionTrack()
            _ = try harness.earshotChecked(["play", track.path])
            let before = try await harness.waitForStatus(of: service, "the track plays") {
                $0.playback == "playing" && $0.positionMs >= 500
            }
            // Every file read again, at idle priority, while the track plays.
            let line = try harness.earshotChecked(["rescan", "--wait"], timeout: .seconds(180)).standardOutput
            #expect(line.hasPrefix("library: 1005 tracks"), "\(line)")
            let after = try harness.status()
            print("scan while playing: \(after)")
            #expect(after.playback == "playing" && after.trackIndex == 0, "\(after)")
            #expect(after.underruns == before.underruns, "\(before) -> \(after)")
            #expect(after.serverUnderflows == before.serverUnderflows, "\(before) -> \(after)")
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("a query before the library is made, or malformed, fails with a reason; usage errors exit 64")
    func refusals() async throws {
        try await ServiceHarness.run { harness in
            let nowhere = harness.root.appendingPathComponent("no-music").path
            try harness.writeConfiguration(#"{"musicDirectories": ["\#(nowhere)"]}"#)
            let service = try await harness.startService()
            let unknownTag = try harness.earshot(["search", "colour", "red"])
            #expect(unknownTag.status == 64 && unknownTag.standardError.contains("unknown tag 'colour'"))
            let odd = try harness.earshot(["find", "artist"])
            #expect(odd.status == 64, "\(odd.standardError)")
            // The socket refuses the same, whatever a client sends.
            let reply = try harness.request(["command": "list", "words": ["any"]])
            #expect(reply["ok"] as? Bool == false)
            // A missing music folder: the library is empty, and counted as such.
            _ = try harness.earshotChecked(["update"])
            try await Self.waitForTracks(0, harness)
            #expect(try Self.lines(harness, ["search", "any", "anything"]).isEmpty)
            // Counted as a music folder that is not there (a disk not mounted, docs/library.md), its name never logged.
            #expect(try Self.library(harness)["skipped"] as? [String: Int] == ["musicFolderGone": 1])
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("an unreadable file and folder are counted as permission and left out; the rest is found and plays")
    func unreadable() async throws {
        try await ServiceHarness.run { harness in
            let music = try LibraryFixtures.make(in: harness.root.appendingPathComponent("music", isDirectory: true))
            let closedFolder = music.appendingPathComponent("Sigur Rós")
            let closedFile = music.appendingPathComponent("Miles Davis/1959 Kind of Blue/01 So What.mp3")
            let files = FileManager.default
            try files.setAttributes([.posixPermissions: 0], ofItemAtPath: closedFolder.path)
            try files.setAttributes([.posixPermissions: 0], ofItemAtPath: closedFile.path)
            defer {
                try? files.setAttributes([.posixPermissions: 0o755], ofItemAtPath: closedFolder.path)
                try? files.setAttributes([.posixPermissions: 0o644], ofItemAtPath: closedFile.path)
            }
            try harness.writeConfiguration(#"{"musicDirectories": ["\#(music.path)"]}"#)
            // Root reads any file: the service runs without the capabilities that ignore file modes, as a user would.
            let launcher = getuid() == 0
                ? [try ProcessRunner.locate("setpriv").path, "--bounding-set=-dac_override,-dac_read_search"] : []
            let service = try await harness.startService(launcher: launcher)
            let readable = LibraryFixtures.tracksInOrder.filter {
                !$0.path.hasPrefix("Sigur Rós/") && $0.path != "Miles Davis/1959 Kind of Blue/01 So What.mp3"
            }
            try await Self.waitForTracks(readable.count, harness)
            let skipped = try Self.library(harness)["skipped"] as? [String: Int] ?? [:]
            #expect(skipped["permission"] == 2, "\(skipped)")
            let text = try harness.earshotChecked(["status"]).standardOutput
            #expect(text.contains("2 permission"), "\(text)")
            #expect(try Self.lines(harness, ["search", "album", "kind"]) == readable.filter {
                $0.album == "Kind of Blue"
            }.map(\.path))
            // What is readable plays, from the library's own words.
            _ = try harness.earshotChecked(["findadd", "album", "Kind of Blue"])
            try harness.earshotChecked(["play"])
            _ = try await harness.settle("playing", timeout: .seconds(20)) { try harness.status().playback }
            #expect(try harness.status().playback == "playing")
            // The log names kinds and counts, never the folders or files.
            #expect(!service.standardError().contains("So What") && !service.standardError().contains("Sigur"))
            #expect(await harness.stopService(service) == 0)
        }
    }
}
