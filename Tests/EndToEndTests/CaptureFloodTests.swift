// A flood of microphone captures (issue 20, bad input and faults): 200 capture streams from 20 clients, opened and
// closed in a burst of about three seconds while the music plays, most of them shorter than the 400 ms a capture must
// run to count as a call, and one client's kept open long enough to be a call. The owner must answer `status`
// throughout, pause for the one call, and end where it should: playing, with no interruption left.
#if canImport(Glibc)
import Glibc
#endif
import CPulse
import EarshotTestSupport
import Foundation
import SystemSupport
import Testing

@Suite("A flood of microphone captures", .serialized)
struct CaptureFloodTests {
    @Test("200 captures from 20 clients in a burst: one call paused the music, and it ends playing with none left")
    func captureFlood() async throws {
        try await CallScenario.run(recording: false) { stage in
            let microphone = try CallScenario.microphone()
            let clients = try (0..<20).map { try CaptureBurst(name: "earshot-e2e-flood-\($0)") }
            defer { clients.forEach { $0.close() } }
            let answered = LockedValue<[Duration]>([])
            let stop = StopFlag()
            // Status is asked all through the burst: each answer's round trip is kept.
            let poller = Task.detached {
                while !stop.isRaised {
                    let started = ContinuousClock.now
                    _ = try? stage.player.status()
                    let took = ContinuousClock.now - started
                    answered.withLock { $0.append(took) }
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            // Ten rounds: every client opens one capture and closes it 50-150 ms later; in round five the last client
            // keeps its capture for 1.5 s, a call.
            var sawCall = false
            for round in 0..<10 {
                for client in clients { try client.open(source: microphone) }
                let held = round == 5
                try await Task.sleep(for: .milliseconds(50 + 10 * round))
                for (number, client) in clients.enumerated() where !(held && number == clients.count - 1) {
                    client.closeAll()
                }
                if held {
                    try await Task.sleep(for: .milliseconds(1_500))
                    let status = try stage.player.status()
                    sawCall = status.playback == "paused"
                        && status.activeInterruptions.contains { $0.hasPrefix(CallScenario.microphonePrefix) }
                    clients[clients.count - 1].closeAll()
                }
            }
            let opened = clients.map(\.openedCount).reduce(0, +)
            #expect(opened == 200, "captures opened: \(opened)")
            #expect(sawCall, "the capture held for 1.5 s paused the music as a call")
            // The last call ended: the music resumes, and nothing is left active.
            let settled = try await stage.player.waitForStatus("playing again with no interruption left") {
                $0.playback == "playing" && $0.activeInterruptions.isEmpty
            }
            stop.raise()
            _ = await poller.value
            let slowest = answered.withLock { $0.max() } ?? .zero
            print("[measure] capture flood: \(answered.withLock { $0.count }) status answers, slowest \(slowest), "
                + "slowest handling \(settled.slowestHandlingMicros) us")
            // Each answer is a round trip of a new `earshot status` process, whose own start a loaded machine
            // stretches (1.18 s once at a load of 20): the bound is that the owner answers throughout, not how fast.
            // How long the owner itself took is `slowestHandlingMicros`, reported above.
            #expect(slowest < .seconds(5), "status took \(slowest) during the flood")
            #expect(settled.slowestHandlingMicros < HandlingTimeTests.handlingBound, "\(settled)")
        }
    }
}

/// A pulse client that opens capture streams on a source and closes them on request (the flood's clients).
final class CaptureBurst: PulseTestClient, @unchecked Sendable {
    /// The open streams; touched with the lock held.
    private var streams: [OpaquePointer] = []
    /// How many streams this client has opened in all.
    private(set) var openedCount = 0

    /// Opens one ordinary recording of `source` (not a level meter): what a calling application makes.
    func open(source: String) throws {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        var specification = pa_sample_spec(format: PA_SAMPLE_S16LE, rate: 48_000, channels: 1)
        guard let context, let stream = pa_stream_new(context, "Flood capture", &specification, nil) else {
            throw ToolkitError("a flood capture could not be made")
        }
        pa_stream_set_read_callback(stream, { stream, _, _ in
            guard let stream else { return }
            var data: UnsafeRawPointer?
            var length = 0
            if pa_stream_peek(stream, &data, &length) == 0, length > 0 { pa_stream_drop(stream) }
        }, nil)
        guard pa_stream_connect_record(stream, source, nil, pa_stream_flags_t(rawValue: 0)) >= 0 else {
            pa_stream_unref(stream)
            throw ToolkitError("a flood capture could not be connected")
        }
        streams.append(stream)
        openedCount += 1
    }

    /// Closes every open stream, each once the server has answered its creation: pipewire-pulse 0.3.65 keeps a capture
    /// that was disconnected before it was ready running on the server for good (seen with this flood: the streams were
    /// still listed, and rightly counted as calls), which no real application leaves behind on purpose.
    func closeAll() {
        try? waitForServer("the flood's captures are created") { [self] in
            let pending = streams.contains {
                pa_stream_get_state($0) == PA_STREAM_CREATING || pa_stream_get_state($0) == PA_STREAM_UNCONNECTED
            }
            return pending ? nil : true
        }
        pa_threaded_mainloop_lock(mainloop)
        for stream in streams {
            pa_stream_set_read_callback(stream, nil, nil)
            pa_stream_disconnect(stream)
            pa_stream_unref(stream)
        }
        streams = []
        pa_threaded_mainloop_unlock(mainloop)
    }

    /// Closes the streams and the connection.
    override func close() {
        closeAll()
        super.close()
    }
}
