// Tracks with tags and an embedded cover picture, made by each format's own tools (LAME's --ti, flac's --picture,
// opusenc's --picture; for Vorbis a METADATA_BLOCK_PICTURE comment built here, as oggenc has no picture option), for
// the tag readers' unit tests and the end-to-end test of `mpris:artUrl`.
import Foundation

extension Fixtures {
    /// `count` bytes that start like a PNG (its 8-byte signature, which LAME checks) and go on pseudo-randomly from
    /// `seed`, so that every picture's bytes differ.
    public static func fakePicture(count: Int, seed: UInt64) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        let rest = (0..<max(0, count - signature.count)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        return signature + rest
    }

    /// The FLAC PICTURE structure (picture type, MIME type, description, size fields, data) holding `picture`: what a
    /// FLAC PICTURE block holds, and a METADATA_BLOCK_PICTURE comment in base64.
    public static func flacPictureStructure(
        _ picture: [UInt8], mimeType: String = "image/png", type: UInt32 = 3, dataLength: UInt32? = nil
    ) -> [UInt8] {
        func word(_ value: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }
        let description = Array("cover".utf8)
        return word(type) + word(UInt32(mimeType.utf8.count)) + Array(mimeType.utf8)
            + word(UInt32(description.count)) + description + word(16) + word(16) + word(24) + word(0)
            + word(dataLength ?? UInt32(picture.count)) + picture
    }

    /// A 1 s tone in `format` tagged with `title`, the album artist `albumArtist`, the track number `trackNumber`
    /// (e.g. "3/12") and the front cover `picture` (a PNG by its MIME type), saved as fixture `name`.
    public static func coverTagged(
        _ format: Format, picture: [UInt8], name: String, title: String, albumArtist: String, trackNumber: String,
        frequency: Double = 440, seconds: Double = 1
    ) throws -> URL {
        try file(named: name) { output in
            let wav = output.appendingPathExtension("wav")
            let pictureFile = output.appendingPathExtension("png")
            defer { try? FileManager.default.removeItem(at: pictureFile) }
            try Data(picture).write(to: pictureFile)
            try sox(rate: sampleRate, into: wav, ["synth", "\(seconds)", "sine", "\(frequency)", "gain", "-6"])
            defer { try? FileManager.default.removeItem(at: wav) }
            // TYPE|MIME|DESCRIPTION|WIDTHxHEIGHTxDEPTH|FILE: with the size given, the tools do not parse the picture.
            let spec = "3|image/png|cover|16x16x24|\(pictureFile.path)"
            switch format {
            case .mp3:
                _ = try ProcessRunner.requireTool("lame", package: "lame")
                try ProcessRunner.runChecked("lame", [
                    "--quiet", "--tt", title, "--tv", "TPE2=\(albumArtist)", "--tn", trackNumber,
                    "--ti", pictureFile.path, wav.path, output.path,
                ], timeout: .seconds(60))
            case .flac:
                _ = try ProcessRunner.requireTool("flac", package: "flac")
                try ProcessRunner.runChecked("flac", [
                    "-s", "-f", "-T", "TITLE=\(title)", "-T", "ALBUMARTIST=\(albumArtist)",
                    "-T", "TRACKNUMBER=\(trackNumber)", "--picture=\(spec)", "-o", output.path, wav.path,
                ], timeout: .seconds(60))
            case .vorbis:
                _ = try ProcessRunner.requireTool("oggenc", package: "vorbis-tools")
                let encoded = Data(flacPictureStructure(picture)).base64EncodedString()
                try ProcessRunner.runChecked("oggenc", [
                    "-Q", "-c", "TITLE=\(title)", "-c", "ALBUM ARTIST=\(albumArtist)",
                    "-c", "TRACKNUMBER=\(trackNumber)",
                    "-c", "METADATA_BLOCK_PICTURE=\(encoded)", "-o", output.path, wav.path,
                ], timeout: .seconds(60))
            case .opus:
                _ = try ProcessRunner.requireTool("opusenc", package: "opus-tools")
                try ProcessRunner.runChecked("opusenc", [
                    "--quiet", "--title", title, "--comment", "ALBUMARTIST=\(albumArtist)",
                    "--comment", "TRACKNUMBER=\(trackNumber)", "--picture", spec, wav.path, output.path,
                ], timeout: .seconds(60))
            }
        }
    }
}
