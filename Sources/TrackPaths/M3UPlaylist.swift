// Reading an M3U playlist's lines (or a PLS playlist's `FileN=` lines) into the names they give, without touching the
// file system (QueueInput resolves and checks them; Tests/Fuzz/URIPlaylistFuzz.swift feeds it arbitrary bytes). A
// playlist is whatever a user or a program wrote, so nothing here trusts it: the text is read as bytes (an old
// playlist's Latin-1 names stay their bytes), in chunks as they come from the file, and what is kept between chunks is
// one line, at most `maximumLineBytes` long. A playlist of a million lines costs the entries the caller keeps, not the
// file's size.

/// The playlist formats Earshot expands into their tracks, told by the file's name.
public enum PlaylistFormat: Equatable, Sendable, CaseIterable {
    /// M3U and M3U8 (`.m3u`, `.m3u8`): one name per line, `#` lines are comments and `#EXTINF` tags.
    case m3u
    /// PLS (`.pls`): an INI-like `[playlist]` section whose `File1=`, `File2=`, ... lines name the tracks.
    case pls

    /// The MIME types of the playlists Earshot opens (the desktop entry's and MPRIS's lists, beside the audio types):
    /// `.m3u` and `.m3u8` as shared-mime-info names them (and its older alias), and `.pls`.
    public static let mimeTypes = ["audio/x-mpegurl", "audio/mpegurl", "application/vnd.apple.mpegurl", "audio/x-scpls"]

    /// The format of the playlist at `path` by its name's ending, ASCII case ignored; nil for anything else.
    public static func of(_ path: TrackPath) -> PlaylistFormat? {
        if hasSuffix(path.bytes, ".m3u") || hasSuffix(path.bytes, ".m3u8") { return .m3u }
        return hasSuffix(path.bytes, ".pls") ? .pls : nil
    }

    /// Whether `bytes` end in `suffix` (lowercase ASCII), ignoring ASCII case. Index arithmetic: this runs for every
    /// entry of a playlist, in debug builds too.
    private static func hasSuffix(_ bytes: [UInt8], _ suffix: StaticString) -> Bool {
        let count = suffix.utf8CodeUnitCount
        guard bytes.count >= count else { return false }
        let offset = bytes.count - count
        return suffix.withUTF8Buffer { tail in
            for index in 0..<count {
                var byte = bytes[offset + index]
                if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { byte += 32 }
                if byte != tail[index] { return false }
            }
            return true
        }
    }
}

/// What one entry line of an M3U playlist gives: the name it holds, or why it holds none.
public enum M3UEntry: Equatable, Sendable {
    /// A path as the line wrote it (relative to the playlist's folder unless it starts with `/`); a `file://` line
    /// percent-decoded to its bytes.
    case path(TrackPath)
    /// A `file://` line that is not a valid URI, or names no path.
    case malformedURI
    /// A line that holds a NUL byte (written raw or as `%00`), which no file name can contain.
    case nulByte
    /// A line longer than `M3UReader.maximumLineBytes`, skipped without being kept.
    case tooLong
}

/// Splits an M3U (or M3U8) playlist fed in chunks into its entries: blank lines and `#` lines (comments, `#EXTINF`)
/// are skipped, blanks around a line are not part of its name, and a byte-order mark before the first line is
/// dropped. Lines end at `\n`, `\r` or both. Reading a PLS playlist (`format: .pls`), only `FileN=` lines are entries
/// (the key in any case), in the order they come; their value is read as an M3U line is.
public struct M3UReader {
    /// The longest line read: a path is at most PATH_MAX (4096) bytes, and as a `file://` URI with every byte
    /// escaped three times that; a longer line is no name, and is not kept while it goes by.
    public static let maximumLineBytes = 16_384

    /// The start of the line the last chunk ended in.
    private var pending: [UInt8] = []
    /// Whether the line going by has grown past `maximumLineBytes` (its bytes are dropped until it ends).
    private var skippingLongLine = false
    /// Whether nothing has been read yet (a byte-order mark may come).
    private var atStart = true
    /// The format read.
    private let format: PlaylistFormat

    /// A reader at the start of a playlist of `format`.
    public init(format: PlaylistFormat = .m3u) {
        self.format = format
    }

    /// Reads `chunk`, the next bytes of the playlist, calling `entry` for each entry line it completes.
    public mutating func feed(_ chunk: UnsafeBufferPointer<UInt8>, _ entry: (M3UEntry) -> Void) {
        guard let base = chunk.baseAddress else { return }
        // Index arithmetic on the pointer, no slices: a debug build (the tests') reads a million lines in well
        // under a second this way.
        var start = 0
        var index = 0
        while index < chunk.count {
            let byte = base[index]
            if byte == Self.newline || byte == Self.carriageReturn {
                let line = UnsafeBufferPointer(start: base + start, count: index - start)
                if pending.isEmpty && !skippingLongLine && line.count <= Self.maximumLineBytes {
                    // The whole line is in this chunk: read in place.
                    read(line, entry)
                } else {
                    take(line, lineEnded: true, entry)
                }
                start = index + 1
            }
            index += 1
        }
        take(UnsafeBufferPointer(start: base + start, count: chunk.count - start), lineEnded: false, entry)
    }

