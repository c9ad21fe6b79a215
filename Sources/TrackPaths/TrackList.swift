// TrackList: the paths of a queue, stored as bytes once. Every path's bytes lie end to end in one buffer, and a
// second buffer says where each path ends. A queue of TrackPath values would cost one heap object per track (its
// byte array: a 32-byte header and the bytes, rounded up by malloc) plus a pointer in every array holding it; for
// 10 000 tracks of 40-byte paths that is about a megabyte, where this costs the bytes and 4 bytes a track (issue 14).
// A TrackPath is made only for the track asked for (the one opened, shown or saved).
//
// A value type with copy-on-write storage: the player, the decode thread and the last saved state share one copy
// until one of them changes its queue.

/// The paths of a queue in one contiguous byte buffer, with the end offset of each path.
public struct TrackList: RandomAccessCollection, Equatable, Sendable, ExpressibleByArrayLiteral, Codable {
    /// Every path's bytes, end to end (no separators: `ends` says where each path ends).
    private var bytes: [UInt8] = []
    /// The offset in `bytes` just past each path, in queue order. 32 bits: a queue holds less than 4 GiB of paths.
    private var ends: [UInt32] = []

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
    public var endIndex: Int { ends.count }

    /// The path at `index`, made from its bytes.
    public subscript(index: Int) -> TrackPath {
        TrackPath(validBytes: Array(pathBytes(at: index)))
    }

    /// The bytes of the path at `index`, without making a TrackPath of them (no allocation: a view of the buffer).
    public func pathBytes(at index: Int) -> ArraySlice<UInt8> {
        let start = index == 0 ? 0 : Int(ends[index - 1])
        return bytes[start..<Int(ends[index])]
    }

    /// Adds `path` at the end.
    public mutating func append(_ path: TrackPath) {
        bytes += path.bytes
        ends.append(Self.offset(bytes.count))
    }

    /// Adds `paths` at the end, in order. An empty list is sized for them exactly; one that grows again grows by the
    /// arrays' own doubling, so a queue added to in many batches is not copied at every batch.
    public mutating func append(contentsOf paths: some Collection<TrackPath>) {
        if ends.isEmpty {
            bytes.reserveCapacity(paths.reduce(0) { $0 + $1.bytes.count })
            ends.reserveCapacity(paths.count)
        }
        for path in paths {
            append(path)
        }
    }

    /// Adds the paths of `other` at the end, in order.
    public mutating func append(contentsOf other: TrackList) {
        let base = bytes.count
        bytes += other.bytes
        for end in other.ends {
            ends.append(Self.offset(base + Int(end)))
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

    /// `count` as an end offset; a list of 4 GiB of path bytes is a bug, not a queue.
    private static func offset(_ count: Int) -> UInt32 {
        guard let offset = UInt32(exactly: count) else {
            preconditionFailure("a track list holds less than 4 GiB of paths")
        }
        return offset
    }
}
