// Capture streams seen and made from inside the test process, through libpulse itself (CPulse, as PulseOutput uses
// it): no command-line client shows a capture's cork state with its timing, and none opens a level meter.
//
// `CaptureWatch` subscribes to source-output events and asks for each stream's details as the event arrives, so the
// test knows to about a millisecond when the server announced a capture, when it started running (uncorked) and
// when it ended: the moments the call tests measure Earshot's cork and resume against.
//
// `LevelMeter` opens the stream a sound-settings panel opens to draw a microphone's level: a peak-detect recording
// (PA_STREAM_PEAK_DETECT, 25 values a second, as pavucontrol and GNOME's panel do). No CLI makes one: parec and
// pw-record record samples, and peak detection is a flag of the stream, so it is opened here.
//
// Threading: each client owns a threaded mainloop; libpulse runs every callback on its thread with the loop's lock
// held. The callbacks only append to a LockedValue, ask the server a question, or drop a meter's data. Methods take
// the lock, never on the loop's thread, and wait for the server by polling with the lock released.

import CPulse
import EarshotTestSupport
import Foundation
import Glibc
import SystemSupport

/// One report about a capture stream (a source output), as the server gave it to `CaptureWatch`.
struct CaptureMoment: Sendable, CustomStringConvertible {
    /// What the server said.
    enum Kind: String, Sendable { case appeared, changed, removed }
    /// What the server said.
    let kind: Kind
    /// The source output's index.
    let index: UInt32
    /// When the event reached the test process (monotonic, comparable with recordings).
    let instant: ContinuousClock.Instant
    /// The same moment on the wall clock (comparable with a page's `Date.now()`).
    let date: Date
    /// Whether the stream was corked, from the details asked for on this event (nil when they never came).
    var corked: Bool?
    /// The stream's `application.name`, from those details.
    var application: String?

    /// Kind, index, cork state and application, for messages.
    var description: String {
        "\(kind.rawValue) #\(index) corked=\(corked.map(String.init) ?? "?") \(application ?? "-")"
    }
}

/// The life of one capture stream: when it appeared, ran and ended, in the server's reports.
struct CaptureRun: Sendable, CustomStringConvertible {
    /// The source output's index.
    let index: UInt32
    /// Its `application.name`.
    let application: String?
    /// When the server announced it.
    let appeared: CaptureMoment
    /// Whether the first details read said it was corked.
    let startedCorked: Bool?
    /// The first report that found it running (uncorked), if any.
    let running: CaptureMoment?
    /// The first report after that which found it corked or removed, if any.
    let ended: CaptureMoment?
    /// Its removal, if it was removed.
    let removed: CaptureMoment?

    /// How long it existed (from its announcement to its removal), in seconds, if it was removed.
    var lifetime: Double? {
        (removed?.instant).map { ($0 - appeared.instant).seconds }
    }

    /// Its reports, short.
    var description: String {
        let span = lifetime.map { String(format: "%.0f ms", $0 * 1000) } ?? "open"
        return "#\(index) \(application ?? "-") corked at first: \(startedCorked.map(String.init) ?? "?"), "
            + "ran: \(running != nil), \(span)"
    }
}

/// A libpulse connection of the test process's own, named `name`.
class PulseTestClient: @unchecked Sendable {
    // Unchecked Sendable: `mainloop` never changes; `context` is set once in init before any callback can run, and
    // everything libpulse owns is touched with the mainloop lock held (callbacks hold it, methods take it).
    /// The threaded mainloop.
    let mainloop: OpaquePointer
    /// The connected context.
    private(set) var context: OpaquePointer?
    /// Whether `close()` stopped the mainloop.
    private var closed = false

    /// Starts a mainloop and connects to the private server (PULSE_SERVER) as `name`; throws unless ready in 10 s.
    init(name: String) throws {
        guard let loop = pa_threaded_mainloop_new() else { throw ToolkitError("pa_threaded_mainloop_new failed") }
        mainloop = loop
        guard pa_threaded_mainloop_start(loop) >= 0 else {
            pa_threaded_mainloop_free(loop)
            throw ToolkitError("pa_threaded_mainloop_start failed")
        }
        pa_threaded_mainloop_lock(loop)
        context = pa_context_new(pa_threaded_mainloop_get_api(loop), name)
        let started = context.map { pa_context_connect($0, nil, PA_CONTEXT_NOAUTOSPAWN, nil) } ?? -1
        pa_threaded_mainloop_unlock(loop)
        guard started >= 0 else {
            close()
            throw ToolkitError("pa_context_connect failed")
        }
        try waitForServer("the test's pulse client connects") { [self] in
            guard let context else { return nil }
            switch pa_context_get_state(context) {
            case PA_CONTEXT_READY: return true
            case PA_CONTEXT_FAILED, PA_CONTEXT_TERMINATED: return false
            default: return nil
            }
        }
    }

