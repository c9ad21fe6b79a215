// ICY metadata (Icecast, SHOUTcast): asked for with the request header `Icy-MetaData: 1`, a server that has titles
// answers `icy-metaint: N` and then sends N bytes of audio, one length byte L, 16 × L bytes of metadata text
// (`StreamTitle='Artist - Title';StreamUrl='...';`, padded with NULs), N bytes of audio again, and so on.
// Pure values: scripts/fuzz compiles this file with StreamResponse.swift alone (the `icy` target).

/// Splits a stream's body into its audio and its metadata blocks, fed in chunks of any size. Memory is bounded by
/// the format: one metadata block is at most 255 × 16 = 4080 bytes.
public struct ICYDemuxer: Sendable {
    /// The largest metadata block the format allows.
    public static let maximumBlockBytes = 255 * 16

    private enum Phase: Sendable {
        case audio(remaining: Int)
        case lengthByte
        case metadata(remaining: Int)
    }

    private let interval: Int?
    private var phase: Phase
    private var block: [UInt8] = []

    /// A demuxer for a body with `interval` audio bytes between blocks, or none (`nil`: all of it is audio).
    public init(interval: Int?) {
        precondition(interval.map { $0 > 0 } ?? true, "an ICY interval is positive")
        self.interval = interval
        phase = .audio(remaining: interval ?? 0)
    }

    /// Reads `bytes`: each run of audio goes to `audio` (slices of the input, in order), each complete metadata
    /// block to `metadata` (without its NUL padding; an empty block, which says "no change", is not reported).
    public mutating func feed(
        _ bytes: UnsafeRawBufferPointer, audio: (UnsafeRawBufferPointer) -> Void, metadata: ([UInt8]) -> Void
    ) {
        guard let interval else {
            if !bytes.isEmpty { audio(bytes) }
            return
        }
        var offset = 0
        while offset < bytes.count {
            switch phase {
            case .audio(let remaining):
                let count = min(remaining, bytes.count - offset)
                audio(UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]))
                offset += count
                phase = remaining - count == 0 ? .lengthByte : .audio(remaining: remaining - count)
            case .lengthByte:
                let length = Int(bytes[offset]) * 16
                offset += 1
                phase = length == 0 ? .audio(remaining: interval) : .metadata(remaining: length)
            case .metadata(let remaining):
                let count = min(remaining, bytes.count - offset)
                block.append(contentsOf: bytes[offset..<offset + count])
                offset += count
                if remaining - count > 0 {
                    phase = .metadata(remaining: remaining - count)
                } else {
                    while block.last == 0 { block.removeLast() }
                    if !block.isEmpty { metadata(block) }
                    block.removeAll(keepingCapacity: true)
                    phase = .audio(remaining: interval)
                }
            }
        }
    }

    /// Reads `bytes` given as an array (tests and the fuzz target).
    public mutating func feed(_ bytes: [UInt8], audio: ([UInt8]) -> Void, metadata: ([UInt8]) -> Void) {
        bytes.withUnsafeBytes { raw in
            feed(raw, audio: { audio(Array($0)) }, metadata: metadata)
        }
    }
}

/// The fields of one ICY metadata block.
public struct ICYMetadata: Equatable, Sendable {
    /// The longest title kept, in characters.
    public static let maximumTitleCharacters = 300

    /// `StreamTitle`: what is playing now, usually "Artist - Title"; empty when the station clears it.
    public var streamTitle: String?

    /// Reads a block's text: `key='value';` fields. A value ends at the first `';` (a title may hold a lone quote,
    /// "Don't Stop"), or at the block's end.
    public init(block: [UInt8]) {
        streamTitle = Self.value(of: "StreamTitle", in: block)
            .map { String(TextBytes.decode($0).prefix(Self.maximumTitleCharacters)).trimmingSpaces() }
    }

    /// The value of field `key` in `block`, as bytes, or nil when the block has no such field.
    static func value(of key: String, in block: [UInt8]) -> [UInt8]? {
        let opening = Array((key + "='").utf8)
        var index = 0
        while index + opening.count <= block.count {
            // A field starts at the block's start or after the previous field's `;`.
            let atFieldStart = index == 0 || block[index - 1] == UInt8(ascii: ";")
            if atFieldStart, block[index..<index + opening.count].elementsEqual(opening) {
                let start = index + opening.count
                var end = start
                while end < block.count {
                    if block[end] == UInt8(ascii: "'"), end + 1 == block.count || block[end + 1] == UInt8(ascii: ";") {
                        return Array(block[start..<end])
                    }
                    end += 1
                }
                return Array(block[start...])
            }
            index += 1
        }
        return nil
    }
}
