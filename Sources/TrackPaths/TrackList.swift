// TrackList: the paths of a queue, stored as bytes once. The paths' bytes lie end to end in buffers of
// `pathsPerChunk` paths each, and a second buffer per chunk says where each path ends. A queue of TrackPath values
// would cost one heap object per track (its byte array: a 32-byte header and the bytes, rounded up by malloc) plus a
// pointer in every array holding it; for 10 000 tracks of 40-byte paths that is about a megabyte, where this costs the
// bytes and 4 bytes a track (issue 14). A TrackPath is made only for the track asked for (the one opened, shown or
// saved).
//
// A value type whose chunks are copy-on-write each: the player, the decode thread and the last saved state share them
// until one of them changes its queue, and then only what changes is copied. Appending to a shared list copies the
// list of chunks (a few words per 1 024 paths) and at most its last chunk, never the whole queue: with one buffer, the
// owner copied every path at each `add` of a long queue, because the state writer and the decoder held the old one
// (issue 21: 0.8 MB at 10 000 tracks, 3 MB at 40 000, for every batch of an `earshot add`).

/// The paths of a queue in byte buffers of `pathsPerChunk` paths each, with the end offset of each path.
public struct TrackList: RandomAccessCollection, Equatable, Sendable, ExpressibleByArrayLiteral, Codable {
    /// How many paths a chunk holds; every chunk but the last is full, so equal lists have equal chunks.
    static let pathsPerChunk = 1024

    /// Up to `pathsPerChunk` paths: their bytes end to end (no separators), and the offset in `bytes` just past each.
    /// 32 bits: a chunk holds less than 4 GiB of paths.
    private struct Chunk: Equatable, Sendable {
        var bytes: [UInt8] = []
        var ends: [UInt32] = []
    }

    private var chunks: [Chunk] = []
    /// The number of paths.
    private var pathCount = 0

    /// An empty list.
    public init() {}

    /// The list of `paths`, in order.
    public init(_ paths: some Collection<TrackPath>) {
        append(contentsOf: paths)
    }

    /// A list written in source code.
    public init(arrayLiteral paths: TrackPath...) {
        self.init(paths)
    }

    /// The first index (0).
    public var startIndex: Int { 0 }

    /// One past the last index: the number of paths.
    public var endIndex: Int { pathCount }

    /// The path at `index`, made from its bytes.
    public subscript(index: Int) -> TrackPath {
        TrackPath(validBytes: Array(pathBytes(at: index)))
    }

    /// The bytes of the path at `index`, without making a TrackPath of them (no allocation: a view of the buffer).
    public func pathBytes(at index: Int) -> ArraySlice<UInt8> {
        precondition(index >= 0 && index < pathCount, "track list index out of range")
        let (chunk, position) = index.quotientAndRemainder(dividingBy: Self.pathsPerChunk)
        let ends = chunks[chunk].ends
        let start = position == 0 ? 0 : Int(ends[position - 1])
        return chunks[chunk].bytes[start..<Int(ends[position])]
    }

    /// Adds `path` at the end.
    public mutating func append(_ path: TrackPath) {
        append(bytes: path.bytes)
    }

    /// Adds `paths` at the end, in order.
    public mutating func append(contentsOf paths: some Collection<TrackPath>) {
        for path in paths {
            append(path)
        }
    }

    /// Adds the paths of `other` at the end, in order: their bytes are copied, the list's own are not.
    public mutating func append(contentsOf other: TrackList) {
        for index in other.indices {
            append(bytes: other.pathBytes(at: index))
        }
    }

    /// Whether every full chunk this list shares with `other`, at the same place, is the same buffer: what a copy of a
    /// list that was then appended to keeps (for tests: appending copies no full chunk).
    func sharesFullChunks(with other: TrackList) -> Bool {
        let shared = Swift.min(chunks.count, other.chunks.count)
        return (0..<shared).allSatisfy { index in
            guard chunks[index].ends.count == Self.pathsPerChunk else { return true }
            let mine = chunks[index].bytes.withUnsafeBufferPointer { $0.baseAddress }
            let theirs = other.chunks[index].bytes.withUnsafeBufferPointer { $0.baseAddress }
            return mine == theirs
        }
    }

    /// Adds one path's bytes at the end, in the last chunk or a new one.
    private mutating func append(bytes: some Collection<UInt8>) {
        if chunks.last.map({ $0.ends.count == Self.pathsPerChunk }) ?? true {
            var chunk = Chunk()
            chunk.ends.reserveCapacity(Self.pathsPerChunk)
            chunks.append(chunk)
        }
        let last = chunks.count - 1
        // In place when this list is the chunk's only holder; otherwise this one chunk is copied, once.
        chunks[last].bytes.append(contentsOf: bytes)
        chunks[last].ends.append(Self.offset(chunks[last].bytes.count))
        pathCount += 1
        if chunks[last].ends.count == Self.pathsPerChunk {
            // A full chunk never grows again: give back what the array's doubling reserved beyond its bytes.
            chunks[last].bytes = Self.exactCopy(of: chunks[last].bytes)
        }
    }

    /// `bytes` in a buffer of exactly their size.
    private static func exactCopy(of bytes: [UInt8]) -> [UInt8] {
        guard bytes.capacity > bytes.count else { return bytes }
        return [UInt8](unsafeUninitializedCapacity: bytes.count) { buffer, initialized in
            initialized = buffer.initialize(fromContentsOf: bytes)
        }
    }

    /// The list as the state file and the control protocol hold it: an array of paths (TrackPath's own form each).
    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        while !container.isAtEnd {
            append(try container.decode(TrackPath.self))
        }
    }

    /// Writes the list as an array of paths (see `init(from:)`).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        for path in self {
            try container.encode(path)
        }
    }

    /// `count` as an end offset; a chunk of 4 GiB of path bytes is a bug, not a queue.
    private static func offset(_ count: Int) -> UInt32 {
        guard let offset = UInt32(exactly: count) else {
            preconditionFailure("a track list's chunk holds less than 4 GiB of paths")
        }
        return offset
    }
}
