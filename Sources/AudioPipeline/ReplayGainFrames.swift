// ReplayGainFrames: the MP3 gains that are not ReplayGain 2's TXXX frames: ID3v2's RVA2 frame (a relative volume
// adjustment per channel, in 1/512 dB, named "track" or "album" by the programs that write it) and the LAME tag's
// ReplayGain fields (in the first MPEG frame, which the encoder fills with its own analysis). Both rank below TXXX:
// a file's TXXX values win, then RVA2's, then the LAME tag's, field by field (`ReplayGainTags.fillMissing`). Also the
// protocol of a decoder that scales its own output (MP3Decoder): here, as scripts/fuzz's decoder targets compile this
// file with the decoders but not ReplayGain.swift.

extension ReplayGainTags {
    /// Takes each of `other`'s values where this set has none; `other`'s problems are counted too.
    public mutating func fillMissing(from other: ReplayGainTags) {
        trackGain = trackGain ?? other.trackGain
        trackPeak = trackPeak ?? other.trackPeak
        albumGain = albumGain ?? other.albumGain
        albumPeak = albumPeak ?? other.albumPeak
        problems += other.problems
    }

    /// Takes a gain in dB and a peak read as numbers (not text) from a binary frame: the same limits as the text.
    mutating func takeBinary(album: Bool, gain: Double?, peak: Double?) {
        if let gain {
            if gain.isFinite, abs(gain) <= Self.gainLimitDb {
                if album { albumGain = albumGain ?? gain } else { trackGain = trackGain ?? gain }
            } else {
                problems.append(.gainOutOfRange)
            }
        }
        if let peak {
            if peak > 0, peak <= Self.peakLimit {
                if album { albumPeak = albumPeak ?? peak } else { trackPeak = trackPeak ?? peak }
            } else {
                problems.append(.peakOutOfRange)
            }
        }
    }
}

/// ID3v2.4's RVA2 frame (also found in 2.3 tags): identification (Latin-1, terminated), then per channel its type,
/// a signed 16-bit adjustment in 1/512 dB, the peak's width in bits and the peak.
enum RVA2Frame {
    /// The master volume channel, the only one taken (a per-speaker adjustment is not a track's loudness).
    static let masterChannel: UInt8 = 1

    /// Reads the frame's `body` into `gains`: an identification beginning with "album" (any case) gives the album's
    /// gain, anything else the track's, as mpg123 reads it.
    static func read(_ body: ArraySlice<UInt8>, into gains: inout ReplayGainTags) {
        guard let end = body.firstIndex(of: 0) else { return }
        let album = TagText.latin1(body[body.startIndex..<end]).lowercased().hasPrefix("album")
        var index = end + 1
        while index + 4 <= body.endIndex {
            let channel = body[index]
            let raw = Int16(bitPattern: UInt16(body[index + 1]) << 8 | UInt16(body[index + 2]))
            let bits = Int(body[index + 3])
            let peakBytes = (bits + 7) / 8
            index += 4
            guard index + peakBytes <= body.endIndex else { return }
            if channel == masterChannel {
                // The peak: an unsigned number of `bits` bits in whole bytes, full scale at 2^(bits-1). Wider than
                // 64 bits is not taken (nothing writes it).
                var peak: Double?
                if (1...64).contains(bits) {
                    let value = body[index..<(index + peakBytes)].reduce(0.0) { $0 * 256 + Double($1) }
                    peak = value / Double(sign: .plus, exponent: bits - 1, significand: 1)
                }
                gains.takeBinary(album: album, gain: Double(raw) / 512, peak: peak)
                return
            }
            index += peakBytes
        }
    }
}

/// The LAME tag: the extension LAME (3.90 and later) writes after the Xing/Info header in the first MPEG frame, with
/// the track's peak (Q9.23) and two ReplayGain fields (16 bits: name 3, originator 3, sign 1, tenths of dB 9).
enum LAMETag {
    /// How far past the ID3v2 tag the first frame is looked for.
    static let searchBytes = 4096

