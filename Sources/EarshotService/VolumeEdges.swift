// The executor's arithmetic for fades and ducking (see EarshotCore/Edges.swift for which pauses fade and rule 20):
// two gains under the user's volume, each ramping in small steps, as a value with no I/O.
//
// Why the server's volume and not the write callback: the stream queues `targetLatencyMilliseconds` of audio in the
// server (1000 ms by default, chosen for CPU and wake-ups), so a gain applied to the frames being written is heard
// that long after: a pause would fade a second late, a duck would start a second after the screen reader. The
// server applies its volume to what it plays now (PulseAudio rewinds its sink for a volume change; PipeWire sets it
// for its next cycle), so the ramp is heard as it is sent. It is sent in steps of `stepMilliseconds`: the server
// takes a change at most once per cycle (21 ms on PipeWire's defaults), so finer steps would add messages, not
// smoothness.

/// A fade gain and a duck gain (linear amplitudes, 0...1), each moving toward its target by one step at a time.
struct VolumeEdges: Equatable, Sendable {
    /// The interval between two steps of a ramp.
    static let stepMilliseconds = 5

    /// How long a fade lasts (0: none); configuration `fadeMs`.
    let fadeMilliseconds: Int
    /// The amplitude while ducked (rule 20); configuration `duckLevel`, in decibels there.
    let duckGain: Double
    /// How long the duck's ramp lasts, each way.
    let duckRampMilliseconds: Int

    /// The fade's gain now: 1 while playing, 0 once faded out.
    private(set) var fade: Double = 1
    /// Where the fade is going.
    private(set) var fadeTarget: Double = 1
    /// The duck's gain now: 1 when not ducked, `duckGain` when ducked.
    private(set) var duck: Double = 1
    /// Where the duck is going.
    private(set) var duckTarget: Double = 1

    /// Gains at rest (1, not ducked) for the given settings.
    init(fadeMilliseconds: Int, duckGain: Double, duckRampMilliseconds: Int) {
        self.fadeMilliseconds = max(fadeMilliseconds, 0)
        self.duckGain = min(max(duckGain, 0), 1)
        self.duckRampMilliseconds = max(duckRampMilliseconds, 0)
    }

    /// The gain the server should apply under the user's volume now.
    var gain: Double { fade * duck }

    /// Whether fades are configured at all.
    var fades: Bool { fadeMilliseconds > 0 }

    /// Whether a ramp is under way (a step is due).
    var isRamping: Bool { fade != fadeTarget || duck != duckTarget }

    /// Whether the fade has reached silence.
    var isFadedOut: Bool { fade == 0 }

    /// Starts the fade toward silence from where it is.
    mutating func fadeOut() {
        fadeTarget = fades ? 0 : 1
        if !fades { fade = 1 }
    }

    /// Starts the fade toward full level from where it is (a resume during a fade-out turns it round).
    mutating func fadeIn() {
        fadeTarget = 1
        if !fades { fade = 1 }
    }

    /// Drops the fade to silence at once, so that a resume rises from it (a resume from a stream that was corked).
    mutating func silenceForFadeIn() {
        guard fades else { return }
        fade = 0
        fadeTarget = 0
    }

    /// Returns the fade to full level at once: the stream is corked, nothing is heard.
    mutating func restoreAfterCork() {
        fade = 1
        fadeTarget = 1
    }

    /// Stops the fade where it is (a cork at once: the stream is quiet anyway).
    mutating func holdFade() {
        fadeTarget = fade
    }

    /// Starts the duck's ramp down (true) or back up (false).
    mutating func setDucked(_ ducked: Bool) {
        duckTarget = ducked ? duckGain : 1
        if duckRampMilliseconds == 0 { duck = duckTarget }
    }

    /// One step of every ramp under way; returns whether anything moved.
    mutating func step() -> Bool {
        let before = (fade, duck)
        fade = Self.move(fade, toward: fadeTarget, by: Self.stepSize(span: 1, milliseconds: fadeMilliseconds))
        duck = Self.move(duck, toward: duckTarget, by: Self.stepSize(span: 1 - duckGain,
                                                                       milliseconds: duckRampMilliseconds))
        return before != (fade, duck)
    }

    /// The change per step for a ramp over `span` lasting `milliseconds` (the whole span at once for none).
    private static func stepSize(span: Double, milliseconds: Int) -> Double {
        guard milliseconds > 0 else { return 1 }
        let steps = max(Double(milliseconds) / Double(stepMilliseconds), 1)
        return max(span, 0.0001) / steps
    }

    /// `value` moved `size` toward `target`, never past it.
    private static func move(_ value: Double, toward target: Double, by size: Double) -> Double {
        // Within a rounding error of the target is the target: ten steps of 0.1 reach 1.
        let slack = size * 1e-6
        if value < target { return value + size >= target - slack ? target : value + size }
        if value > target { return value - size <= target + slack ? target : value - size }
        return value
    }
}
