// Row 39: what a live stream's fetch end is in the rules' terms (`Player.loss(of:)`). Only a 404 or a 410 says the
// mount is gone (the stream's end, after a clean close); any other refusal, a proxy's 502 or 503 while its origin
// restarts first of all, is a failure of the network, waited out with the backoff.
@testable import EarshotService
import EarshotCore
import AudioPipeline
import NetworkStream
import Testing

@Suite("Row 39: which fetch ends say the mount is gone")
struct LiveLossKindTests {
    @Test("404 and 410 are the mount gone; 500, 502, 503 and a page are the network's failures")
    func onlyGoneStatusesEndTheStream() {
        func loss(_ end: StreamEnd) -> LiveStreamLoss { Player.loss(of: LiveConnectionEnd(end)) }
        #expect(loss(.refused(.httpStatus(404))) == .mountGone)
        #expect(loss(.refused(.httpStatus(410))) == .mountGone)
        for status in [500, 502, 503] {
            #expect(loss(.refused(.httpStatus(status))) == .networkFailed(.refused))
        }
        #expect(loss(.refused(.notAudio)) == .networkFailed(.refused))
        #expect(loss(.serverClosed) == .closedByServer)
        // A plain web server's clean close of a response with no length: its own kind, which the rules end at once.
        #expect(loss(.plainResponseClosed) == .plainResponseClosed)
    }
}
