// libFuzzer target for what session clients and playlists hand Earshot as names: an MPRIS OpenUri string
// (`URIParts`, `TrackPath.percentDecodedBytes`), a path's `file://` form (`TrackPath.fileURI`) and an M3U or PLS
// playlist (`M3UReader`). Not a SwiftPM target: scripts/fuzz compiles it together with Sources/TrackPaths.
//
// Besides "never crash", it checks four properties on every input:
// - URIParts reads a text given as a String and as its UTF-8 bytes alike (OpenUri gives the one, playlists the other);
// - any path (the input after a `/`) survives its own file:// URI: ASCII, scheme `file`, no host, the same bytes;
// - a playlist read in two chunks, split anywhere, gives the entries it gives read whole;
// - no entry is empty or holds a NUL, and there are no more entries than lines.

/// libFuzzer's entry point: reads `data` as a URI, as a path and as a playlist.
@_cdecl("LLVMFuzzerTestOneInput")
public func uriPlaylistFuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: data == nil ? 0 : size))
    checkURI(bytes)
    checkRoundTrip(bytes)
    checkPlaylist(bytes)
    return 0
}

/// The input as an OpenUri argument: the String and the byte readings agree.
private func checkURI(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    let fromText = URIParts(text)
    let fromBytes = URIParts(bytes: text.utf8)
    require((fromText == nil) == (fromBytes == nil), "URIParts(String) and URIParts(bytes:) disagree on acceptance")
    guard let fromText, let fromBytes else { return }
    require(fromText.scheme == fromBytes.scheme && fromText.host == fromBytes.host
        && fromText.percentEncodedPathBytes == fromBytes.percentEncodedPathBytes, "the two readings differ")
    // A URI's path as URIParts leaves it always decodes: a `%` that starts no escape was made `%25`.
    require(TrackPath.percentDecodedBytes(fromText.percentEncodedPath) != nil, "an accepted path does not decode")
    // The raw bytes (not UTF-8 perhaps, as a playlist line) must not crash either.
    if let raw = URIParts(bytes: bytes) { _ = TrackPath.percentDecodedBytes(bytes: raw.percentEncodedPathBytes) }
}

/// The input as a file name under `/`: its file:// URI names it again.
private func checkRoundTrip(_ bytes: [UInt8]) {
    guard let path = TrackPath(bytes: [UInt8(ascii: "/")] + bytes) else { return }
    let uri = path.fileURI
    require(uri.utf8.allSatisfy { $0 < 0x80 }, "a file:// URI that is not ASCII")
    guard let parts = URIParts(uri) else { fatalError("a path's own file:// URI is refused") }
    require(parts.scheme == "file" && parts.host == "", "a path's file:// URI names scheme or host wrongly")
    require(TrackPath.percentDecodedBytes(parts.percentEncodedPath) == path.bytes,
            "a path does not survive its own file:// URI")
}

/// The input as a playlist of each format, read whole and in two chunks split where its first byte says.
private func checkPlaylist(_ bytes: [UInt8]) {
    for format in PlaylistFormat.allCases { checkPlaylist(bytes, format) }
}

private func checkPlaylist(_ bytes: [UInt8], _ format: PlaylistFormat) {
    let whole = M3UReader.entries(in: bytes, format: format)
    let split = bytes.isEmpty ? 0 : Int(bytes[0]) * bytes.count / 256
    var reader = M3UReader(format: format)
    var chunked: [M3UEntry] = []
    reader.feed(Array(bytes[..<split])) { chunked.append($0) }
    reader.feed(Array(bytes[split...])) { chunked.append($0) }
    reader.finish { chunked.append($0) }
    require(chunked == whole, "a playlist read in two chunks gives other entries than read whole")
    let lines = bytes.count(where: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }) + 1
    require(whole.count <= lines, "more entries than lines")
    for case .path(let path) in whole {
        require(!path.bytes.isEmpty && !path.bytes.contains(0), "an entry that is empty or holds a NUL")
    }
}

/// Stops the process with `message` when `condition` is false (fatalError keeps its message in -O builds).
private func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
