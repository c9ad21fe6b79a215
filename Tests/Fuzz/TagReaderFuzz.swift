// libFuzzer target for Earshot's own tag readers fed arbitrary bytes in memory: the ID3v2 reader (with its RVA2
// frames), the LAME tag's gains, the FLAC metadata block reader and the Ogg comment-header reader (Vorbis and Opus
// forms), and TrackHeaders' MP3 frame walk and FLAC STREAMINFO and block checks, each on every input, with the
// picture each finds loaded. Not a SwiftPM target: scripts/fuzz compiles it with Sources/AudioPipeline's sources.
//
// Besides "never crash or hang", it checks the readers' promises: a picture is never over the limit, its bytes are
// exactly its length, and a problem is given only when no picture was taken; numbers are positive, and the library's
// text fields are trimmed and never empty; ReplayGain values are in range.

/// Stops the process with `message` when `condition` is false (fatalError keeps its message in -O builds).
private func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

/// Checks what one reader found.
private func check(_ metadata: TrackMetadata) {
    if let cover = metadata.cover {
        require(cover.byteCount > 0 && cover.byteCount <= CoverPicture.maximumBytes, "a picture over the limit")
        require(cover.load()?.count == cover.byteCount, "a picture whose bytes are not its length")
        require(metadata.coverProblem == nil, "a picture and a problem at once")
    }
    if let number = metadata.trackNumber { require(number > 0, "a track number below 1") }
    if let number = metadata.discNumber { require(number > 0, "a disc number below 1") }
    // ReplayGain values are numbers in range or absent, never NaN or +80 dB.
    let gains = metadata.replayGain
    for gain in [gains.trackGain, gains.albumGain] {
        if let gain { require(abs(gain) <= ReplayGainTags.gainLimitDb, "a gain out of range") }
    }
    for peak in [gains.trackPeak, gains.albumPeak] {
        if let peak { require(peak > 0 && peak <= ReplayGainTags.peakLimit, "a peak out of range") }
    }
    // The library's text fields: trimmed and never empty (an empty one is left out).
    for text in [metadata.genre, metadata.date, metadata.composer, metadata.musicBrainz.track,
                 metadata.musicBrainz.album, metadata.musicBrainz.artist, metadata.musicBrainz.albumArtist] {
        if let text { require(!text.isEmpty && text.first?.isWhitespace == false, "an empty or untrimmed field") }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTagReaders(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // The readers look for their own signatures; the input is also offered behind each, so that every reader
    // reaches its structures and not just its signature check.
    let id3 = ID3v2Tags.read(TagSource(bytes: bytes))
    check(id3.metadata)
    // The LAME tag's gains (in the first MPEG frame, after any ID3v2 tag), as MP3Decoder merges them.
    var lame = TrackMetadata()
    lame.replayGain = LAMETag.replayGain(TagSource(bytes: bytes))
    check(lame)
    check(FLACTags.read(TagSource(bytes: bytes)))
    check(FLACTags.read(TagSource(bytes: Array("fLaC".utf8) + bytes)))
    check(OggTags.read(TagSource(bytes: bytes), opus: false))
    check(OggTags.read(TagSource(bytes: bytes), opus: true))
    // The facts a library scan takes from headers instead of a decoder: a rate and a finite, positive length.
    for facts in [TrackHeaders.mp3(TagSource(bytes: bytes)), TrackHeaders.flac(TagSource(bytes: bytes)),
                  TrackHeaders.flac(TagSource(bytes: Array("fLaC".utf8) + bytes))].compactMap({ $0 }) {
        check(facts.metadata)
        require(facts.sampleRate > 0 && facts.seconds.isFinite && facts.seconds > 0, "a rate or length out of range")
    }
    return 0
}
