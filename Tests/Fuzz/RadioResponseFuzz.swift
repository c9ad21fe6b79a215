// libFuzzer target for what a radio server sends: a response's head, line by line as libcurl hands it over
// (`ResponseHead`, its verdict and its ICY interval), and a body with ICY metadata blocks interleaved
// (`ICYDemuxer`, `ICYMetadata`). Not a SwiftPM target: scripts/fuzz compiles it together with
// Sources/NetworkStream/StreamResponse.swift and ICYDemuxer.swift (pure, standard library only).
//
// The input's first byte chooses the ICY interval (1 to 256, small so blocks come often) and where the body is
// split; the rest is read as a head up to its first empty line, and as the body after it. Besides "never crash", it
// checks on every input:
// - the body split in two anywhere gives the audio and blocks it gives whole;
// - the audio and the blocks together are never more bytes than the body, and no block exceeds the format's 4080;
// - an interval the head accepts is within 1...maximumMetadataInterval; a verdict of success has a 2xx status;
// - a title is never longer than the limit and holds no control characters.

/// libFuzzer's entry point.
@_cdecl("LLVMFuzzerTestOneInput")
public func radioResponseFuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: data == nil ? 0 : size))
    guard let control = bytes.first else { return 0 }
    let rest = Array(bytes.dropFirst())
    checkHead(rest)
    checkBody(rest, interval: Int(control) + 1, split: Int(control) * rest.count / 256)
    return 0
}

private func checkHead(_ bytes: [UInt8]) {
    var head = ResponseHead()
    for line in bytes.split(separator: 10, omittingEmptySubsequences: false) {
        head.feed(line: Array(line) + [10])
        if head.isComplete { break }
    }
    if case .success(let interval?) = head.metadataInterval {
        require(interval >= 1 && interval <= ResponseHead.maximumMetadataInterval, "an interval out of range accepted")
    }
    if case .success = head.verdict(firstBytes: Array(bytes.prefix(16))) {
        require((200...299).contains(head.status), "a verdict of success for a status that is not 2xx")
    }
    if let name = head.stationName {
        require(name.count <= ResponseHead.maximumNameCharacters, "a station name over the limit")
    }
}

private func demux(_ parts: [[UInt8]], interval: Int) -> (audio: [UInt8], blocks: [[UInt8]]) {
    var demuxer = ICYDemuxer(interval: interval)
    var audio: [UInt8] = []
    var blocks: [[UInt8]] = []
    for part in parts { demuxer.feed(part, audio: { audio += $0 }, metadata: { blocks.append($0) }) }
    return (audio, blocks)
}

private func checkBody(_ body: [UInt8], interval: Int, split: Int) {
    let whole = demux([body], interval: interval)
    let pieces = demux([Array(body[..<split]), Array(body[split...])], interval: interval)
    require(whole.audio == pieces.audio && whole.blocks == pieces.blocks, "a split body reads otherwise")
    let total = whole.audio.count + whole.blocks.reduce(0) { $0 + $1.count }
    require(total <= body.count, "more bytes out than in")
    for block in whole.blocks {
        require(block.count <= ICYDemuxer.maximumBlockBytes, "a block over the format's size")
        if let title = ICYMetadata(block: block).streamTitle {
            require(title.count <= ICYMetadata.maximumTitleCharacters, "a title over the limit")
            require(!title.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "a control character")
        }
    }
}

private func require(_ condition: Bool, _ message: String) {
    if !condition { fatalError(message) }
}