    deinit {
        close()
        pa_threaded_mainloop_free(mainloop)
    }

    /// Disconnects and stops the mainloop; safe to call twice. Not on the loop's thread.
    func close() {
        guard !closed else { return }
        pa_threaded_mainloop_lock(mainloop)
        if let context {
            pa_context_set_subscribe_callback(context, nil, nil)
            pa_context_disconnect(context)
            pa_context_unref(context)
            self.context = nil
        }
        pa_threaded_mainloop_unlock(mainloop)
        pa_threaded_mainloop_stop(mainloop)
        closed = true
    }

    /// Polls `check` with the lock held every 5 ms until it answers: true is success, false a failure; nil waits on.
    func waitForServer(_ description: String, timeout: Duration = .seconds(10), _ check: () -> Bool?) throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            pa_threaded_mainloop_lock(mainloop)
            let answer = check()
            pa_threaded_mainloop_unlock(mainloop)
            if let answer {
                guard answer else { throw ToolkitError("failed while waiting until \(description)") }
                return
            }
            usleep(5000)
        }
        throw ToolkitError("timed out after \(timeout) waiting until \(description)")
    }
}

/// Records every capture stream's appearance, cork changes and removal, with the moment each report arrived.
final class CaptureWatch: PulseTestClient, @unchecked Sendable {
    /// Every report so far, in order of arrival.
    let moments = LockedValue<[CaptureMoment]>([])

    /// A question about one source output, kept alive until libpulse's last answer to it.
    private final class Question {
        let watch: CaptureWatch
        let moment: Int
        init(watch: CaptureWatch, moment: Int) {
            self.watch = watch
            self.moment = moment
        }
    }

    /// Connects and subscribes to source-output events; returns once subscribed.
    init() throws {
        try super.init(name: "earshot-e2e-capture-watch")
        pa_threaded_mainloop_lock(mainloop)
        let operation: OpaquePointer? = context.flatMap { context in
            pa_context_set_subscribe_callback(context, { context, event, index, userdata in
                guard let context, let userdata else { return }
                Unmanaged<CaptureWatch>.fromOpaque(userdata).takeUnretainedValue()
                    .reported(context: context, event: event.rawValue, index: index)
            }, Unmanaged.passUnretained(self).toOpaque())
            return pa_context_subscribe(context, PA_SUBSCRIPTION_MASK_SOURCE_OUTPUT, nil, nil)
        }
        pa_threaded_mainloop_unlock(mainloop)
        guard let operation else { throw ToolkitError("pa_context_subscribe failed") }
        try waitForServer("the capture subscription is in place") {
            pa_operation_get_state(operation) == PA_OPERATION_RUNNING ? nil : true
        }
        pa_operation_unref(operation)
    }

    /// A source-output event (loop thread, lock held): note it, and ask for the stream's details.
    private func reported(context: OpaquePointer, event: UInt32, index: UInt32) {
        let type = event & PA_SUBSCRIPTION_EVENT_TYPE_MASK.rawValue
        let kind: CaptureMoment.Kind = type == PA_SUBSCRIPTION_EVENT_NEW.rawValue
            ? .appeared : type == PA_SUBSCRIPTION_EVENT_REMOVE.rawValue ? .removed : .changed
        let moment = CaptureMoment(kind: kind, index: index, instant: .now, date: Date())
        let number = moments.withLock {
            $0.append(moment)
            return $0.count - 1
        }
        guard kind != .removed else { return }
        let question = Unmanaged.passRetained(Question(watch: self, moment: number)).toOpaque()
        let operation = pa_context_get_source_output_info(context, index, { _, info, _, userdata in
            guard let userdata else { return }
            guard let info else {
                // The last answer (end of list, or an error): let the question go.
                Unmanaged<Question>.fromOpaque(userdata).release()
                return
            }
            let question = Unmanaged<Question>.fromOpaque(userdata).takeUnretainedValue()
            let corked = info.pointee.corked != 0
            let application = pa_proplist_gets(info.pointee.proplist, "application.name").map { String(cString: $0) }
            question.watch.moments.withLock {
                $0[question.moment].corked = corked
                $0[question.moment].application = application
            }
        }, question)
        if let operation { pa_operation_unref(operation) } else { Unmanaged<Question>.fromOpaque(question).release() }
    }

