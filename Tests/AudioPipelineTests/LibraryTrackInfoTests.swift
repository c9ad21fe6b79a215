// What the music library knows of a file, as the decode thread applies it at a track's start: the library's tags
// stand for the file's own, and the gains it measured count only for a file whose tags carry none.
import EarshotTestSupport
import Foundation
import Testing
@testable import AudioPipeline
import TrackPaths

@Suite("Library tags and measured gains at a track's start")
struct LibraryTrackInfoTests {
    /// A short FLAC tone with `tags`.
    static func flac(_ name: String, tags: [String: String]) throws -> TrackPath {
        let wav = try Fixtures.toneWAV(frequency: 440, seconds: 0.3)
        let output = Fixtures.directory.appendingPathComponent("library-info-\(name).flac")
        try Fixtures.encode(wav, as: .flac, into: output, tags: tags)
        return TrackPath(output.path)
    }

    /// The library's answer for `path` alone.
    static func control(_ mode: ReplayGainMode, for path: TrackPath, _ info: LibraryTrackInfo) -> ReplayGainControl {
        let control = ReplayGainControl()
        control.set(ReplayGainSettings(mode: mode), shuffled: false)
        control.setLibrary { asked in asked == path ? info : nil }
        return control
    }

    static let measured: ReplayGainTags = {
        var gains = ReplayGainTags(trackGain: -7, trackPeak: 0.5)
        gains.measured = true
        return gains
    }()

    @Test("a track in the library shows the library's tags, with the mode off too; a file not in it keeps its own")
    func libraryTags() throws {
        let path = try Self.flac("tags", tags: ["TITLE": "File Title", "ARTIST": "File Artist"])
        var tags = TrackMetadata(title: "Library Title", artist: "Library Artist", album: "Library Album")
        tags.discNumber = 2
        for mode in [ReplayGainMode.off, .track] {
            let control = Self.control(mode, for: path, LibraryTrackInfo(tags: tags, measuredGains: nil))
            let metadata = control.applied(to: try AudioFileKind.openDecoder(path: path), path: path).metadata
            #expect(metadata.title == "Library Title" && metadata.artist == "Library Artist", "\(mode)")
            #expect(metadata.album == "Library Album" && metadata.discNumber == 2, "\(mode)")
            // Elsewhere (another path): the file's own.
            let other = control.applied(to: try AudioFileKind.openDecoder(path: path), path: TrackPath("/elsewhere"))
            #expect(other.metadata.title == "File Title", "\(mode)")
        }
    }

    @Test("measured gains apply to a file without tagged gains (source trackMeasured); a tagged file keeps its tag")
    func measuredGains() throws {
        let untagged = try Self.flac("untagged", tags: ["TITLE": "Plain"])
        let tagged = try Self.flac("tagged", tags: ["REPLAYGAIN_TRACK_GAIN": "-3.00 dB"])
        let info = LibraryTrackInfo(tags: nil, measuredGains: Self.measured)
        let plain = Self.control(.track, for: untagged, info)
            .applied(to: try AudioFileKind.openDecoder(path: untagged), path: untagged).metadata
        #expect(plain.replayGain.applied?.source == .trackMeasured)
        #expect(plain.replayGain.applied?.decibels == -7)
        #expect(plain.title == "Plain")
        let own = Self.control(.album, for: tagged, info)
            .applied(to: try AudioFileKind.openDecoder(path: tagged), path: tagged).metadata
        #expect(own.replayGain.applied?.source == .trackTag)
        #expect(own.replayGain.applied?.decibels == -3)
        // Off: no gain, measured or not.
        let off = Self.control(.off, for: untagged, info)
            .applied(to: try AudioFileKind.openDecoder(path: untagged), path: untagged).metadata
        #expect(off.replayGain.applied == nil)
    }
}
