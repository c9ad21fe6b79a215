// MPD's queue commands end to end (issue 37, rule 25): python3-mpd edits the queue of a playing `earshot serve` by ids
// and positions (addid at a position, moveid, swap, deleteid of the playing track, playid, seekid, shuffle,
// plchanges by version, playlistfind through the library), each reply checked against MPD's meaning and the result
// against Earshot's own status: the playing track plays on wherever it moves, ids survive the edits.
import EarshotTestSupport
import Foundation
import Testing

@Suite("MPD queue", .serialized)
struct MPDQueueTests {
    @Test("python3-mpd edits the playing queue: ids stay, the playing track plays on, plchanges lists what moved")
    func editsThroughPythonMPD() async throws {
        try await MPDClientTests.withPlayingService { harness, service, _, socket in
            try await LibraryTests.waitForTracks(2, harness)
            let script = """
                import mpd, sys, time
                client = mpd.MPDClient()
                client.timeout = 30
                client.connect(sys.argv[1])
                def status():
                    return client.status()
                before = status()
                assert before["state"] == "play" and before["song"] == "0", before
                first_id = before["songid"]
                version = int(before["playlist"])
                queue = client.playlistinfo()
                second_id = queue[1]["id"]
                # A third entry in front of the playing track: it plays on at position 1, its id unchanged.
                new_id = client.addid("b.mp3", 0)
                now = status()
                assert now["state"] == "play" and now["song"] == "1" and now["songid"] == first_id, now
                assert int(now["playlist"]) > version and now["playlistlength"] == "3", now
                # Every entry changed place but none of those before the insertion: all three are listed.
                assert len(client.plchanges(version)) == 3, client.plchanges(version)
                assert [entry["id"] for entry in client.plchangesposid(version)] == [new_id, first_id, second_id]
                version = int(now["playlist"])
                client.moveid(new_id, 2)
                order = [entry["id"] for entry in client.playlistinfo()]
                assert order == [first_id, second_id, new_id], order
                assert [entry["cpos"] for entry in client.plchangesposid(version)] == ["0", "1", "2"]
                client.swap(0, 1)
                now = status()
                assert now["song"] == "1" and now["songid"] == first_id and now["state"] == "play", now
                assert client.playlistid(second_id)[0]["pos"] == "0"
                assert [entry["id"] for entry in client.playlistsearch("any", "b")] == [second_id, new_id]
                # The playing track deleted: the one at its place plays.
                client.deleteid(first_id)
                now = status()
                assert now["state"] == "play" and now["songid"] == new_id and now["playlistlength"] == "2", now
                client.playid(second_id)
                client.seekid(second_id, 12)
                now = status()
                assert now["songid"] == second_id and now["state"] == "play", now
                assert float(now["elapsed"]) >= 11.5, now
                for bad in (lambda: client.deleteid(999), lambda: client.playid(999)):
                    try:
                        bad()
                        raise SystemExit("no error for a missing id")
                    except mpd.CommandError as error:
                        assert "No such song" in str(error), str(error)
                try:
                    client.move(5, 0)
                    raise SystemExit("no error for a bad index")
                except mpd.CommandError as error:
                    assert "Bad song index" in str(error), str(error)
                client.shuffle()
                assert status()["songid"] == second_id
                print("ok", second_id)
                """
            let python = "/usr/bin/python3"
            guard try ProcessRunner.run(python, ["-c", "import mpd"]).succeeded else {
                throw ToolkitError("python3-mpd is needed for the MPD protocol tests: apt-get install python3-mpd")
            }
            let result = try ProcessRunner.run(python, ["-c", script, socket], timeout: .seconds(60))
            try #require(result.succeeded && result.standardOutput.contains("ok"), "\(result.standardError)")
            // Earshot's own status agrees: playing b.mp3, of two tracks, past the seek.
            let status = try await harness.waitForStatus(of: service, "playing after the edits") {
                $0.playback == "playing" && $0.trackCount == 2
            }
            let queue = try #require(try harness.requestChecked(["command": "queue"])["queue"] as? [String])
            #expect(queue[status.trackIndex].hasSuffix("/b.mp3"), "\(queue) at \(status.trackIndex)")
            #expect((try MPDClientTests.status(harness)["positionMs"] as? Int ?? 0) >= 11_500)
        }
    }
}