    /// The capture streams reported so far, each with its first running moment and its end.
    func runs() -> [CaptureRun] {
        let all = moments.withLock { $0 }
        var order: [UInt32] = []
        for moment in all where !order.contains(moment.index) { order.append(moment.index) }
        return order.compactMap { index in
            let reports = all.filter { $0.index == index }
            guard let first = reports.first else { return nil }
            let running = reports.firstIndex { $0.kind != .removed && $0.corked == false }
            let ended = running.flatMap { start in
                reports[(start + 1)...].first { $0.kind == .removed || $0.corked == true }
            }
            return CaptureRun(
                index: index, application: reports.lazy.compactMap(\.application).first, appeared: first,
                startedCorked: reports.first { $0.corked != nil }?.corked,
                running: running.map { reports[$0] }, ended: ended, removed: reports.last { $0.kind == .removed })
        }
    }

    /// The capture streams of `application` reported so far.
    func runs(of application: String) -> [CaptureRun] {
        runs().filter { $0.application == application }
    }

    /// Waits until a capture of `application` has run and ended (with `removed`: was removed, whether or not it
    /// was seen running: a capture of a few milliseconds may be gone before its details are read), and returns it.
    func waitForEndedRun(
        of application: String, removed: Bool = false, timeout: Duration = .seconds(15)
    ) async throws -> CaptureRun {
        var found: CaptureRun?
        do {
            try await waitUntil("a capture by \(application) ran and ended", timeout: timeout) {
                found = runs(of: application).first {
                    removed ? $0.removed != nil : $0.running != nil && $0.ended != nil
                }
                return found != nil
            }
        } catch {
            throw ToolkitError("\(error); reports: \(moments.withLock { $0 }.map(\.description))")
        }
        guard let found else { throw ToolkitError("no capture by \(application)") }
        return found
    }
}

/// A level meter on a source, as a sound-settings panel draws one: a peak-detect recording of 25 values a second.
final class LevelMeter: PulseTestClient, @unchecked Sendable {
    /// The meter's stream; touched with the lock held.
    private var stream: OpaquePointer?
    /// How many level values arrived (to prove the meter runs).
    let values = LockedValue(0)

    /// Connects as `application` and opens a peak-detect recording of `source` (the default source if nil); returns
    /// once the stream is ready.
    init(source: String? = nil, application: String = "Sound Settings") throws {
        try super.init(name: application)
        pa_threaded_mainloop_lock(mainloop)
        var specification = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: 25, channels: 1)
        stream = context.flatMap { pa_stream_new($0, "Peak detect", &specification, nil) }
        var connected: Int32 = -1
        if let stream {
            pa_stream_set_read_callback(stream, { stream, _, userdata in
                guard let stream, let userdata else { return }
                var data: UnsafeRawPointer?
                var length = 0
                guard pa_stream_peek(stream, &data, &length) == 0 else { return }
                if length > 0 { pa_stream_drop(stream) }
                Unmanaged<LevelMeter>.fromOpaque(userdata).takeUnretainedValue().values.withLock { $0 += 1 }
            }, Unmanaged.passUnretained(self).toOpaque())
            // What pavucontrol asks for: one float per fragment, never moved, peaks rather than samples.
            var attributes = pa_buffer_attr(
                maxlength: UInt32.max, tlength: 0, prebuf: 0, minreq: 0, fragsize: UInt32(MemoryLayout<Float>.size))
            let flags = PA_STREAM_DONT_MOVE.rawValue | PA_STREAM_PEAK_DETECT.rawValue
                | PA_STREAM_ADJUST_LATENCY.rawValue
            connected = pa_stream_connect_record(stream, source, &attributes, pa_stream_flags_t(rawValue: flags))
        }
        pa_threaded_mainloop_unlock(mainloop)
        guard connected >= 0 else { throw ToolkitError("the level meter's stream could not be opened") }
        try waitForServer("the level meter's stream is ready") { [self] in
            guard let stream else { return false }
            switch pa_stream_get_state(stream) {
            case PA_STREAM_READY: return true
            case PA_STREAM_FAILED, PA_STREAM_TERMINATED: return false
            default: return nil
            }
        }
    }

    /// Closes the meter's stream and the connection.
    override func close() {
        pa_threaded_mainloop_lock(mainloop)
        if let stream {
            pa_stream_set_read_callback(stream, nil, nil)
            pa_stream_disconnect(stream)
            pa_stream_unref(stream)
            self.stream = nil
        }
        pa_threaded_mainloop_unlock(mainloop)
        super.close()
    }
}