    /// Reads `chunk`, the next bytes of the playlist, calling `entry` for each entry line it completes.
    public mutating func feed(_ chunk: [UInt8], _ entry: (M3UEntry) -> Void) {
        chunk.withUnsafeBufferPointer { feed($0, entry) }
    }

    /// Ends the playlist: its last line, if it had no line break, is read.
    public mutating func finish(_ entry: (M3UEntry) -> Void) {
        if skippingLongLine || !pending.isEmpty { endLine(entry) }
        pending = []
    }

    /// Every entry of a whole playlist of `format` held in memory, in order.
    public static func entries(in contents: [UInt8], format: PlaylistFormat = .m3u) -> [M3UEntry] {
        var reader = M3UReader(format: format)
        var entries: [M3UEntry] = []
        reader.feed(contents) { entries.append($0) }
        reader.finish { entries.append($0) }
        return entries
    }

    /// Adds `bytes` to the line going by, and reads that line when it ended.
    private mutating func take(_ bytes: UnsafeBufferPointer<UInt8>, lineEnded: Bool, _ entry: (M3UEntry) -> Void) {
        if !skippingLongLine {
            pending += bytes
            // Once a line is longer than any name it is no longer kept (only its end is looked for).
            if pending.count > Self.maximumLineBytes {
                skippingLongLine = true
                pending = []
            }
        }
        if lineEnded { endLine(entry) }
    }

    /// Reads the line just ended and starts the next.
    private mutating func endLine(_ entry: (M3UEntry) -> Void) {
        if skippingLongLine {
            atStart = false
            entry(.tooLong)
        } else {
            // A byte-order mark before the first line is not part of its name.
            let line = pending
            line.withUnsafeBufferPointer { read($0, entry) }
        }
        pending.removeAll(keepingCapacity: true)
        skippingLongLine = false
    }

    /// Reads one whole line (the first without its byte-order mark).
    private mutating func read(_ line: UnsafeBufferPointer<UInt8>, _ entry: (M3UEntry) -> Void) {
        var line = line
        if atStart {
            atStart = false
            if line.count >= 3 && line[0] == 0xEF && line[1] == 0xBB && line[2] == 0xBF {
                line = UnsafeBufferPointer(rebasing: line[3...])
            }
        }
        switch format {
        case .m3u: Self.interpret(line, entry)
        case .pls: Self.interpretPLS(line, entry)
        }
    }

    /// Calls `entry` with what a PLS line names when it is a `FileN=` line; other lines (the section, `TitleN`,
    /// `LengthN`, `NumberOfEntries`, `Version`, comments) name nothing.
    private static func interpretPLS(_ line: UnsafeBufferPointer<UInt8>, _ entry: (M3UEntry) -> Void) {
        var start = 0
        while start < line.count && (line[start] == space || line[start] == tab) { start += 1 }
        let key = Array("file".utf8)
        guard line.count - start > key.count else { return }
        for index in key.indices {
            var byte = line[start + index]
            if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { byte += 32 }
            guard byte == key[index] else { return }
        }
        var cursor = start + key.count
        let digitsStart = cursor
        while cursor < line.count && line[cursor] >= UInt8(ascii: "0") && line[cursor] <= UInt8(ascii: "9") {
            cursor += 1
        }
        guard cursor > digitsStart, cursor < line.count, line[cursor] == UInt8(ascii: "=") else { return }
        interpret(UnsafeBufferPointer(rebasing: line[(cursor + 1)...]), entry)
    }

    /// Calls `entry` with what `line` names, unless it is blank or a comment.
    private static func interpret(_ line: UnsafeBufferPointer<UInt8>, _ entry: (M3UEntry) -> Void) {
        var start = 0
        var end = line.count
        while start < end && (line[start] == space || line[start] == tab) { start += 1 }
        while end > start && (line[end - 1] == space || line[end - 1] == tab) { end -= 1 }
        guard start < end, line[start] != UInt8(ascii: "#") else { return }
        let name = UnsafeBufferPointer(rebasing: line[start..<end])
        if name.starts(with: "file://".utf8) {
            guard let parts = URIParts(bytes: name),
                  let decoded = TrackPath.percentDecodedBytes(bytes: parts.percentEncodedPathBytes),
                  !decoded.isEmpty else {
                entry(.malformedURI)
                return
            }
            guard let path = TrackPath(bytes: decoded) else { return entry(.nulByte) }
            return entry(.path(path))
        }
        guard let path = TrackPath(bytes: name) else { return entry(.nulByte) }
        entry(.path(path))
    }

    private static let newline = UInt8(ascii: "\n")
    private static let carriageReturn = UInt8(ascii: "\r")
    private static let space = UInt8(ascii: " ")
    private static let tab = UInt8(ascii: "\t")
}
