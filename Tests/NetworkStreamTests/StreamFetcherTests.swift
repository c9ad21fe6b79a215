// The fetch thread against loopback servers the tests run: real sockets, real libcurl. Each case is one kind of
// answer a radio server can give: an ICY stream with changing titles, redirects, a page, a 404, a playlist, a
// server that says nothing, a gigabyte claim, an untrusted certificate.
import EarshotTestSupport
import Foundation
import SystemSupport
import Testing
@testable import NetworkStream

/// Collects a fetch's notices.
final class NoticeLog: Sendable {
    private let notices = LockedValue([StreamNotice]())

    func record(_ notice: StreamNotice) { notices.withLock { $0.append(notice) } }

    var all: [StreamNotice] { notices.withLock { $0 } }

    var end: StreamEnd? {
        all.lazy.compactMap { if case .ended(let end) = $0 { end } else { nil } }.first
    }

    var titles: [String] { all.compactMap { if case .title(let title) = $0 { title } else { nil } } }
}

@Suite("Stream fetcher", .serialized)
struct StreamFetcherTests {
    /// Fetches `url` to its end (at most `seconds`), returning the notices and the buffer.
    private func fetch(
        _ url: String, limits: StreamLimits = StreamLimits(silenceSeconds: 2), capacity: Int = 1 << 20,
        seconds: Int = 20
    ) throws -> (NoticeLog, StreamByteBuffer) {
        let log = NoticeLog()
        let buffer = StreamByteBuffer(capacity: capacity)
        let fetcher = StreamFetcher(url: url, buffer: buffer, limits: limits) { log.record($0) }
        fetcher.start()
        let ended = eventually(timeout: .seconds(seconds)) { log.end != nil }
        if !ended { fetcher.stop() }
        try #require(ended, "the fetch did not end within \(seconds) s: \(log.all)")
        return (log, buffer)
    }

