// libFuzzer target for the control protocol parser, `ControlRequest.parse`. Not a SwiftPM target:
// scripts/fuzz compiles it together with Sources/EarshotService/ControlProtocol.swift (and the EarshotJSON module).
//
// Besides "never crash", it checks one property: an accepted request survives its own JSON line (the line
// the command-line client sends), unless that line is longer than the service reads.
import Foundation

/// libFuzzer's entry point: parses `data` as one request line.
@_cdecl("LLVMFuzzerTestOneInput")
public func controlProtocolFuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let line = UnsafeBufferPointer(start: data, count: data == nil ? 0 : size)
    switch ControlRequest.parse(line) {
    case .failure(let error):
        // Building the message is part of the parser's contract (it is sent back to the client).
        require(!error.message.isEmpty, "a refusal without a reason")
    case .success(let request):
        let encoded = Array(request.jsonLine.utf8)
        guard encoded.count <= ControlRequest.maximumLineBytes else { break }
        guard case .success(let again) = ControlRequest.parse(encoded), again == request else {
            fatalError("an accepted request does not survive its own JSON line")
        }
    }
    return 0
}

/// Stops the process with `message` when `condition` is false (fatalError keeps its message in -O builds).
private func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
