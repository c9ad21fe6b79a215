// ID3v2Tags: the ID3v2.2, 2.3 and 2.4 tag at the start of an MP3, read by Earshot itself rather than by libmpg123,
// which reads a whole tag into memory (a 50 MB cover with it) before handing out its fields. Here each frame header is
// read and only the wanted frames' bodies: text up to 64 KiB, and of a picture only its first bytes (type, MIME,
// description); the picture itself is described by its place in the file and read when it is cached.

/// The ID3v2 tag at the start of a file.
enum ID3v2Tags {
    /// Frame ids (2.3/2.4, then 2.2) and the fields they carry.
    private static let textFrames: [String: TagField] = [
        "TIT2": .title, "TPE1": .artist, "TALB": .album, "TPE2": .albumArtist, "TRCK": .trackNumber,
        "TT2": .title, "TP1": .artist, "TAL": .album, "TP2": .albumArtist, "TRK": .trackNumber,
        "TPOS": .discNumber, "TCON": .id3Genre, "TDRC": .date, "TYER": .date, "TCOM": .composer,
        "TPA": .discNumber, "TCO": .id3Genre, "TYE": .date, "TCM": .composer,
    ]

    /// The descriptions of the user text frames (TXXX, 2.2's TXX) taken, as Picard writes them (compared in lower
    /// case), and the fields they carry.
    private static let userTextFrames: [String: TagField] = [
        "musicbrainz album id": .musicBrainzAlbum, "musicbrainz artist id": .musicBrainzArtist,
        "musicbrainz album artist id": .musicBrainzAlbumArtist,
    ]

    /// The owner of the unique file identifier frame (UFID, 2.2's UFI) that holds the MusicBrainz recording id.
    private static let musicBrainzOwner = Array("http://musicbrainz.org".utf8)

    /// The most bytes of a picture frame read to find where the picture begins (the description comes first).
    private static let pictureHeadBytes = 8 << 10

    /// The fields and pictures of the tag at the start of `source`, and whether there is a tag at all.
    static func read(_ source: TagSource) -> (metadata: TrackMetadata, hasTag: Bool) {
        guard let header = source.bytes(at: 0, count: 10), header.prefix(3).elementsEqual("ID3".utf8),
              (2...4).contains(header[3]), header[4] != 0xFF, header[6..<10].allSatisfy({ $0 < 0x80 })
        else { return (TrackMetadata(), false) }
        let version = Int(header[3])
        let flags = header[5]
        let size = syncsafe(header[6..<10])
        let end = 10 + min(size, source.size - 10)
        var findings = TagFindings()
        // A compressed 2.2 tag has no defined compression: nothing in it can be read.
        if version == 2 && flags & 0x40 != 0 { return (findings.result, true) }
        if flags & 0x80 != 0 && version < 4 {
            // Unsynchronisation of a whole 2.2/2.3 tag changes every offset in it: such a tag (rare, and small in
            // practice) is read into memory and undone there, up to the picture limit.
            guard end - 10 <= CoverPicture.maximumBytes + pictureHeadBytes,
                  let raw = source.bytes(at: 10, count: end - 10) else {
                findings.skipPicture("picture too large (an unsynchronised tag of \(size) bytes)")
                return (findings.result, true)
            }
            let plain = resynchronised(raw)
            readFrames(TagSource(bytes: plain), from: 0, to: plain.count, version: version, into: &findings)
            return (findings.result, true)
        }
        var start = 10
        if flags & 0x40 != 0 {
            // The extended header: 2.3 gives its size without these four bytes, 2.4 (syncsafe) with them.
            guard let sizeBytes = source.bytes(at: 10, count: 4) else { return (findings.result, true) }
            start = version == 3 ? 14 + bigEndian(sizeBytes[...]) : 10 + syncsafe(sizeBytes[...])
        }
        readFrames(source, from: start, to: end, version: version, into: &findings,
                   unsynchronisedFrames: version == 4 && flags & 0x80 != 0)
        return (findings.result, true)
    }

