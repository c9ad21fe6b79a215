// A station on the loopback for the live-stream tests (RadioLiveTests) and the randomized checker's `add-station`:
// it sends an MP3 in real time after a burst, as Icecast sends on connecting.
import EarshotTestSupport
import Foundation

/// A loopback internet radio station.
enum LoopbackStation {
    /// The MP3 bit rate of the fixtures' files, in bytes a second: the rate the station sends at.
    static let bytesPerSecond = Fixtures.mp3BitRate * 1000 / 8

    /// A loopback station sending `mp3` at `bytesPerSecond` by the clock, after a burst of `burstSeconds` of it, and
    /// closing at its end (or when the client goes); `looping`, it starts `mp3` again at its end and never closes.
    static func start(_ mp3: [UInt8], burstSeconds: Int = 3, looping: Bool = false) throws -> LoopbackHTTPServer {
        try LoopbackHTTPServer { connection in
            connection.send("HTTP/1.0 200 OK\r\nContent-Type: audio/mpeg\r\nicy-name: Loopback Live\r\n\r\n")
            let burst = min(burstSeconds * bytesPerSecond, mp3.count)
            guard connection.send(Array(mp3[..<burst])) else { return }
            // A tenth of a second at a time, each due at its own moment: late sends catch up, so the rate holds.
            let start = ContinuousClock.now, piece = bytesPerSecond / 10
            var offset = burst, number = 0
            while offset < mp3.count || looping {
                if offset >= mp3.count { offset = 0 }
                number += 1
                let due = start + .milliseconds(100 * number)
                if due > .now { Thread.sleep(forTimeInterval: (due - .now).seconds) }
                guard connection.send(Array(mp3[offset..<min(offset + piece, mp3.count)])) else { return }
                offset += piece
            }
        }
    }
}
