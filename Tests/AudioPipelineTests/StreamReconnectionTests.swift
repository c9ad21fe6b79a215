// A station's stream decoders across a reconnection (issue 40, RULES row 38): the fetch loses its connection, another
// fetch takes the same live buffer up, and the server starts the stream over (a new Ogg stream with its headers, a new
// FLAC stream header, MP3 frames from wherever it is). A loopback server the test runs sends the first part of a
// file on the first request and the whole of another on the next; the decoder must give the first part's frames, then
// the other file's, with no failure: what was received before the loss and everything the new connection sent.
import EarshotTestSupport
import Foundation
import SystemSupport
import Testing
@testable import AudioPipeline
import TrackPaths

@Suite("Stream decoders across a reconnection")
struct StreamReconnectionTests {
    /// What a station served: its content type, and the bytes each request gets.
    private struct Station {
        let contentType: String
        let first: [UInt8]
        let later: [UInt8]
    }

    /// Decodes a live stream of `station` to its end: the first lost connection is reconnected when `reconnecting`,
    /// the next one (or the first, when not) ends the stream, as the rules would for a mount gone. Returns the frames.
    private func decodeLive(_ station: Station, reconnecting: Bool) async throws -> Int {
        let server = try LoopbackHTTPServer { connection in
            connection.send("HTTP/1.0 200 OK\r\nContent-Type: \(station.contentType)\r\n\r\n")
            connection.send(connection.isRepeated ? station.later : station.first)
        }
        defer { server.stop() }
        let (notices, continuation) = AsyncStream<LiveNetworkNotice>.makeStream()
        // Reported on the fetch thread with its lock held: the reconnection is asked for from the test's task.
        let link = LiveBufferLink(network: { _, notice in continuation.yield(notice) })
        let path = TrackPath(server.baseURL + "/station")
        // On a thread of its own, as the decode worker's: its waits for the network must not hold a task's thread.
        let decoding = Task {
            try await withCheckedThrowingContinuation { (result: CheckedContinuation<Int, any Error>) in
                SystemThread.start(named: "test-decode") {
                    result.resume(with: Result {
                        let decoder = try AudioFileKind.openDecoder(path: path, outputRate: nil,
                                                                    cancellation: .never, live: (link, 0))
                        return try TestAudio.decodeAll(decoder).count / 2
                    })
                }
            }
        }
        var losses = 0
        for await notice in notices {
            guard case .lost = notice else { continue }
            losses += 1
            if reconnecting && losses == 1 {
                #expect(link.reconnect(index: 0) == .started)
            } else {
                link.end(index: 0)
                break
            }
        }
        return try await decoding.value
    }

    /// What the tests' station sends in `format`: the first connection's stream cut where the network would
    /// (anywhere: here in the middle of an Ogg page or a FLAC frame), the whole stream the server starts over with
    /// after its restart (another encoding, another Ogg serial number), and their content type.
    private static func material(_ format: Fixtures.Format) throws -> (cut: [UInt8], file: [UInt8], type: String) {
        let before = try [UInt8](Data(contentsOf: Fixtures.tone(format, frequency: 660, seconds: 4)))
        let file = try [UInt8](Data(contentsOf: Fixtures.tone(format, frequency: 880, seconds: 4)))
        let type = switch format {
        case .mp3: "audio/mpeg"
        case .flac: "audio/flac"
        case .vorbis, .opus: "audio/ogg"
        }
        return (Array(before.prefix(before.count * 3 / 5 + 101)), file, type)
    }

    @Test("the frames before the loss, then the whole new stream", arguments: [Fixtures.Format.vorbis, .opus, .flac, .mp3])
    func decodesAcrossReconnection(format: Fixtures.Format) async throws {
        let (cut, file, type) = try Self.material(format)
        let beforeLoss = try await decodeLive(Station(contentType: type, first: cut, later: []), reconnecting: false)
        let whole = try await decodeLive(Station(contentType: type, first: file, later: []), reconnecting: false)
        let across = try await decodeLive(Station(contentType: type, first: cut, later: file), reconnecting: true)
        print("[reconnection] \(format): \(beforeLoss) frames before the loss, \(whole) in the whole stream, "
              + "\(across) across the reconnection")
        #expect(beforeLoss > 0 && beforeLoss < whole, "\(beforeLoss) of \(whole)")
        #expect(across == beforeLoss + whole, "\(across) frames, not \(beforeLoss) + \(whole)")
    }

    @Test("a reconnection lost again inside its headers, then ended: the frames before the loss, and a clean end",
          arguments: [Fixtures.Format.vorbis, .opus, .flac, .mp3])
    func reconnectionLostInItsHeaders(format: Fixtures.Format) async throws {
        let (cut, file, type) = try Self.material(format)
        let beforeLoss = try await decodeLive(Station(contentType: type, first: cut, later: []), reconnecting: false)
        // The new connection sends less than its stream's headers and is lost; the rules then end the station (its
        // attempts ran out, or its mount went): the station's end, not a broken stream.
        let across = try await decodeLive(Station(contentType: type, first: cut, later: Array(file.prefix(300))),
                                          reconnecting: true)
        #expect(across == beforeLoss, "\(across) frames, not the \(beforeLoss) before the loss")
    }
}
