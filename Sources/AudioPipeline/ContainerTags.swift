// ContainerTags: the tags of FLAC files (the VORBIS_COMMENT and PICTURE metadata blocks) and of Ogg Vorbis and Opus
// files (the comment header, the stream's second packet, which may be spread over many pages), read by Earshot
// itself: libsndfile gives neither pictures nor the album artist. Bounded: at most `maximumBlocks` FLAC blocks and
// `OggPacketStream.maximumPages` Ogg pages are looked at, and what is not wanted is skipped by its length.

/// The tags of a native FLAC file.
enum FLACTags {
    /// Most metadata blocks looked at (a real file has a handful).
    static let maximumBlocks = 1024

    /// Reads the fields and pictures of the FLAC file in `source` (which starts with `fLaC`).
    static func read(_ source: TagSource) -> TrackMetadata {
        guard source.bytes(at: 0, count: 4) == Array("fLaC".utf8) else { return TrackMetadata() }
        var findings = TagFindings()
        var offset = 4
        for _ in 0..<maximumBlocks {
            guard let header = source.bytes(at: offset, count: 4) else { break }
            let isLast = header[0] & 0x80 != 0
            let type = header[0] & 0x7F
            let length = Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
            let start = offset + 4
            guard source.contains(offset: start, count: length) else {
                if type == 6 { findings.skipPicture("malformed picture block (it runs past the end of the file)") }
                break
            }
            var block = TagRange(source, start: start, count: length)
            switch type {
            case 4: VorbisComments.read(&block, into: &findings)
            case 6: VorbisComments.readPicture(&block, into: &findings)
            // 127 is forbidden: what follows is not metadata.
            case 127: return findings.result
            default: break
            }
            offset = start + length
            if isLast { break }
        }
        return findings.result
    }
}

/// The tags of an Ogg Vorbis or Ogg Opus file.
enum OggTags {
    /// Reads the comment header of the first logical stream in `source`: `opus` chooses the OpusTags form, else
    /// the Vorbis one.
    static func read(_ source: TagSource, opus: Bool) -> TrackMetadata {
        guard let first = source.bytes(at: 0, count: 27), first.prefix(4).elementsEqual("OggS".utf8) else {
            return TrackMetadata()
        }
        var packets = OggPacketStream(source, serial: Array(first[14..<18]))
        // The identification header is the first packet; the comment header begins after it.
        guard packets.skipRestOfPacket() else { return TrackMetadata() }
        packets.startNextPacket()
        let magic = opus ? Array("OpusTags".utf8) : [3] + Array("vorbis".utf8)
        guard packets.take(magic.count) == magic else { return TrackMetadata() }
        var findings = TagFindings()
        VorbisComments.read(&packets, into: &findings)
        return findings.result
    }
}

/// The bytes of one Ogg packet of one logical stream, read page by page: each page's header and segment table are
/// read, its body only where the packet's bytes are wanted. Pages of other streams are passed over.
struct OggPacketStream: TagStream {
    /// Most pages looked at (a comment header over 4096 pages would be over 250 MB).
    static let maximumPages = 4096

    private let source: TagSource
    /// The logical stream's serial number (page header bytes 14-17).
    private let serial: [UInt8]
    /// The source offset of the next page's header.
    private var nextPage = 0
    /// The current page's segment table, and the next entry to use.
    private var lacing: [UInt8] = []
    private var lacingIndex = 0
    /// The source offset of the next byte of the current page's body.
    private var bodyPosition = 0
    /// Bytes of the packet left in the current run of segments (a run is contiguous, within one page).
    private var runLeft = 0
    /// Whether the current run holds the packet's last segment (one shorter than 255 bytes).
    private var runEndsPacket = false
    /// Whether the packet has begun and goes on: the next page must then say it continues a packet.
    private var midPacket = false
    private var pagesRead = 0
    /// Set on damage: no more bytes.
    private var broken = false

    /// A stream positioned at the first packet of the stream `serial`, from the start of `source`.
    init(_ source: TagSource, serial: [UInt8]) {
        self.source = source
        self.serial = serial
    }

    /// Passes over what is left of the current packet; false when the pages end or break first.
    mutating func skipRestOfPacket() -> Bool {
        while !broken {
            bodyPosition += runLeft
            runLeft = 0
            if runEndsPacket { return true }
            guard nextRun() else { return false }
        }
        return false
    }

    /// Begins the next packet (after `skipRestOfPacket`).
    mutating func startNextPacket() {
        runEndsPacket = false
        midPacket = false
        runLeft = 0
    }

    mutating func take(_ count: Int) -> [UInt8]? {
        var bytes: [UInt8] = []
        return advance(count, collecting: &bytes, collect: true) ? bytes : nil
    }

    mutating func skip(_ count: Int) -> Bool {
        var unused: [UInt8] = []
        return advance(count, collecting: &unused, collect: false)
    }

    /// Moves `count` bytes along the packet, appending them to `bytes` when `collect`.
    private mutating func advance(_ count: Int, collecting bytes: inout [UInt8], collect: Bool) -> Bool {
        guard count >= 0 else { return false }
        var left = count
        while left > 0 {
            guard !broken else { return false }
            if runLeft == 0 {
                guard nextRun() else { return false }
                continue
            }
            let chunk = min(left, runLeft)
            if collect {
                guard let piece = source.bytes(at: bodyPosition, count: chunk) else {
                    broken = true
                    return false
                }
                bytes += piece
            }
            bodyPosition += chunk
            runLeft -= chunk
            left -= chunk
        }
        return true
    }

    /// Moves to the packet's next run of segments, reading pages as needed; false at the packet's end or on damage.
    private mutating func nextRun() -> Bool {
        guard !runEndsPacket, !broken else { return false }
        while lacingIndex >= lacing.count {
            guard readPage() else {
                broken = true
                return false
            }
        }
        var length = 0
        var final = false
        while lacingIndex < lacing.count {
            let value = lacing[lacingIndex]
            lacingIndex += 1
            length += Int(value)
            if value < 255 {
                final = true
                break
            }
        }
        runLeft = length
        runEndsPacket = final
        midPacket = !final
        return true
    }

    /// Reads the next page's header and segment table; a page of another stream leaves an empty table. False when
    /// there is no further whole page header, too many were read, or the page does not continue the packet as the
    /// packet needs.
    private mutating func readPage() -> Bool {
        guard pagesRead < Self.maximumPages, let header = source.bytes(at: nextPage, count: 27),
              header.prefix(4).elementsEqual("OggS".utf8), header[4] == 0,
              let table = source.bytes(at: nextPage + 27, count: Int(header[26]))
        else { return false }
        pagesRead += 1
        let bodyStart = nextPage + 27 + table.count
        nextPage = bodyStart + table.reduce(0) { $0 + Int($1) }
        guard header[14..<18].elementsEqual(serial) else {
            lacing = []
            lacingIndex = 0
            return true
        }
        // Header type bit 0: the page's first segment continues a packet from the page before.
        guard (header[5] & 1 != 0) == midPacket else { return false }
        lacing = table
        lacingIndex = 0
        bodyPosition = bodyStart
        return true
    }
}
