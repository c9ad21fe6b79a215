// LoudnessMeter: EBU R128 loudness (libebur128) of a library track, decoded by Earshot's own decoders exactly as it
// plays, for the ReplayGain of files whose tags carry none. The gain is ReplayGain 2's: -18 LUFS minus the
// integrated loudness; the peak is the highest sample (as ReplayGain's tags give it). Runs on the library's thread
// (SCHED_IDLE); nothing is ever written into the files. A mono file (decoded as two identical channels) is measured
// as its one channel counted twice, libebur128's dual mono: it plays on both speakers (docs/replaygain.md, "Mono").
import AudioPipeline
import CEbur128
import TrackPaths

/// One track's loudness measurement, kept open so that an album's can be computed from its tracks'.
final class LoudnessMeter {
    /// ReplayGain 2's reference loudness, in LUFS.
    static let referenceLUFS = -18.0

    /// libebur128's state (freed with the meter).
    private var state: UnsafeMutablePointer<ebur128_state>?
    /// The highest sample's magnitude, 1.0 being full scale.
    private(set) var peak = 0.0

    /// Frames decoded at a time.
    private static let chunkFrames = 8192

    /// Measures the track at `path`; nil when it cannot be decoded or measured. `cancelled` is asked between chunks
    /// (a long file gives way to a scan or a stop).
    init?(path: TrackPath, cancelled: () -> Bool) {
        guard let decoder = try? AudioFileKind.openDecoder(path: path) else { return nil }
        var format = decoder.format
        // A histogram keeps the memory fixed whatever the track's length (at 0.1 LU resolution, far inside 0.5 LU).
        let mode = Int32(EBUR128_MODE_I.rawValue | EBUR128_MODE_SAMPLE_PEAK.rawValue | EBUR128_MODE_HISTOGRAM.rawValue)
        var mono = decoder.isMono
        guard let created = ebur128_init(mono ? 1 : UInt32(format.channels), UInt(format.sampleRate), mode),
              Self.mapChannels(created, mono: mono) else { return nil }
        state = created
        var buffer = [Int16](repeating: 0, count: Self.chunkFrames * max(format.channels, 2))
        var decoded = 0
        while true {
            guard !cancelled() else { return nil }
            let step: DecodeStep
            do {
                step = try buffer.withUnsafeMutableBufferPointer { try decoder.decode(into: $0) }
            } catch {
                // A file that fails part-way is measured on what decoded, as it would play that far.
                break
            }
            switch step {
            case .frames(let frames):
                // A mono file's copy is dropped: its first channel is moved to the front, in order, which reads
                // every sample before a write reaches it.
                if mono { for index in 0..<frames { buffer[index] = buffer[2 * index] } }
                let added = buffer.withUnsafeBufferPointer { ebur128_add_frames_short(created, $0.baseAddress, frames) }
                guard added == Int32(EBUR128_SUCCESS.rawValue) else { return nil }
                decoded += frames
            case .formatChanged(let next):
                // A change in the number of channels resets the channel map.
                mono = decoder.isMono
                guard ebur128_change_parameters(created, mono ? 1 : UInt32(next.channels), UInt(next.sampleRate))
                    != Int32(EBUR128_ERROR_NOMEM.rawValue), Self.mapChannels(created, mono: mono) else { return nil }
                format = next
            case .finished:
                guard decoded > 0 else { return nil }
                for channel in 0..<(mono ? 1 : format.channels) {
                    var channelPeak = 0.0
                    if ebur128_sample_peak(created, UInt32(channel), &channelPeak) == Int32(EBUR128_SUCCESS.rawValue) {
                        peak = max(peak, channelPeak)
                    }
                }
                return
            }
        }
        guard decoded > 0 else { return nil }
    }

    /// Sets libebur128's channel map for a mono file: its one channel counted twice (dual mono), which is the one
    /// channel played on both speakers. Stereo keeps libebur128's default map (left, right).
    private static func mapChannels(_ state: UnsafeMutablePointer<ebur128_state>, mono: Bool) -> Bool {
        !mono || ebur128_set_channel(state, 0, Int32(EBUR128_DUAL_MONO.rawValue)) == Int32(EBUR128_SUCCESS.rawValue)
    }

    deinit {
        // ebur128_destroy reads through the state it is given: a meter whose file did not open has none.
        if state != nil { ebur128_destroy(&state) }
    }

    /// The integrated loudness in LUFS; nil for silence (libebur128 gives -infinity below its gate).
    var loudness: Double? {
        var value = 0.0
        guard let state, ebur128_loudness_global(state, &value) == Int32(EBUR128_SUCCESS.rawValue),
              value.isFinite else { return nil }
        return value
    }

    /// The integrated loudness of `meters` together (an album), in LUFS; nil for silence.
    static func loudness(of meters: [LoudnessMeter]) -> Double? {
        var states: [UnsafeMutablePointer<ebur128_state>?] = meters.map(\.state)
        var value = 0.0
        let result = states.withUnsafeMutableBufferPointer {
            ebur128_loudness_global_multiple($0.baseAddress, $0.count, &value)
        }
        return result == Int32(EBUR128_SUCCESS.rawValue) && value.isFinite ? value : nil
    }

    /// The ReplayGain gain that brings `loudness` to the reference, nil past ReplayGain's limits (silence, noise).
    static func gain(for loudness: Double?) -> Double? {
        guard let loudness else { return nil }
        let gain = referenceLUFS - loudness
        return abs(gain) <= ReplayGainTags.gainLimitDb ? gain : nil
    }
}

/// One file's EBU R128 loudness as the library measures it, for `earshot decode --loudness` (scripts/bench sets it
/// beside a reference analyser).
public enum TrackLoudness {
    /// The integrated loudness in LUFS (nil for silence) and the highest sample of the file at `path`; nil when it
    /// does not decode.
    public static func measure(_ path: TrackPath) -> (lufs: Double?, peak: Double)? {
        guard let meter = LoudnessMeter(path: path, cancelled: { false }) else { return nil }
        return (meter.loudness, meter.peak)
    }
}
