// TrackList: a queue's paths as byte buffers of 1 024 paths each, with end offsets.
import Foundation
import Testing
@testable import TrackPaths

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

    /// `count` paths of lengths that vary, so chunks hold different numbers of bytes.
    static func manyPaths(_ count: Int, from first: Int = 0) -> [TrackPath] {
        (first..<first + count).map { index in
            TrackPath(stringLiteral: "/music/" + String(repeating: "x", count: index % 37) + "/\(index).mp3")
        }
    }

    @Test("a list longer than a chunk: every path back, however it was built, and equal lists equal")
    func acrossChunks() throws {
        let paths = Self.manyPaths(2 * TrackList.pathsPerChunk + 300)
        var oneByOne = TrackList()
        for path in paths { oneByOne.append(path) }
        // Joined at a place that is no chunk boundary, from lists of several chunks each.
        var joined = TrackList(paths.prefix(1_500))
        joined.append(contentsOf: TrackList(paths.dropFirst(1_500)))
        for list in [TrackList(paths), oneByOne, joined] {
            #expect(list.count == paths.count)
            #expect(Array(list) == paths)
            for index in [0, 1_023, 1_024, 1_025, 2_047, 2_048, paths.count - 1] {
                #expect(Array(list.pathBytes(at: index)) == paths[index].bytes)
            }
        }
        #expect(oneByOne == TrackList(paths))
        #expect(joined == TrackList(paths))
        #expect(joined != TrackList(paths.dropLast()))
        let encoded = try JSONEncoder().encode(joined)
        #expect(try JSONDecoder().decode(TrackList.self, from: encoded) == joined)
    }

    @Test("appending to a list whose copy is held elsewhere copies none of its full chunks, and leaves the copy alone")
    func appendingToASharedListCopiesNoFullChunk() {
        let paths = Self.manyPaths(3 * TrackList.pathsPerChunk + 10)
        var player = TrackList(paths)
        // What the state writer and the decoder hold while the owner adds to its queue.
        let saved = player
        let added = Self.manyPaths(700, from: paths.count)
        player.append(contentsOf: TrackList(added))
        #expect(player.sharesFullChunks(with: saved))
        #expect(Array(saved) == paths)
        #expect(Array(player) == paths + added)
        // The last chunk was shared and is now the appended list's own: the saved one still ends where it did.
        #expect(saved.count == paths.count)
    }
}