    private func drain(_ buffer: StreamByteBuffer) -> [UInt8] {
        var out: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 65536)
        while case .bytes(let count) = scratch.withUnsafeMutableBytes({ buffer.read(into: $0) }), count > 0 {
            out += scratch[..<count]
        }
        return out
    }

    /// An ICY body: `blocks` runs of `interval` audio bytes (a counting pattern), each followed by a title block.
    private static func icyBody(interval: Int, titles: [String]) -> (body: [UInt8], audio: [UInt8]) {
        var body: [UInt8] = []
        var audio: [UInt8] = []
        for (index, title) in titles.enumerated() {
            let part = (0..<interval).map { UInt8(truncatingIfNeeded: index * interval + $0) }
            audio += part
            body += part
            let text = Array("StreamTitle='\(title)';".utf8)
            let blocks = (text.count + 15) / 16
            body += [UInt8(blocks)] + text + [UInt8](repeating: 0, count: blocks * 16 - text.count)
        }
        return (body, audio)
    }

    @Test("an ICY stream: audio without its metadata, titles as they change, the station's name, then the end")
    func icyStream() throws {
        let (body, audio) = Self.icyBody(interval: 1000, titles: ["A - One", "A - One", "B - Two", "C - Drei é"])
        let server = try LoopbackHTTPServer { connection in
            connection.send("HTTP/1.0 200 OK\r\nContent-Type: audio/mpeg\r\nicy-metaint: 1000\r\n"
                + "icy-name: Loopback FM\r\n\r\n")
            // In pieces that cut blocks anywhere, as a network does.
            for start in stride(from: 0, to: body.count, by: 333) {
                connection.send(Array(body[start..<min(start + 333, body.count)]))
            }
        }
        defer { server.stop() }
        let (log, buffer) = try fetch(server.baseURL + "/stream")
        // The pattern's first bytes (0, 1, 2, ...) show no format; the head's type says MP3.
        #expect(log.all.first == .started(.mp3, stationName: "Loopback FM"))
        #expect(log.titles == ["A - One", "B - Two", "C - Drei é"])
        #expect(log.end == .serverClosed)
        #expect(drain(buffer) == audio)
        #expect(server.requests.first?.lowercased().contains("icy-metadata: 1") == true)
    }

    @Test("a file sent whole at its announced length is `completed`; with none, from a plain server, its own kind")
    func fileSentWhole() throws {
        let audio = (0..<4096).map { UInt8($0 % 251) }
        let server = try LoopbackHTTPServer { connection in
            // `/plain`: HTTP/1.0's way, the body ended by the close, and no ICY header (no station's server).
            let length = connection.path == "/plain" ? "" : "Content-Length: \(audio.count)\r\n"
            connection.send("HTTP/1.1 200 OK\r\nContent-Type: audio/mpeg\r\n\(length)Connection: close\r\n\r\n")
            connection.send(audio)
        }
        defer { server.stop() }
        let (log, buffer) = try fetch(server.baseURL + "/file.mp3")
        #expect(log.all.first == .started(.mp3, stationName: nil))
        #expect(log.end == .completed)
        #expect(drain(buffer) == audio)
        let (plain, plainBuffer) = try fetch(server.baseURL + "/plain")
        #expect(plain.all == [.started(.mp3, stationName: nil), .ended(.plainResponseClosed)])
        #expect(drain(plainBuffer) == audio)
    }

    @Test("redirects are followed up to the limit; a loop is a clear failure")
    func redirects() throws {
        let server = try LoopbackHTTPServer { connection in
            switch connection.path {
            case "/one": connection.send("HTTP/1.1 302 Found\r\nLocation: /two\r\nContent-Length: 0\r\n\r\n")
            case "/two": connection.send("HTTP/1.1 301 Moved\r\nLocation: /audio\r\nContent-Length: 0\r\n\r\n")
            case "/audio":
                connection.send("HTTP/1.1 200 OK\r\nContent-Type: audio/ogg\r\nConnection: close\r\n\r\n")
                connection.send("OggS0123456789abcdef")
            default: connection.send("HTTP/1.1 302 Found\r\nLocation: /loop\r\nContent-Length: 0\r\n\r\n")
            }
        }
        defer { server.stop() }
        let (followed, buffer) = try fetch(server.baseURL + "/one")
        #expect(followed.all == [.started(.ogg, stationName: nil), .ended(.plainResponseClosed)])
        #expect(drain(buffer) == Array("OggS0123456789abcdef".utf8))
        let limits = StreamLimits(silenceSeconds: 2, maximumRedirects: 3)
        let (looped, _) = try fetch(server.baseURL + "/loop", limits: limits)
        #expect(looped.all == [.ended(.failed(.tooManyRedirects))])
    }

    @Test("a page, a 404, a playlist, a gigabyte ICY claim and a huge head are refused, and nothing is buffered")
    func refusals() throws {
        let page = "<!DOCTYPE html><html><body>Not a stream</body></html>"
        let server = try LoopbackHTTPServer { connection in
            switch connection.path {
            case "/page": connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + page)
            case "/missing": connection.send("HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\n\r\n" + page)
            case "/empty404": connection.send("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            case "/list": connection.send("HTTP/1.1 200 OK\r\nContent-Type: audio/x-mpegurl\r\n\r\nhttp://x/\n")
            case "/disguised": connection.send("HTTP/1.1 200 OK\r\nContent-Type: audio/mpeg\r\n\r\n" + page)
            case "/claim":
                connection.send("ICY 200 OK\r\nContent-Type: audio/mpeg\r\nicy-metaint: 1073741824\r\n\r\n")
                connection.send([UInt8](repeating: 0xFF, count: 4096))
            default:
                connection.send("HTTP/1.1 200 OK\r\n")
                for index in 0..<300 { connection.send("X-Filler-\(index): y\r\n") }
                connection.send("\r\n")
            }
        }
        defer { server.stop() }
        let expected: [(String, StreamRefusal)] = [
            ("/page", .notAudio), ("/missing", .httpStatus(404)), ("/empty404", .httpStatus(404)),
            ("/list", .playlist), ("/disguised", .notAudio), ("/claim", .metadataIntervalOutOfRange),
            ("/huge", .headTooLarge),
        ]
        for (path, refusal) in expected {
            let (log, buffer) = try fetch(server.baseURL + path)
            #expect(log.all == [.ended(.refused(refusal))], "\(path)")
            #expect(buffer.counts.received == 0, "\(path)")
        }
    }

    @Test("a server that accepts and says nothing, and one that stops mid-stream, fail after the silence limit")
    func stalls() throws {
        let server = try LoopbackHTTPServer { connection in
            if connection.path == "/midway" {
                connection.send("HTTP/1.0 200 OK\r\nContent-Type: audio/mpeg\r\n\r\n")
                connection.send([UInt8](repeating: 0xFF, count: 5000))
            }
            connection.holdSilently()
        }
        defer { server.stop() }
        let (silent, _) = try fetch(server.baseURL + "/silent")
        #expect(silent.all == [.ended(.failed(.timedOut))])
        let (midway, buffer) = try fetch(server.baseURL + "/midway")
        #expect(midway.all == [.started(.mp3, stationName: nil), .ended(.failed(.timedOut))])
        #expect(buffer.counts.received == 5000)
    }

    @Test("stop ends an endless stream, whose buffer stays within its capacity")
    func stopping() throws {
        let server = try LoopbackHTTPServer { connection in
            connection.send("HTTP/1.0 200 OK\r\nContent-Type: audio/mpeg\r\n\r\n")
            let chunk = [UInt8](repeating: 0xFF, count: 1024)
            while connection.send(chunk) { usleep(1000) }
        }
        defer { server.stop() }
        let log = NoticeLog()
        let buffer = StreamByteBuffer(capacity: 1 << 16)
        let fetcher = StreamFetcher(url: server.baseURL + "/", buffer: buffer) { log.record($0) }
        fetcher.start()
        #expect(eventually { buffer.counts.received > 100_000 })
        // The buffer stayed within its capacity while far more arrived.
        #expect(buffer.counts.stored <= buffer.capacity && buffer.counts.dropped > 0)
        fetcher.stop()
        #expect(eventually { log.end == .stopped })
    }

    @Test("a refused connection, another scheme, and a certificate the system does not trust are clear failures")
    func networkFailures() throws {
        let closed = try LoopbackHTTPServer { _ in }
        let port = closed.port
        closed.stop()
        withExtendedLifetime(closed) {}
        let (refused, _) = try fetch("http://127.0.0.1:\(port)/")
        #expect(refused.all == [.ended(.failed(.connectionRefused))])
        let (ftp, _) = try fetch("ftp://127.0.0.1:\(port)/")
        #expect(ftp.all == [.ended(.failed(.unsupportedScheme))])
        let (file, _) = try fetch("file:///etc/passwd")
        #expect(file.all == [.ended(.failed(.unsupportedScheme))])

        // A TLS server with a self-signed certificate: the system's certificates do not vouch for it.
        let openssl = try ProcessRunner.requireTool("openssl", package: "openssl")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("earshot-tls-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("key.pem").path
        let certificate = directory.appendingPathComponent("cert.pem").path
        try ProcessRunner.runChecked(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                                               "-out", certificate, "-subj", "/CN=127.0.0.1", "-days", "1"])
        let free = try LoopbackHTTPServer { _ in }
        let tlsPort = free.port
        free.stop()
        withExtendedLifetime(free) {}
        let tls = try ChildProcess(openssl, ["s_server", "-accept", "127.0.0.1:\(tlsPort)", "-cert", certificate,
                                             "-key", key, "-www", "-quiet"])
        defer { tls.kill() }
        #expect(eventually { (try? UnixSocketProbe.canConnect(port: tlsPort)) == true })
        let (untrusted, _) = try fetch("https://127.0.0.1:\(tlsPort)/")
        #expect(untrusted.all == [.ended(.failed(.certificateNotTrusted))])
    }
}

/// Whether something listens on a loopback TCP port.
enum UnixSocketProbe {
    static func canConnect(port: Int) throws -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