@Suite("MPD stored playlists", .serialized)
struct MPDStoredPlaylistTests {
    @Test("mpc save, lsplaylists, load, rm and python3-mpd's playlist commands: .m3u files, stored_playlist for idle")
    func storedPlaylists() async throws {
        try await MPDClientTests.withPlayingService { harness, _, port, socket in
            try await LibraryTests.waitForTracks(2, harness)
            let folder = harness.root.appendingPathComponent("data/earshot/playlists")
            try MPDClientTests.mpc(socket, port, ["save", "evening"])
            let saved = try String(contentsOf: folder.appendingPathComponent("evening.m3u"), encoding: .utf8)
            #expect(saved.split(separator: "\n").map { $0.hasSuffix("/a.mp3") || $0.hasSuffix("/b.mp3") }
                == [true, true], "\(saved)")
            let listed = try MPDClientTests.mpc(socket, port, ["lsplaylists"])
            #expect(listed == "evening\n", "\(listed)")
            let again = try ProcessRunner.run("mpc", ["-h", socket, "save", "evening"], timeout: .seconds(30))
            #expect(!again.succeeded && again.standardError.contains("already exists"), "\(again.standardError)")
            try MPDClientTests.mpc(socket, port, ["load", "evening"])
            #expect(try MPDClientTests.status(harness)["trackCount"] as? Int == 4)
            let script = """
                import mpd, socket, sys
                client = mpd.MPDClient()
                client.timeout = 30
                client.connect(sys.argv[1])
                # A second client idles for stored playlists on the protocol's own lines.
                watcher = socket.socket(socket.AF_UNIX)
                watcher.connect(sys.argv[1])
                lines = watcher.makefile("rb", buffering=0)
                assert lines.readline().startswith(b"OK MPD ")
                watcher.sendall(b"idle stored_playlist\\n")
                client.ping()
                client.playlistadd("morning", "b.mp3")
                assert lines.readline() == b"changed: stored_playlist\\n"
                assert lines.readline() == b"OK\\n"
                client.playlistadd("morning", "a.mp3")
                assert [line.rsplit("/", 1)[1] for line in client.listplaylist("morning")] == ["b.mp3", "a.mp3"]
                client.playlistdelete("morning", 0)
                assert len(client.listplaylistinfo("morning")) == 1
                client.rename("morning", "noon")
                names = sorted(entry["playlist"] for entry in client.listplaylists())
                assert names == ["evening", "noon"], names
                assert client.listplaylists()[0]["last-modified"].endswith("Z")
                client.clear()
                client.load("evening", "1:2")
                assert client.status()["playlistlength"] == "1", client.status()
                for bad, message in ((lambda: client.load("nothing"), "No such playlist"),
                                     (lambda: client.rename("noon", "evening"), "already exists"),
                                     (lambda: client.save("a/b"), "Bad playlist name"),
                                     (lambda: client.playlistdelete("noon", 5), "Bad song index")):
                    try:
                        bad()
                        raise SystemExit("no error: " + message)
                    except mpd.CommandError as error:
                        assert message in str(error), str(error)
                client.playlistclear("noon")
                assert client.listplaylist("noon") == []
                client.rm("noon")
                print("ok")
                """
            let result = try ProcessRunner.run("/usr/bin/python3", ["-c", script, socket], timeout: .seconds(60))
            try #require(result.succeeded && result.standardOutput.contains("ok"), "\(result.standardError)")
            #expect(try MPDClientTests.mpc(socket, port, ["lsplaylists"]) == "evening\n")
            try MPDClientTests.mpc(socket, port, ["rm", "evening"])
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        }
    }
}

@Suite("MPD outputs and ReplayGain", .serialized)
struct MPDOutputTests {
    @Test("mpc outputs, disable (the user's pause), enable (nothing starts), replaygain as earshot replaygain")
    func outputsAndReplayGain() async throws {
        try await MPDClientTests.withPlayingService { harness, service, port, socket in
            #expect(try MPDClientTests.mpc(socket, port, ["outputs"]).contains("Output 1 (Earshot) is enabled"))
            try MPDClientTests.mpc(socket, port, ["disable", "1"])
            let paused = try await harness.waitForStatus(of: service, "paused by disable") { $0.playback == "paused" }
            #expect(paused.pauseReason == "user", "\(paused)")
            #expect(try MPDClientTests.mpc(socket, port, ["outputs"]).contains("is disabled"))
            try MPDClientTests.mpc(socket, port, ["enable", "1"])
            #expect(try MPDClientTests.status(harness)["playback"] as? String == "paused")
            try MPDClientTests.mpc(socket, port, ["play"])
            try await harness.waitForStatus(of: service, "playing again") { $0.playback == "playing" }
            #expect(try MPDClientTests.mpc(socket, port, ["outputs"]).contains("is enabled"))
            try MPDClientTests.mpc(socket, port, ["replaygain", "album"])
            let gain = try #require(try MPDClientTests.status(harness)["replayGain"] as? [String: Any])
            #expect(gain["mode"] as? String == "album", "\(gain)")
            #expect(try MPDClientTests.mpc(socket, port, ["replaygain"]).contains("album"))
        }
    }
}

