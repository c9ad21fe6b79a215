// A tiny HTTP server on the loopback for the tests of internet radio: it answers each request with what the test
// scripts (a page, a 404, a redirect, an endless ICY stream, nothing at all), so the fetcher meets real sockets and
// real libcurl. Each connection is served on a thread of its own; bounded by the tests' own requests.
import Glibc
import SystemSupport

/// A listening socket on 127.0.0.1 with a free port, answering requests with the test's handler.
public final class LoopbackHTTPServer: @unchecked Sendable {
    /// One accepted connection, as the handler sees it.
    public final class Connection: @unchecked Sendable {
        /// The request's path (from its request line).
        public let path: String
        /// The request's head, as sent.
        public let requestHead: String
        /// Whether an earlier request asked for the same path: a station whose show has ended answers it 404, as
        /// Icecast does once a mount's source has left (the player asks again after a clean close, RULES row 39).
        public let isRepeated: Bool
        fileprivate let descriptor: Int32
        fileprivate let server: LoopbackHTTPServer

        fileprivate init(path: String, requestHead: String, isRepeated: Bool, descriptor: Int32,
                         server: LoopbackHTTPServer) {
            self.path = path
            self.requestHead = requestHead
            self.isRepeated = isRepeated
            self.descriptor = descriptor
            self.server = server
        }

        /// Answers 404, with no body: a mount nobody feeds.
        public func sendNotFound() {
            send("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        }

        /// Sends `bytes` whole; false once the client has gone or the server stopped.
        @discardableResult
        public func send(_ bytes: [UInt8]) -> Bool {
            guard !server.isStopped else { return false }
            var sent = 0
            while sent < bytes.count {
                let count = bytes[sent...].withUnsafeBytes {
                    Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if count <= 0 { return false }
                sent += count
            }
            return true
        }

        /// Sends `text` as UTF-8.
        @discardableResult
        public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

        /// Holds the connection open, sending nothing, until the client closes it or the server stops.
        public func holdSilently() {
            var byte: UInt8 = 0
            while !server.isStopped {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                if poll(&poller, 1, 100) > 0 && recv(descriptor, &byte, 1, 0) <= 0 { return }
            }
        }
    }

    /// The port it listens on.
    public let port: Int
    private let listener: Int32
    private let handler: @Sendable (Connection) -> Void
    private let state = LockedValue((stopped: false, requests: [String]()))

    /// Starts listening on 127.0.0.1 and serving: each request's connection goes to `handler` on its own thread,
    /// and is closed when the handler returns.
    public init(handler: @escaping @Sendable (Connection) -> Void) throws {
        self.handler = handler
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw ToolkitError("socket(): \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        guard bound == 0, named == 0, listen(listener, 16) == 0 else {
            close(listener)
            throw ToolkitError("cannot listen on the loopback: \(String(cString: strerror(errno)))")
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        SystemThread.start(named: "test-http") { [self] in acceptLoop() }
    }

    /// The base URL, `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// The request heads received so far, in order.
    public var requests: [String] { state.withLock { $0.requests } }

    /// Whether `stop()` was called.
    public var isStopped: Bool { state.withLock { $0.stopped } }

    /// Stops accepting; handlers' sends fail and silent holds return.
    public func stop() {
        let wasStopped = state.withLock { state in
            defer { state.stopped = true }
            return state.stopped
        }
        if !wasStopped { shutdown(listener, Int32(SHUT_RDWR)) }
    }

    deinit {
        stop()
        close(listener)
    }

    private func acceptLoop() {
        while !isStopped {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            SystemThread.start(named: "test-http-conn") { [self] in serve(client) }
        }
    }

    private func serve(_ descriptor: Int32) {
        defer { close(descriptor) }
        var head: [UInt8] = []
        var byte: UInt8 = 0
        // The request's head, up to its empty line (bounded: a test's requests are small).
        while head.count < 16384 && !head.reversed().starts(with: [10, 13, 10, 13]) {
            guard recv(descriptor, &byte, 1, 0) == 1 else { return }
            head.append(byte)
        }
        let text = String(decoding: head, as: UTF8.self)
        let requestLine = text.split(separator: "\r\n").first ?? ""
        let fields = requestLine.split(separator: " ")
        let path = fields.count >= 2 ? String(fields[1]) : "/"
        let repeated = state.withLock { state -> Bool in
            defer { state.requests.append(text) }
            return state.requests.contains { $0.split(separator: "\r\n").first == requestLine }
        }
        handler(Connection(path: path, requestHead: text, isRepeated: repeated, descriptor: descriptor, server: self))
    }
}
