// Repeat and shuffle in `state.json`: they round-trip, a file without them (an earlier version's) means off, and what
// does not read as a mode is refused like any other wrong field.
import Foundation
import Testing

import EarshotService
import TrackPaths
@testable import EarshotStorage

@Suite("Saved repeat and shuffle")
struct SavedPlayModesTests {
    @Test("repeat and a shuffled order with its generator's full 64 bits load back the same")
    func roundTrip() throws {
        let store = try freshStore()
        var state = PersistedState(queue: ["/a.mp3", "/b.mp3", "/c.mp3"], trackIndex: 2, positionMilliseconds: 1_500,
                                   volumePercent: 90)
        state.playModes = SavedPlayModes(repeatMode: "queue", shuffleOrder: [2, 0, 1], shuffleState: .max - 7)
        try store.save(state)
        #expect(store.load() == .restored(state, positionFile: .absent))
        let text = try String(contentsOfFile: store.filePath, encoding: .utf8)
        #expect(text.contains(#","repeat":"queue","shuffle":{"order":[2,0,1],"state":"18446744073709551608"}"#))
        // The line's keys stay sorted: single follows shuffle, and consume, first of all, opens the line.
        state.playModes.single = "oneshot"
        state.playModes.consume = true
        try store.save(state)
        #expect(store.load() == .restored(state, positionFile: .absent))
        let line = try String(contentsOfFile: store.filePath, encoding: .utf8)
        #expect(line.hasPrefix(#"{"consume":true,"positionMilliseconds":1500,"#), "\(line)")
        #expect(line.contains(#""state":"18446744073709551608"},"single":"oneshot","trackIndex":2"#), "\(line)")
        state.playModes = .off
        try store.save(state)
        #expect(store.load() == .restored(state, positionFile: .absent))
        #expect(try String(contentsOfFile: store.filePath, encoding: .utf8).contains("repeat") == false)
    }

    @Test("a state file of an earlier version, without the keys, restores with repeat off and no shuffle")
    func earlierFileMeansOff() throws {
        let store = try freshStore()
        try FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
        let line = #"{"positionMilliseconds":0,"queue":["/a.mp3"],"queueId":7,"trackIndex":0,"version":1,"#
            + #""volumePercent":100}"#
        try Data(line.utf8).write(to: URL(fileURLWithPath: store.filePath))
        guard case .restored(let state, _) = store.load() else {
            Issue.record("the earlier file did not restore")
            return
        }
        #expect(state.playModes == .off)
    }

    @Test("a shuffle or repeat of the wrong shape is a wrong field, named without its value", arguments: [
        (#""repeat":5"#, #"wrong type for field "repeat""#),
        (#""shuffle":[1,2]"#, #"wrong type for field "shuffle""#),
        (#""shuffle":{"order":[1,"x"],"state":"3"}"#, #"invalid value for field "shuffle""#),
        (#""shuffle":{"order":[0],"state":"-3"}"#, #"invalid value for field "shuffle""#),
        (#""single":true"#, #"wrong type for field "single""#),
        (#""consume":"yes""#, #"wrong type for field "consume""#),
    ])
    func malformedModes(field: String, reason: String) throws {
        let store = try freshStore()
        try FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
        let line = #"{"positionMilliseconds":0,"queue":["/a.mp3"],"trackIndex":0,"version":1,"volumePercent":100,"#
            + field + "}"
        try Data(line.utf8).write(to: URL(fileURLWithPath: store.filePath))
        guard case .corrupt(let found, _) = store.load() else {
            Issue.record("\(field) was accepted")
            return
        }
        #expect(found == reason)
    }
}
