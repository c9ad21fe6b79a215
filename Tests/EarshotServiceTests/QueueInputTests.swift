// QueueInput's directory scan, with the formats beside MP3: `earshot add DIR` queues every playable format, by
// name, in natural order. (The suite's other tests are in ControlProtocolTests.swift.)
import Foundation
import Testing
@testable import EarshotService
@testable import EarshotStorage
import TrackPaths

extension QueueInputTests {
    @Test("a directory scan takes MP3, FLAC, Ogg and Opus files, in natural order, and nothing else")
    func directoryTakesEveryFormat() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("earshot-formats-\(getpid())")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("disc 2"),
                                                withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let names = ["10 ten.opus", "2 two.FLAC", "1 one.mp3", "3 three.ogg", "4 four.oga", "cover.jpg", "notes.txt",
                     "disc 2/1 five.flac"]
        for name in names {
            try Data([1]).write(to: folder.appendingPathComponent(name))
        }
        let found = QueueInput.audioFiles(under: TrackPath(folder.path)).map { $0.displayText }
        let expected = ["1 one.mp3", "2 two.FLAC", "3 three.ogg", "4 four.oga", "10 ten.opus", "disc 2/1 five.flac"]
        #expect(found == expected.map { folder.path + "/" + $0 })
    }
}
