// TrackList: a queue's paths as one byte buffer with end offsets.
import Foundation
import Testing
import TrackPaths

@Suite("Track lists")
struct TrackListTests {
    /// A path that is not UTF-8 (Latin-1 é), which must survive byte for byte.
    static let latin1 = TrackPath(bytes: Array("/m/caf".utf8) + [0xE9] + Array(".mp3".utf8))!

    @Test("each path comes back byte for byte, in order, however the list was built")
    func pathsComeBack() {
        let paths: [TrackPath] = ["/a.mp3", Self.latin1, "/b/ü c.flac", "/a.mp3"]
        var appended = TrackList()
        for path in paths { appended.append(path) }
        var joined = TrackList(paths.prefix(1))
        joined.append(contentsOf: TrackList(paths.dropFirst()))
        for list in [TrackList(paths), appended, joined] {
            #expect(list.count == 4)
            #expect(Array(list) == paths)
            #expect(list.indices.map { Array(list.pathBytes(at: $0)) } == paths.map(\.bytes))
        }
        #expect(appended == TrackList(paths))
        #expect(joined == TrackList(paths))
    }

    @Test("lists are equal exactly when their paths are: a boundary moved between two paths differs")
    func equality() {
        #expect(TrackList(["/ab", "/c"]) != TrackList(["/a", "b/c"]))
        #expect(TrackList(["/a"]) != TrackList(["/a", "/a"]))
        #expect(TrackList() == [])
    }

    @Test("its Codable form is the array of paths TrackPath writes, so the state file keeps its format")
    func codableFormIsAnArrayOfPaths() throws {
        let paths: [TrackPath] = ["/a.mp3", Self.latin1]
        let list = TrackList(paths)
        let encoded = try JSONEncoder().encode(list)
        #expect(encoded == (try JSONEncoder().encode(paths)))
        #expect(try JSONDecoder().decode(TrackList.self, from: encoded) == list)
        #expect(try JSONDecoder().decode(TrackList.self, from: Data("[]".utf8)).isEmpty)
    }
}