    /// The gains in the LAME tag of the MP3 in `source`, if it has one. LAME before 3.95 measured against a reference
    /// 6 dB lower than ReplayGain's: its gains are not taken.
    static func replayGain(_ source: TagSource) -> ReplayGainTags {
        var gains = ReplayGainTags()
        guard let frame = firstFrame(source), let head = source.bytes(at: frame.offset + frame.sideInfo + 4, count: 8),
              head.prefix(4).elementsEqual("Xing".utf8) || head.prefix(4).elementsEqual("Info".utf8)
        else { return gains }
        let flags = Int(head[7])
        var offset = frame.offset + frame.sideInfo + 12
        if flags & 1 != 0 { offset += 4 }
        if flags & 2 != 0 { offset += 4 }
        if flags & 4 != 0 { offset += 100 }
        if flags & 8 != 0 { offset += 4 }
        // Encoder 9, revision and method 1, lowpass 1, peak 4, radio gain 2, audiophile gain 2.
        guard let lame = source.bytes(at: offset, count: 19), lame.prefix(4).elementsEqual("LAME".utf8),
              let version = lameVersion(lame[4..<9]), version >= (3, 95) as (Int, Int) else { return gains }
        let peakBits = lame[11..<15].reduce(0) { $0 << 8 | Int($1) }
        let peak: Double? = peakBits == 0 ? nil : Double(peakBits) / Double(1 << 23)
        var peakUsed = false
        for field in [lame[15..<17], lame[17..<19]] {
            let value = Int(field[field.startIndex]) << 8 | Int(field[field.startIndex + 1])
            let name = value >> 13
            let originator = (value >> 10) & 7
            // Name 1 is the radio (track) gain, 2 the audiophile (album) gain; originator 0 means not set.
            guard name == 1 || name == 2, originator != 0 else { continue }
            let magnitude = Double(value & 0x1FF) / 10
            gains.takeBinary(album: name == 2, gain: value & 0x200 != 0 ? -magnitude : magnitude,
                             peak: peakUsed ? nil : peak)
            peakUsed = true
        }
        return gains
    }

    /// "3.100" or "3.99r": the major and minor numbers after "LAME".
    private static func lameVersion(_ bytes: ArraySlice<UInt8>) -> (Int, Int)? {
        let text = TagText.latin1(bytes)
        let parts = text.split(separator: ".", maxSplits: 1)
        guard parts.count == 2, let major = Int(parts[0]),
              let minor = Int(parts[1].prefix { $0.isASCII && $0.isNumber }) else { return nil }
        return (major, minor)
    }

    /// The first MPEG layer III frame header after the ID3v2 tag (if any): its offset and the length of its side
    /// information, after which a Xing/Info header stands.
    static func firstFrame(_ source: TagSource) -> (offset: Int, sideInfo: Int)? {
        var start = 0
        if let id3 = source.bytes(at: 0, count: 10), id3.prefix(3).elementsEqual("ID3".utf8),
           id3[6..<10].allSatisfy({ $0 < 0x80 }) {
            start = 10 + id3[6..<10].reduce(0) { $0 << 7 | Int($1) } + (id3[5] & 0x10 != 0 ? 10 : 0)
        }
        guard let window = source.bytes(at: start, count: min(searchBytes, max(0, source.size - start))) else {
            return nil
        }
        var index = 0
        while index + 4 <= window.count {
            let (b1, b2, b3) = (window[index + 1], window[index + 2], window[index + 3])
            let version = (b1 >> 3) & 3
            if window[index] == 0xFF, b1 & 0xE0 == 0xE0, version != 1, (b1 >> 1) & 3 == 1, b2 >> 4 != 0,
               b2 >> 4 != 15, (b2 >> 2) & 3 != 3 {
                let mono = b3 >> 6 == 3
                let sideInfo = version == 3 ? (mono ? 17 : 32) : (mono ? 9 : 17)
                return (start + index, sideInfo)
            }
            index += 1
        }
        return nil
    }
}

/// A decoder that can scale its own output before the first frame it decodes (libmpg123's output volume, applied in
/// its synthesis in floating point, rounded and clipped to 16 bits as GainedDecoder's loop does).
protocol ScalingDecoder: AnyObject {
    /// Scales every frame decoded from now on by `linear`; false when the decoder cannot.
    func scaleOutput(by linear: Double) -> Bool
}