    /// Reads the frames between `start` and `end` of `source`.
    private static func readFrames(
        _ source: TagSource, from start: Int, to end: Int, version: Int, into findings: inout TagFindings,
        unsynchronisedFrames: Bool = false
    ) {
        let headerLength = version == 2 ? 6 : 10
        let idLength = version == 2 ? 3 : 4
        var offset = start
        while offset >= 0, offset + headerLength <= end, let header = source.bytes(at: offset, count: headerLength) {
            let idBytes = header.prefix(idLength)
            // Padding (zeros), or bytes that are no frame id: the frames are over.
            guard idBytes.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }) else { return }
            let id = TagText.latin1(idBytes)
            let sizeBytes = header[idLength..<(idLength + (version == 2 ? 3 : 4))]
            if version == 4 && !sizeBytes.allSatisfy({ $0 < 0x80 }) { return }
            let size = version == 4 ? syncsafe(sizeBytes) : bigEndian(sizeBytes)
            let isPicture = id == "APIC" || id == "PIC"
            let dataStart = offset + headerLength
            guard size <= end - dataStart else {
                if isPicture { findings.skipPicture("malformed picture frame (its length runs past the tag)") }
                return
            }
            offset = dataStart + size
            let isUserText = id == "TXXX" || id == "TXX"
            let isIdentifier = id == "UFID" || id == "UFI"
            let isVolume = id == "RVA2"
            guard isPicture || isUserText || isIdentifier || isVolume || textFrames[id] != nil else { continue }
            // The frame's format flags, and the bytes they put before the data (group, data length).
            let format = version == 2 ? 0 : header[9]
            var bodyStart = dataStart
            var unsynchronised = unsynchronisedFrames
            if version == 3 {
                if format & 0xC0 != 0 {
                    if isPicture { findings.skipPicture("picture frame compressed or encrypted") }
                    continue
                }
                if format & 0x20 != 0 { bodyStart += 1 }
            } else if version == 4 {
                if format & 0x0C != 0 {
                    if isPicture { findings.skipPicture("picture frame compressed or encrypted") }
                    continue
                }
                if format & 0x40 != 0 { bodyStart += 1 }
                if format & 0x01 != 0 { bodyStart += 4 }
                if format & 0x02 != 0 { unsynchronised = true }
            }
            let bodySize = dataStart + size - bodyStart
            guard bodySize > 0 else { continue }
            if isPicture {
                readPicture(source, at: bodyStart, size: bodySize, oldForm: version == 2,
                            unsynchronised: unsynchronised, into: &findings)
            } else if bodySize <= TagText.maximumTextBytes, let raw = source.bytes(at: bodyStart, count: bodySize) {
                let body = unsynchronised ? resynchronised(raw) : raw
                if isVolume {
                    RVA2Frame.read(body[...], into: &findings.volumeAdjustments)
                } else if let field = textFrames[id] {
                    findings.set(field, firstString(body.dropFirst(), encoding: body[0]).text)
                } else if isUserText {
                    // Encoding, description, value: both strings in the frame's encoding.
                    let description = firstString(body.dropFirst(), encoding: body[0])
                    guard description.terminated else { continue }
                    let value = firstString(body.dropFirst(1 + description.consumed), encoding: body[0])
                    if let gainField = ReplayGainTags.field(named: description.text) {
                        findings.metadata.replayGain.take(gainField, value.text)
                    } else if let field = userTextFrames[description.text.lowercased()] {
                        findings.set(field, value.text)
                    }
                } else if isIdentifier, let end = body.firstIndex(of: 0),
                          body[..<end].elementsEqual(musicBrainzOwner), end + 1 < body.count {
                    // Owner (Latin-1, terminated), then the identifier's bytes (ASCII for MusicBrainz).
                    findings.set(.musicBrainzTrack, TagText.latin1(body[(end + 1)...].prefix { $0 != 0 }))
                }
            }
        }
    }

    /// Reads a picture frame's head (APIC: encoding, MIME type, picture type, description; 2.2's PIC: encoding,
    /// three-letter format, picture type, description) and describes the picture after it.
    private static func readPicture(
        _ source: TagSource, at start: Int, size: Int, oldForm: Bool, unsynchronised: Bool,
        into findings: inout TagFindings
    ) {
        if unsynchronised {
            // Unsynchronised bytes differ from the picture's: undo it in memory, then read as from any memory.
            guard size <= CoverPicture.maximumBytes + pictureHeadBytes else {
                findings.skipPicture("picture too large (\(size) bytes, at most \(CoverPicture.maximumBytes))")
                return
            }
            guard let raw = source.bytes(at: start, count: size) else { return }
            let plain = resynchronised(raw)
            readPicture(TagSource(bytes: plain), at: 0, size: plain.count, oldForm: oldForm, unsynchronised: false,
                        into: &findings)
            return
        }
        guard let head = source.bytes(at: start, count: min(size, pictureHeadBytes)), head.count >= 2 else { return }
        let encoding = head[0]
        var index = 1
        let mime: [UInt8]
        if oldForm {
            guard head.count >= 4 else { return }
            mime = Array(head[1..<4])
            index = 4
        } else {
            guard let end = head[1...].firstIndex(of: 0) else {
                findings.skipPicture("malformed picture frame (no end to its MIME type)")
                return
            }
            mime = Array(head[1..<end])
            index = end + 1
        }
        guard index < head.count else { return }
        let pictureType = Int(head[index])
        let description = firstString(head[(index + 1)...], encoding: encoding)
        guard description.terminated else {
            findings.skipPicture("malformed picture frame (no end to its description)")
            return
        }
        let dataOffset = index + 1 + description.consumed
        let dataLength = size - dataOffset
        guard dataLength > 0 else { return }
        guard dataLength <= CoverPicture.maximumBytes else {
            findings.skipPicture("picture too large (\(dataLength) bytes, at most \(CoverPicture.maximumBytes))")
            return
        }
        let mimeType = TagText.mimeType(mime)
        if let path = source.path {
            findings.pictures.append((pictureType, CoverPicture(
                mimeType: mimeType, byteCount: dataLength, bytes: .inFile(path, offset: start + dataOffset))))
        } else if let data = source.bytes(at: start + dataOffset, count: dataLength) {
            findings.pictures.append((pictureType, CoverPicture(
                mimeType: mimeType, byteCount: dataLength, bytes: .inline(data))))
        }
    }

    /// The first string of ID3 text in `encoding` (0 Latin-1, 1 UTF-16 with a byte-order mark, 2 UTF-16BE, 3 UTF-8),
    /// how many bytes it and its terminator took, and whether a terminator was found.
    static func firstString(_ bytes: ArraySlice<UInt8>, encoding: UInt8) -> (text: String, consumed: Int,
                                                                              terminated: Bool) {
        switch encoding {
        case 1, 2:
            var units: [UInt16] = []
            var bigEndianOrder = encoding == 2
            var index = bytes.startIndex
            var terminated = false
            while index + 1 < bytes.endIndex {
                let first = bytes[index]
                let second = bytes[index + 1]
                index += 2
                if first == 0 && second == 0 {
                    terminated = true
                    break
                }
                if encoding == 1 && units.isEmpty && index == bytes.startIndex + 2 {
                    if first == 0xFE && second == 0xFF { bigEndianOrder = true; continue }
                    if first == 0xFF && second == 0xFE { bigEndianOrder = false; continue }
                }
                units.append(bigEndianOrder ? UInt16(first) << 8 | UInt16(second) : UInt16(second) << 8 | UInt16(first))
            }
            return (String(decoding: units, as: UTF16.self), index - bytes.startIndex, terminated)
        default:
            let end = bytes.firstIndex(of: 0)
            let text = bytes[..<(end ?? bytes.endIndex)]
            let string = encoding == 3 ? TagText.utf8(text) : TagText.latin1(text)
            return (string, text.count + (end == nil ? 0 : 1), end != nil)
        }
    }

    /// `bytes` with ID3 unsynchronisation undone: every 0xFF 0x00 becomes 0xFF.
    static func resynchronised(_ bytes: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var previous: UInt8 = 0
        for byte in bytes {
            if !(previous == 0xFF && byte == 0) { result.append(byte) }
            previous = byte
        }
        return result
    }

    /// A syncsafe number: 7 bits per byte, most significant first.
    private static func syncsafe(_ bytes: ArraySlice<UInt8>) -> Int {
        bytes.reduce(0) { $0 << 7 | Int($1 & 0x7F) }
    }

    /// A big-endian number.
    private static func bigEndian(_ bytes: ArraySlice<UInt8>) -> Int {
        bytes.reduce(0) { $0 << 8 | Int($1) }
    }
}
