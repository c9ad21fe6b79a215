// The executor's fade and duck arithmetic (VolumeEdges): ramps of the right length, from where they are.
@testable import EarshotService
import Testing

@Suite("Fade and duck gains")
struct VolumeEdgesTests {
    /// Steps `edges` until it rests, returning how many steps it took.
    private func settle(_ edges: inout VolumeEdges) -> Int {
        var steps = 0
        while edges.isRamping && steps < 1_000 {
            _ = edges.step()
            steps += 1
        }
        return steps
    }

    @Test("a fade-out reaches silence in fadeMs, and a fade-in returns in the same time")
    func fadeLength() {
        var edges = VolumeEdges(fadeMilliseconds: 50, duckGain: 0.25, duckRampMilliseconds: 80)
        edges.fadeOut()
        #expect(settle(&edges) == 50 / VolumeEdges.stepMilliseconds)
        #expect(edges.isFadedOut && edges.gain == 0)
        edges.fadeIn()
        #expect(settle(&edges) == 10)
        #expect(edges.gain == 1)
    }

    @Test("a resume during a fade-out turns round from where it is")
    func turnRound() {
        var edges = VolumeEdges(fadeMilliseconds: 50, duckGain: 0.25, duckRampMilliseconds: 80)
        edges.fadeOut()
        for _ in 0..<4 { _ = edges.step() }
        #expect(abs(edges.gain - 0.6) < 1e-9)
        edges.fadeIn()
        #expect(settle(&edges) == 4)
    }

    @Test("fadeMs 0: no fade at all, a resume starts at full level")
    func noFade() {
        var edges = VolumeEdges(fadeMilliseconds: 0, duckGain: 0.25, duckRampMilliseconds: 80)
        edges.fadeOut()
        edges.silenceForFadeIn()
        #expect(!edges.isRamping && edges.gain == 1)
    }

    @Test("a duck ramps to its level over its ramp and multiplies with a fade")
    func duck() {
        var edges = VolumeEdges(fadeMilliseconds: 50, duckGain: 0.25, duckRampMilliseconds: 80)
        edges.setDucked(true)
        #expect(settle(&edges) == 16)
        #expect(abs(edges.gain - 0.25) < 1e-9)
        edges.silenceForFadeIn()
        edges.fadeIn()
        _ = settle(&edges)
        #expect(abs(edges.gain - 0.25) < 1e-9)
        edges.setDucked(false)
        #expect(settle(&edges) == 16)
        #expect(edges.gain == 1)
    }
}