@Suite("MPD pictures", .serialized)
struct MPDPictureTests {
    @Test("readpicture and albumart in binarylimit chunks: the embedded picture, the folder's cover file, errors")
    func pictures() async throws {
        try await MPDClientTests.withPlayingService { harness, _, port, socket in
            let music = harness.root.appendingPathComponent("music", isDirectory: true)
            let embedded = Fixtures.fakePicture(count: 20_000, seed: 7)
            let tagged = try Fixtures.coverTagged(.flac, picture: embedded, name: "mpd-cover.flac", title: "Pictured",
                                                  albumArtist: "Someone", trackNumber: "1")
            let album = music.appendingPathComponent("album", isDirectory: true)
            try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
            _ = try Fixtures.copy(tagged, to: album, named: "c.flac")
            let coverFile = Fixtures.fakePicture(count: 5_000, seed: 9)
            try Data(coverFile).write(to: music.appendingPathComponent("cover.jpg"))
            try Data(embedded).write(to: harness.root.appendingPathComponent("embedded.bin"))
            try Data(coverFile).write(to: harness.root.appendingPathComponent("cover.bin"))
            try MPDClientTests.mpc(socket, port, ["update"])
            try await LibraryTests.waitForTracks(3, harness)
            let script = """
                import socket, sys
                connection = socket.socket(socket.AF_UNIX)
                connection.connect(sys.argv[1])
                stream = connection.makefile("rb", buffering=0)
                assert stream.readline().startswith(b"OK MPD ")
                def ask(line):
                    connection.sendall(line.encode() + b"\\n")
                    fields = {}
                    while True:
                        reply = stream.readline()
                        if reply == b"OK\\n" or reply.startswith(b"ACK"):
                            return fields, reply.decode()
                        key, value = reply.decode().rstrip("\\n").split(": ", 1)
                        if key == "binary":
                            data = b""
                            while len(data) < int(value):
                                data += stream.read(int(value) - len(data))
                            assert stream.read(1) == b"\\n"
                            fields["data"] = data
                        else:
                            fields[key] = value
                def whole(command, uri):
                    data = b""
                    while True:
                        fields, end = ask('%s "%s" %d' % (command, uri, len(data)))
                        assert end == "OK\\n", end
                        assert len(fields["data"]) <= 4096
                        data += fields["data"]
                        if len(data) >= int(fields["size"]):
                            return data, fields
                assert ask("binarylimit 4096")[1] == "OK\\n"
                data, fields = whole("readpicture", "album/c.flac")
                assert data == open(sys.argv[2], "rb").read() and fields["type"] == "image/png", fields
                # albumart: the folder's cover file where there is one, else the embedded picture.
                assert whole("albumart", "a.mp3")[0] == open(sys.argv[3], "rb").read()
                assert whole("albumart", "album/c.flac")[0] == data
                assert ask('readpicture "a.mp3" 0') == ({}, "OK\\n")
                assert ask('readpicture "missing.mp3" 0')[1].startswith("ACK [50@0] {readpicture} No such song")
                assert ask('readpicture "album/c.flac" 999999')[1].startswith("ACK [2@0] {readpicture} Bad file offset")
                assert ask("binarylimit 10")[1].startswith("ACK [2@0] {binarylimit}")
                print("ok")
                """
            let result = try ProcessRunner.run("/usr/bin/python3", [
                "-c", script, socket, harness.root.appendingPathComponent("embedded.bin").path,
                harness.root.appendingPathComponent("cover.bin").path,
            ], timeout: .seconds(60))
            try #require(result.succeeded && result.standardOutput.contains("ok"), "\(result.standardError)")
        }
    }
}
