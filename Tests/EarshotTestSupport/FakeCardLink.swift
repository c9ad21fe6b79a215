// How FakeCard's commands reach the fake sound card and its replies come back (see FakeCard.swift's banner): the
// PipeWire helper's standard input and output, or PulseAudio's command line protocol on a Unix socket.

import Foundation
import Glibc

/// The line to a fake sound card: write one command a line, read everything said back so far.
final class FakeCardLink: @unchecked Sendable {
    // Unchecked Sendable: `received` and `closed` are only touched under `lock`; the rest is immutable.

    private enum Kind {
        /// The PipeWire helper, and the write end of the FIFO it reads.
        case helper(ChildProcess, FileHandle)
        /// A connection to PulseAudio's command line, and the index of the module-cli-protocol-unix serving it.
        case commandLine(descriptor: Int32, module: String)
    }

    private let kind: Kind
    private let lock = NSLock()
    private var received: [UInt8] = []
    private var closed = false

    private init(_ kind: Kind) {
        self.kind = kind
    }

    /// Starts the PipeWire helper at `path` making a card of `kind`, its standard input a FIFO this process keeps open.
    static func helper(_ path: String, _ kind: String) throws -> FakeCardLink {
        let fifo = ProcessRunner.outputDirectory.appendingPathComponent("fakecard-\(UUID().uuidString).in")
        guard mkfifo(fifo.path, 0o600) == 0 else {
            throw ToolkitError("cannot make the fake card's FIFO: \(String(cString: strerror(errno)))")
        }
        // Opened for reading and writing, so that neither this open nor the child's blocks, and the child sees the
        // end of its input only when this process closes it (or exits).
        let descriptor = open(fifo.path, O_RDWR)
        guard descriptor >= 0 else {
            throw ToolkitError("cannot open the fake card's FIFO: \(String(cString: strerror(errno)))")
        }
        let input = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        return FakeCardLink(.helper(try ChildProcess(path, [kind], standardInput: fifo), input))
    }

    /// Loads module-cli-protocol-unix on a socket of its own in the server's runtime folder and connects to it.
    static func commandLine() throws -> FakeCardLink {
        guard let runtime = TestEnvironment.runtimeDirectory else {
            throw ToolkitError("XDG_RUNTIME_DIR is not set: run scripts/test")
        }
        let socketPath = "\(runtime)/fakecard-\(UUID().uuidString.prefix(8)).cli"
        let module = try ServerControl.pactl(["load-module", "module-cli-protocol-unix", "socket=\(socketPath)"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let descriptor: Int32
        do {
            descriptor = try UnixSocket.connect(path: socketPath)
        } catch {
            _ = try? ServerControl.pactl(["unload-module", module])
            throw ToolkitError("cannot reach PulseAudio's command line: \(error)")
        }
        // Read without blocking: `output()` takes what has arrived.
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        return FakeCardLink(.commandLine(descriptor: descriptor, module: module))
    }

    /// Whether the other end is still there (the helper running; the connection open).
    var isRunning: Bool {
        switch kind {
        case .helper(let process, _): return process.isRunning
        case .commandLine: return lock.withLock { !closed }
        }
    }

    /// Sends one line.
    func write(_ line: String) throws {
        let bytes = Array("\(line)\n".utf8)
        switch kind {
        case .helper(_, let input):
            try input.write(contentsOf: bytes)
        case .commandLine(let descriptor, _):
            try lock.withLock {
                guard !closed else { throw ToolkitError("the fake card's command line is closed") }
                var offset = 0
                while offset < bytes.count {
                    let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
                    if written < 0 && (errno == EAGAIN || errno == EINTR) { continue }
                    guard written > 0 else {
                        let reason = String(cString: strerror(errno))
                        throw ToolkitError("writing to the fake card's command line: \(reason)")
                    }
                    offset += written
                }
            }
        }
    }

    /// Everything the card's driver has said so far (the helper's standard output; the command line's replies).
    func output() -> String {
        switch kind {
        case .helper(let process, _):
            return process.standardOutput()
        case .commandLine(let descriptor, _):
            return lock.withLock {
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !closed {
                    let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                    if count > 0 {
                        received += buffer[..<count]
                    } else {
                        // 0: the server closed the connection; otherwise nothing more for now (EAGAIN) or an error.
                        if count == 0 || (errno != EAGAIN && errno != EINTR) { closed = true }
                        if count < 0 && errno == EINTR { continue }
                        break
                    }
                }
                return String(decoding: received, as: UTF8.self)
            }
        }
    }

    /// What went wrong on the driver's side: the helper's standard error (the command line says it in its output).
    func diagnostics() -> String {
        if case .helper(let process, _) = kind { return process.standardError() }
        return ""
    }

    /// Ends the link: the helper's input closed and, `abruptly` or if it lingers, the helper killed (SIGKILL); the
    /// command line's connection closed and its module unloaded.
    func close(abruptly: Bool) {
        switch kind {
        case .helper(let process, let input):
            try? input.close()
            if abruptly || !process.waitForExit(timeout: .seconds(3)) {
                process.kill()
                _ = process.waitForExit(timeout: .seconds(5))
            }
        case .commandLine(let descriptor, let module):
            let wasOpen = lock.withLock { () -> Bool in
                defer { closed = true }
                return !closed
            }
            if wasOpen { Glibc.close(descriptor) }
            _ = try? ServerControl.pactl(["unload-module", module])
        }
    }
}
