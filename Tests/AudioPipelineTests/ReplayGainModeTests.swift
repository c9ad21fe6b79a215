// Which gain each mode applies, the preamp and the fallback, the peak's limit, and the scaling of samples.
import Testing
@testable import AudioPipeline

@Suite("ReplayGain modes")
struct ReplayGainModeTests {
    let tagged = ReplayGainTags(trackGain: -6, trackPeak: 0.5, albumGain: -3, albumPeak: 0.9)

    func close(_ left: Double, _ right: Double) -> Bool { abs(left - right) < 1e-9 }

    @Test("off leaves the samples; track and album choose their gain; auto follows the shuffle")
    func modes() {
        let off = ReplayGainSettings(mode: .off).gain(for: tagged, shuffled: false)
        #expect(off == AppliedGain(decibels: 0, linear: 1, source: .off, limitedByPeak: false))
        let track = ReplayGainSettings(mode: .track).gain(for: tagged, shuffled: false)
        #expect(track.source == .trackTag && track.decibels == -6 && close(track.linear, 0.501187233627272))
        let album = ReplayGainSettings(mode: .album).gain(for: tagged, shuffled: true)
        #expect(album.source == .albumTag && album.decibels == -3)
        #expect(ReplayGainSettings(mode: .auto).gain(for: tagged, shuffled: false).source == .albumTag)
        #expect(ReplayGainSettings(mode: .auto).gain(for: tagged, shuffled: true).source == .trackTag)
    }

    @Test("the preamp adds to a tagged gain; an untagged file gets the fallback, without the preamp")
    func preampAndFallback() {
        let settings = ReplayGainSettings(mode: .track, preampDb: 2, fallbackDb: -4)
        #expect(settings.gain(for: tagged, shuffled: false).decibels == -4)
        let untagged = settings.gain(for: ReplayGainTags(), shuffled: false)
        #expect(untagged.source == .fallback && untagged.decibels == -4)
        #expect(close(untagged.linear, AppliedGain.linearFactor(-4)))
        // Only an album gain: track mode uses it rather than the fallback; and the other way round.
        #expect(settings.gain(for: ReplayGainTags(albumGain: -1), shuffled: false).source == .albumTag)
        let onlyTrack = ReplayGainSettings(mode: .album).gain(for: ReplayGainTags(trackGain: -2), shuffled: false)
        #expect(onlyTrack.source == .trackTag && onlyTrack.decibels == -2)
    }

    @Test("a gain that would lift the peak past full scale is limited to 1/peak")
    func peakLimit() {
        // A track peaking at -1 dBFS with +12 dB asked for: lifted only by 1 dB.
        let peak = AppliedGain.linearFactor(-1)
        let gain = ReplayGainSettings(mode: .track).gain(for: ReplayGainTags(trackGain: 12, trackPeak: peak),
                                                         shuffled: false)
        #expect(gain.limitedByPeak && close(gain.linear * peak, 1))
        let fits = ReplayGainSettings(mode: .track).gain(for: ReplayGainTags(trackGain: 0.5, trackPeak: 0.5),
                                                         shuffled: false)
        #expect(!fits.limitedByPeak && close(fits.linear, AppliedGain.linearFactor(0.5)))
    }

    @Test("samples are scaled, rounded to the nearest, and saturate at the 16-bit range")
    func scaling() {
        var samples: [Int16] = [0, 1000, -1000, 32767, -32768, 3]
        let half = AppliedGain(decibels: -6.02, linear: 0.5, source: .trackTag, limitedByPeak: false)
        samples.withUnsafeMutableBufferPointer { half.apply(to: $0) }
        #expect(samples == [0, 500, -500, 16384, -16384, 2])
        var loud: [Int16] = [20000, -20000, 100]
        let double = AppliedGain(decibels: 6.02, linear: 2, source: .fallback, limitedByPeak: false)
        loud.withUnsafeMutableBufferPointer { double.apply(to: $0) }
        #expect(loud == [32767, -32768, 200])
    }
}
