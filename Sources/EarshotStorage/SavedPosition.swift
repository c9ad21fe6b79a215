// `position.json`: where the listener is in the saved queue, saved often and cheaply (see StateStore.swift).
//
// The record is one line of compact JSON, keys sorted, padded with spaces to a fixed `SavedPosition.fileBytes` and
// ending in a newline, so that each save overwrites the whole file in place with one `pwrite` at offset 0 and never
// leaves a longer earlier record's tail behind (JSON allows trailing white space). In place rather than a new file
// renamed over the old one: a rename makes a new inode each time, a new page for the kernel to write back (ext4 even
// starts that write at once, `auto_da_alloc`), while one page rewritten in place is written back once per writeback
// period however often it changes. The record fits in one page, so a kill never tears it; a power cut between
// writebacks may leave an older record, or a damaged one, which the loader then ignores for `state.json`'s position.
import EarshotService

extension SavedPosition {
    /// The length of the file, every record padded to it: comfortably more than the longest record (five integers of
    /// at most 20 characters and their keys, about 180 bytes), and one disk sector.
    static let fileBytes = 256

    /// The file's content: the record as compact JSON with sorted keys, spaces up to `fileBytes - 1`, a newline.
    func fileBytes() -> [UInt8] {
        var out = Array(
            (#"{"positionMilliseconds":\#(positionMilliseconds),"queueId":\#(queueId),"trackIndex":\#(trackIndex),"#
                + #""version":\#(version),"volumePercent":\#(volumePercent)}"#).utf8)
        // Five integers and their keys cannot reach the padded length (see `fileBytes`).
        precondition(out.count < Self.fileBytes, "a position record longer than its file")
        out += repeatElement(UInt8(ascii: " "), count: Self.fileBytes - 1 - out.count)
        out.append(0x0A)
        return out
    }

    /// The record in the file's `bytes`, checked for types and values; the reason names a field, never a value.
    init(fileBytes bytes: [UInt8]) throws(PersistedState.Unreadable) {
        if bytes.isEmpty { throw PersistedState.Unreadable(reason: "empty file") }
        let object = try PersistedState.object(in: bytes)
        self.init(
            queueId: try PersistedState.integer("queueId", in: object),
            trackIndex: try PersistedState.integer("trackIndex", in: object),
            positionMilliseconds: try PersistedState.integer("positionMilliseconds", in: object),
            volumePercent: try PersistedState.integer("volumePercent", in: object),
            version: try PersistedState.integer("version", in: object))
        if version != Self.currentVersion { throw PersistedState.Unreadable(reason: "unsupported format version") }
    }
}
