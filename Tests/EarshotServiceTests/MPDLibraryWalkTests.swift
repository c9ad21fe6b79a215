// `listall`, `listallinfo` and `count` in the MPD front-end, with a fake library: the walk follows MPD's order (a
// folder's files, then each folder and its content), a folder not in the library is MPD's missing directory, and count
// sums whole seconds, grouped in MPD's byte order with untagged tracks under an empty value.
import MPDProtocol
import Testing
@testable import EarshotClients
@testable import EarshotService
import TrackPaths

@Suite("MPD library walk and count")
struct MPDLibraryWalkTests {
    /// A library of `x.mp3` at the top, `B/y.mp3`, `B/C/z.mp3` and `A/w.mp3`, its folders listed as the library
    /// lists them.
    static func ask(_ request: ControlRequest) -> String {
        func track(_ file: String, _ artist: String?, _ milliseconds: Int) -> [String: Any] {
            var object: [String: Any] = ["file": file, "durationMs": milliseconds]
            if let artist { object["artist"] = artist }
            return object
        }
        switch request {
        case .browse(let path):
            switch path.map({ String(decoding: $0.bytes, as: UTF8.self) }) {
            case nil: return ControlReply.success(["folders": ["A", "B"], "files": [track("x.mp3", "b", 1_500)]])
            case "A": return ControlReply.success(["folders": [], "files": [track("A/w.mp3", "B", 2_600)]])
            case "B": return ControlReply.success(["folders": ["C"], "files": [track("B/y.mp3", nil, 1_000)]])
            case "B/C": return ControlReply.success(["folders": [], "files": [track("B/C/z.mp3", "b", 999)]])
            default: return ControlReply.success(["folders": [], "files": []])
            }
        case .libraryQuery(verb: "find", let words, _):
            return ControlReply.success(["tracks": words == ["artist", "b"]
                ? [track("x.mp3", "b", 1_500), track("B/C/z.mp3", "b", 999)] : []])
        default:
            return ControlReply.success()
        }
    }

    func run(_ line: String) -> String {
        var session = MPDSession(ask: Self.ask)
        let batch = MPDBatch(entries: [MPDRequest.parse(Array(line.utf8))], isList: false, listOK: false)
        return batch.reply { session.run($0) }
    }

    @Test("listall walks in MPD's order; a folder named lists itself first; a missing one is refused")
    func listall() {
        #expect(run("listall") == """
            file: x.mp3\ndirectory: A\nfile: A/w.mp3\ndirectory: B\nfile: B/y.mp3\ndirectory: B/C\nfile: B/C/z.mp3\nOK\n
            """)
        #expect(run("listall B") == "directory: B\nfile: B/y.mp3\ndirectory: B/C\nfile: B/C/z.mp3\nOK\n")
        #expect(run("listallinfo A") == "directory: A\nfile: A/w.mp3\nArtist: B\nTime: 2\nduration: 2.600\nOK\n")
        #expect(run("listall nothing") == "ACK [50@0] {listall} No such directory\n")
    }

    @Test("count: whole seconds of the tracks find matches, or of all; grouped in byte order, untagged under ''")
    func count() {
        #expect(run("count artist b") == "songs: 2\nplaytime: 2\nOK\n")
        #expect(run("count group Artist") == "Artist: \nsongs: 1\nplaytime: 1\nArtist: B\nsongs: 1\nplaytime: 2\n"
            + "Artist: b\nsongs: 2\nplaytime: 2\nOK\n")
        #expect(run("count artist b group artist") == "Artist: b\nsongs: 2\nplaytime: 2\nOK\n")
        #expect(run("count group nonsense") == "ACK [2@0] {count} Unknown tag type: nonsense\n")
        #expect(run("count artist") == "ACK [2@0] {count} Incorrect number of filter arguments\n")
    }
}
