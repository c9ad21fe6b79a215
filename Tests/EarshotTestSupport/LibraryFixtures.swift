// LibraryFixtures: a small music collection made on the spot for the library's tests (unit and end to end): every
// format Earshot plays, tagged by each format's own tool, with non-ASCII names and tags, two discs, albums from three
// years, a playlist, a hidden folder, a file that is no audio, a text file, and symbolic links (one looping back up
// the tree, one to a folder already there). The tags written are returned, so tests check results against them.
import Foundation

/// A generated music collection.
public enum LibraryFixtures {
    /// One track written into the tree, with the tags it was given.
    public struct Track: Sendable, Equatable {
        /// The path below the music folder.
        public var path: String
        public var format: Fixtures.Format
        public var title: String
        public var artist: String
        public var album: String
        public var date: String
        public var genre: String
        public var track: Int
        public var disc: Int
        public var composer: String?
    }

    /// The tracks of the collection, in the order the library gives them (album artist, album date, disc, track).
    public static let tracks: [Track] = [
        Track(path: "Miles Davis/1959 Kind of Blue/01 So What.mp3", format: .mp3, title: "So What",
              artist: "Miles Davis", album: "Kind of Blue", date: "1959", genre: "Jazz", track: 1, disc: 1,
              composer: "Miles Davis"),
        Track(path: "Miles Davis/1959 Kind of Blue/02 Freddie Freeloader.flac", format: .flac,
              title: "Freddie Freeloader", artist: "Miles Davis", album: "Kind of Blue", date: "1959", genre: "Jazz",
              track: 2, disc: 1, composer: nil),
        Track(path: "Miles Davis/1970 Bitches Brew/2-01 Spanish Key.opus", format: .opus, title: "Spanish Key",
              artist: "Miles Davis", album: "Bitches Brew", date: "1970", genre: "Jazz Fusion", track: 1, disc: 2,
              composer: nil),
        Track(path: "Miles Davis/1970 Bitches Brew/1-01 Pharaoh's Dance.ogg", format: .vorbis,
              title: "Pharaoh's Dance", artist: "Miles Davis", album: "Bitches Brew", date: "1970",
              genre: "Jazz Fusion", track: 1, disc: 1, composer: "Joe Zawinul"),
        Track(path: "Sigur Rós/Ágætis byrjun/01 Svefn-g-englar.flac", format: .flac, title: "Svefn-g-englar",
              artist: "Sigur Rós", album: "Ágætis byrjun", date: "1999", genre: "Post-Rock", track: 1, disc: 1,
              composer: "Jón Þór Birgisson"),
    ]

    /// The tracks in the library's order (disc before track within an album).
    public static var tracksInOrder: [Track] {
        tracks.sorted { ($0.artist, $0.date, $0.album, $0.disc, $0.track) < ($1.artist, $1.date, $1.album, $1.disc,
                                                                             $1.track) }
    }

    /// The playlist's path below the music folder.
    public static let playlistPath = "Playlists/evening.m3u"

    /// Makes the collection in `root` (created) and returns it.
    @discardableResult
    public static func make(in root: URL) throws -> URL {
        let files = FileManager.default
        try files.createDirectory(at: root, withIntermediateDirectories: true)
        let wav = try Fixtures.toneWAV(frequency: 523, seconds: 0.4)
        for track in tracks {
            let output = root.appendingPathComponent(track.path)
            try files.createDirectory(at: output.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Fixtures.encode(wav, as: track.format, into: output, tags: tags(of: track))
        }
        // What the scan skips or counts: a hidden folder with a track in it, a text file, a file that is no audio.
        let hidden = root.appendingPathComponent(".hidden")
        try files.createDirectory(at: hidden, withIntermediateDirectories: true)
        try Fixtures.encode(wav, as: .mp3, into: hidden.appendingPathComponent("secret.mp3"), tags: ["TIT2": "Secret"])
        try Data("liner notes\n".utf8).write(to: root.appendingPathComponent("Miles Davis/notes.txt"))
        try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) })
            .write(to: root.appendingPathComponent("Miles Davis/broken.mp3"))
        let playlist = root.appendingPathComponent(playlistPath)
        try files.createDirectory(at: playlist.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("../\(tracks[0].path)\n".utf8).write(to: playlist)
        // A link back to the top (a loop) and a second way into a folder already there: each entered once.
        try files.createSymbolicLink(atPath: root.appendingPathComponent("Sigur Rós/loop").path,
                                     withDestinationPath: "..")
        try files.createSymbolicLink(atPath: root.appendingPathComponent("zz same as Miles").path,
                                     withDestinationPath: "Miles Davis")
        return root
    }

    /// The tags of `track` in the names its format's tool takes.
    public static func tags(of track: Track) -> [String: String] {
        if track.format == .mp3 {
            var tags = ["TIT2": track.title, "TPE1": track.artist, "TALB": track.album, "TYER": track.date,
                        "TCON": track.genre, "TRCK": "\(track.track)", "TPOS": "\(track.disc)"]
            if let composer = track.composer { tags["TCOM"] = composer }
            return tags
        }
        var tags = ["TITLE": track.title, "ARTIST": track.artist, "ALBUM": track.album, "DATE": track.date,
                    "GENRE": track.genre, "TRACKNUMBER": "\(track.track)", "DISCNUMBER": "\(track.disc)"]
        if let composer = track.composer { tags["COMPOSER"] = composer }
        return tags
    }
}
