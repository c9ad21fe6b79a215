// The link's mechanics without a server: generations that tell a stale notice or attempt's outcome apart. When to
// connect and what waits for the connection are the rules' (EarshotCoreTests' ServerLinkRulesTests).
import Testing

@testable import EarshotService

struct OutputLinkTests {
    @Test("losing the server moves the generation on, so an attempt begun before is stale")
    func lossMakesEarlierAttemptsStale() {
        var link = OutputLink()
        let before = link.connectionGeneration
        link.lost()
        #expect(before != link.connectionGeneration)
        #expect(!link.isCurrent(connectionGeneration: link.connectionGeneration), "no connection is current")
    }

    @Test("without a stream, no stream generation is current, and each new one differs")
    func streamGenerations() {
        var link = OutputLink()
        let first = link.newStreamGeneration()
        #expect(!link.isCurrent(streamGeneration: first), "a generation without its stream is not current")
        let closed = link.closeStream()
        #expect(!closed, "nothing to close")
        link.openFailed()
        let later = link.newStreamGeneration()
        #expect(later > first)
        #expect(link.underruns == 0 && link.serverUnderflows == 0)
    }
}
