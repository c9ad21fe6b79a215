// The state file: round trip, atomic replacement, private permissions, and corrupt files moved aside.
import Foundation
import Testing

import TrackPaths
@testable import EarshotService
@testable import EarshotStorage

/// A store in a directory that does not exist yet, two levels down, as on a first start: the state files' tests
/// (this file's, StateFilesTests, StateWriterTests, SavedPlayModesTests) each start from one.
func freshStore() throws -> StateStore {
    StateStore(directory: try TemporaryDirectory.make() + "/state/earshot")
}

@Suite("State store")
struct StateStoreTests {
    private let sample = PersistedState(
        queue: ["/music/a b.mp3", "/music/ünïcödé.mp3", "/music/c.mp3"], trackIndex: 1,
        positionMilliseconds: 30_250, volumePercent: 85)

    private func names(in store: StateStore) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: store.directory).sorted()
    }

    private func mode(of path: String) -> mode_t {
        var status = stat()
        guard stat(path, &status) == 0 else { return 0 }
        return status.st_mode & 0o777
    }

    @Test("no file is an empty start")
    func missingIsEmpty() throws {
        #expect(try freshStore().load() == .empty)
    }

    @Test("a saved state loads back the same")
    func roundTrip() throws {
        let store = try freshStore()
        try store.save(sample)
        #expect(store.load() == .restored(sample, positionFile: .absent))
        var changed = sample
        changed.trackIndex = 2
        changed.positionMilliseconds = 0
        try store.save(changed)
        #expect(store.load() == .restored(changed, positionFile: .absent))
        let empty = PersistedState(queue: [], trackIndex: 0, positionMilliseconds: 0, volumePercent: 100)
        try store.save(empty)
        #expect(store.load() == .restored(empty, positionFile: .absent))
    }

    @Test("the XDG state directory is used, else ~/.local/state")
    func directoryRules() {
        #expect(StateStore(environment: ["XDG_STATE_HOME": "/x/state", "HOME": "/home/u"]).filePath
                    == "/x/state/earshot/state.json")
        #expect(StateStore(environment: ["HOME": "/home/u"]).filePath == "/home/u/.local/state/earshot/state.json")
        #expect(StateStore(environment: ["XDG_STATE_HOME": "rel", "HOME": "/home/u"]).directory
                    == "/home/u/.local/state/earshot")
    }

    @Test("the directory is 0700 and the file 0600")
    func permissions() throws {
        let store = try freshStore()
        try store.save(sample)
        #expect(mode(of: store.directory) == 0o700)
        #expect(mode(of: store.filePath) == 0o600)
        // A directory someone else created more openly is tightened on the next save.
        chmod(store.directory, 0o755)
        try store.save(sample)
        #expect(mode(of: store.directory) == 0o700)
    }

    @Test("saving leaves no temporary file behind")
    func noTemporaryFiles() throws {
        let store = try freshStore()
        for index in 0..<20 {
            var state = sample
            state.positionMilliseconds = index * 1000
            try store.save(state)
        }
        #expect(try names(in: store) == ["state.json"])
    }

    @Test("a temporary file left by an interrupted save is ignored, then removed")
    func leftoverTemporaryFileIgnored() throws {
        let store = try freshStore()
        try store.save(sample)
        let leftover = store.directory + "/" + StateStore.temporaryPrefix + "12345-67890"
        // What a save killed mid-write leaves: a partial file beside the intact one.
        try Data(#"{"version":1,"queue":["/mu"#.utf8).write(to: URL(fileURLWithPath: leftover))
        #expect(store.load() == .restored(sample, positionFile: .absent))
        #expect(try names(in: store) == ["state.json"])
    }

    @Test("a corrupt file is moved aside and reported without its content")
    func corruptMovedAside() throws {
        let store = try freshStore()
        try store.save(sample)
        let content = Data(#"{"version":1,"queue":["/home/secret/Private Song.mp3"],"tr"#.utf8)
        try content.write(to: URL(fileURLWithPath: store.filePath))
        guard case .corrupt(let reason, let keptAs) = store.load() else {
            Issue.record("a corrupt file was not reported")
            return
        }
        #expect(reason == "not valid JSON")
        #expect(!reason.contains("secret") && !reason.contains("Private"))
        let keptName = URL(fileURLWithPath: keptAs).lastPathComponent
        #expect(keptName.hasPrefix("state.json.corrupt-"))
        #expect(keptName.range(of: #"^state\.json\.corrupt-\d{8}T\d{6}Z$"#, options: .regularExpression) != nil)
        #expect(try Data(contentsOf: URL(fileURLWithPath: keptAs)) == content)
        #expect(!FileManager.default.fileExists(atPath: store.filePath))
        // The next start is a clean one, and the kept file stays.
        #expect(store.load() == .empty)
        #expect(FileManager.default.fileExists(atPath: keptAs))
    }

    @Test("two corrupt files in the same second are both kept")
    func twoCorruptFilesKept() throws {
        let store = try freshStore()
        try store.save(sample)
        var kept: [String] = []
        for _ in 0..<2 {
            try Data("garbage".utf8).write(to: URL(fileURLWithPath: store.filePath))
            guard case .corrupt(_, let keptAs) = store.load() else {
                Issue.record("a corrupt file was not reported")
                return
            }
            kept.append(keptAs)
        }
        #expect(kept[0] != kept[1])
        #expect(kept.allSatisfy { FileManager.default.fileExists(atPath: $0) })
    }

    @Test("well-formed JSON that cannot be trusted is corrupt, named by field only", arguments: [
        (#"{"version":1,"queue":["/a.mp3"],"trackIndex":"one","positionMilliseconds":0,"volumePercent":100}"#,
         #"wrong type for field "trackIndex""#),
        (#"{"version":1,"queue":["/a.mp3"],"trackIndex":0,"volumePercent":100}"#,
         #"missing field "positionMilliseconds""#),
        (#"{"version":1,"queue":["/a.mp3"],"trackIndex":1,"positionMilliseconds":0,"volumePercent":100}"#,
         "track index outside the queue"),
        (#"{"version":1,"queue":["/a.mp3"],"trackIndex":0,"positionMilliseconds":-5,"volumePercent":100}"#,
         "negative position"),
        (#"{"version":1,"queue":["/a.mp3"],"trackIndex":0,"positionMilliseconds":0,"volumePercent":900}"#,
         "volume outside 0...150"),
        (#"{"version":9,"queue":["/a.mp3"],"trackIndex":0,"positionMilliseconds":0,"volumePercent":100}"#,
         "unsupported format version"),
        (#"["/a.mp3"]"#, "wrong type for the top level"),
        ("", "empty file"),
    ])
    func untrustworthy(text: String, reason: String) throws {
        let store = try freshStore()
        try store.save(sample)
        try Data(text.utf8).write(to: URL(fileURLWithPath: store.filePath))
        guard case .corrupt(let found, _) = store.load() else {
            Issue.record("accepted: \(text)")
            return
        }
        #expect(found == reason)
        #expect(!found.contains("a.mp3"))
    }

    @Test("an unreadable state file (a directory in its place) is moved aside too")
    func unreadableMovedAside() throws {
        let store = try freshStore()
        try store.save(sample)
        unlink(store.filePath)
        try FileManager.default.createDirectory(atPath: store.filePath, withIntermediateDirectories: false)
        guard case .corrupt(let reason, let keptAs) = store.load() else {
            Issue.record("an unreadable file was not reported")
            return
        }
        #expect(reason == "not a regular file")
        #expect(keptAs.hasPrefix(store.directory + "/state.json.corrupt-"))
        #expect(store.load() == .empty)
        try store.save(sample)
        #expect(store.load() == .restored(sample, positionFile: .absent))
    }

    @Test("the file is compact JSON with sorted keys, ending in a newline")
    func fileFormat() throws {
        let store = try freshStore()
        let state = PersistedState(queue: ["/a.mp3"], trackIndex: 0, positionMilliseconds: 1500, volumePercent: 100)
        try store.save(state)
        let text = try String(contentsOfFile: store.filePath, encoding: .utf8)
        let expected = #"{"positionMilliseconds":1500,"queue":["/a.mp3"],"trackIndex":0,"version":1,"#
            + #""volumePercent":100}"# + "\n"
        #expect(text == expected)
    }

    @Test("the file's own JSON writer says what JSONEncoder says, for every character a path can hold")
    func writerMatchesEncoder() throws {
        let store = try freshStore()
        // Every byte from 1 to 127 (quote, backslash, slash, controls), then other scripts and an emoji.
        let ascii = try #require(TrackPath(bytes: (1...127).map { UInt8($0) }))
        let raw = try #require(TrackPath(bytes: [0x2F, 0xC3]))
        let state = PersistedState(
            queue: [ascii, "/m/Ünïcödé ☃/日本語 🎵.mp3", raw, "/a.mp3"], trackIndex: 2, positionMilliseconds: 61_234,
            volumePercent: 85)
        try store.save(state)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let expected = try encoder.encode(state) + [0x0A]
        let written = try Data(contentsOf: URL(fileURLWithPath: store.filePath))
        #expect(written == expected, "\(String(decoding: written, as: UTF8.self))")
        #expect(store.load() == .restored(state, positionFile: .absent))
    }

    @Test("a path that is not UTF-8 is saved as its bytes (base64) and restored exactly; UTF-8 paths stay strings")
    func nonUTF8PathRoundTrip() throws {
        let store = try freshStore()
        let raw = try #require(TrackPath(bytes: Array("/m/".utf8) + [0xFF, 0xFE, 0x0A] + Array("é.mp3".utf8)))
        let state = PersistedState(queue: ["/a.mp3", raw], trackIndex: 1, positionMilliseconds: 0, volumePercent: 100)
        try store.save(state)
        #expect(store.load() == .restored(state, positionFile: .absent))
        guard case .restored(let loaded, _) = store.load() else { return }
        #expect(loaded.queue.map(\.bytes) == state.queue.map(\.bytes))
        let text = try String(contentsOfFile: store.filePath, encoding: .utf8)
        #expect(text.contains(#""queue":["/a.mp3",{"base64":"L20v//4Kw6kubXAz"}]"#), "\(text)")
        // A file written before paths could be bytes (plain strings only) still loads.
        let old = #"{"positionMilliseconds":0,"queue":["/ü.mp3"],"trackIndex":0,"version":1,"volumePercent":100}"#
        try Data(old.utf8).write(to: URL(fileURLWithPath: store.filePath))
        #expect(store.load() == .restored(
            PersistedState(queue: ["/ü.mp3"], trackIndex: 0, positionMilliseconds: 0, volumePercent: 100),
            positionFile: .absent))
        // A damaged entry is a corrupt file, reported by field name only.
        let damaged = #"{"positionMilliseconds":0,"queue":[{"base64":"%%"}],"trackIndex":0,"version":1,"#
            + #""volumePercent":100}"#
        try Data(damaged.utf8).write(to: URL(fileURLWithPath: store.filePath))
        guard case .corrupt(let reason, _) = store.load() else {
            Issue.record("a damaged path entry was accepted")
            return
        }
        #expect(reason.contains("queue"), "\(reason)")
    }

    @Test("saving into a place that cannot hold the directory fails with a clear error")
    func saveFailure() throws {
        let base = try TemporaryDirectory.make()
        try Data().write(to: URL(fileURLWithPath: base + "/file"))
        let store = StateStore(directory: base + "/file/earshot")
        do {
            try store.save(sample)
            Issue.record("saved under a regular file")
        } catch {
            #expect(error.operation == "create directory")
            #expect(error.description.hasPrefix("cannot save state (create directory \(base)/file/earshot): "))
        }
    }
}
