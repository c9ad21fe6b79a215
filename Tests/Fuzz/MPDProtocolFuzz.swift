// libFuzzer target for MPD's protocol as Earshot parses it: `MPDLineBuffer`, `MPDFraming`, `MPDRequest.parse`,
// `MPDCommand.parse` and `MPDBatch.reply`. Not a SwiftPM target: scripts/fuzz compiles it with Sources/MPDProtocol.
//
// The input is what a client might send on one connection, cut into reads at the first byte's rhythm. Besides "never
// crash", it checks that every line the buffer gives is within the limit, that every request parsed is given back by
// parsing its own written line, and that every reply ends in exactly one `OK` or one `ACK` line.

/// libFuzzer's entry point.
@_cdecl("LLVMFuzzerTestOneInput")
public func mpdProtocolFuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: data == nil ? 0 : size))
    guard let first = bytes.first else { return 0 }
    let readSize = Int(first % 61) + 1
    var buffer = MPDLineBuffer(limit: 256)
    var framing = MPDFraming()
    var offset = 1
    while offset < bytes.count {
        let end = min(offset + readSize, bytes.count)
        buffer.append(bytes[offset..<end])
        offset = end
        while let line = buffer.next() {
            guard case .line(let text) = line else { return 0 }
            require(text.count <= 256, "a line of \(text.count) bytes past the limit")
            require(!text.contains(0x0A), "a line break inside a line")
            switch framing.take(text) {
            case .close: return 0
            case .nothing, .endIdle: break
            case .run(let batch):
                let reply = batch.reply(running: echo)
                check(reply: reply, batch: batch)
                // Every other batch leaves the connection idling, as `idle` would.
                if batch.entries.count % 2 == 1 { framing.idleStarted() }
            }
        }
    }
    return 0
}

/// Answers every request by checking that its written line parses back to it; `fail` is refused with MPD's error.
private func echo(_ request: MPDRequest) -> Result<String, MPDError> {
    let again = MPDRequest.parse(Array(request.line.utf8))
    require(again == .success(request), "\(request) written as \(request.line) parsed as \(again)")
    // The typed commands: whatever the arguments, a command or one line of refusal.
    if case .failure(let error) = MPDCommand.parse(request) {
        require(error.line.filter { $0 == "\n" }.count == 1 && error.line.hasSuffix("\n"), "\(error.line)")
    }
    if request.name == "fail" { return .failure(MPDError(.noExist, command: "fail", "No such song\nreally")) }
    return .success("arguments: \(request.arguments.count)\n")
}

/// Checks that `reply` ends with one `OK` or one `ACK` line, and that only an OK list holds `list_OK` lines.
private func check(reply: String, batch: MPDBatch) {
    let lines = reply.split(separator: "\n", omittingEmptySubsequences: false)
    require(lines.last == "", "a reply without its final line break: \(reply)")
    let last = lines[lines.count - 2]
    require(last == "OK" || last.hasPrefix("ACK ["), "a reply ending in \(last)")
    let acks = lines.filter { $0.hasPrefix("ACK [") }.count
    require(acks <= 1 && (acks == 0 || last.hasPrefix("ACK [")), "\(acks) ACK lines, not last: \(reply)")
    if !batch.listOK { require(!lines.contains("list_OK"), "list_OK outside an OK list") }
}

/// Stops the process (a crash libFuzzer records) when `condition` fails.
private func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
