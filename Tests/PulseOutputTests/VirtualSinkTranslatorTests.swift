// The device behind a virtual sink through the translator, with notice sequences shaped like the servers' (measured
// with a null sink `fx`, `module-loopback source=fx.monitor sink=headphones` and the headphones' module unloaded;
// see ServerEventTranslator's notes): PulseAudio 16.1 reports SINK REMOVE, then the loopback on the default sink;
// pipewire-pulse reports SINK REMOVE and nothing of the loopback.
import EarshotCore
import PulseOutput
import Testing

@Suite("The device behind a virtual sink")
struct VirtualSinkTranslatorTests {
    let headphones = SinkSnapshot(name: "headphones", index: 0, ownerModuleIndex: 1)
    let speakers = SinkSnapshot(name: "speakers", index: 1, ownerModuleIndex: 2)
    let fx = SinkSnapshot(name: "fx", index: 2, ownerModuleIndex: 6)
    /// fx's monitor, which the loopback records.
    let fxMonitor = SourceSnapshot(index: 3, cardIndex: nil, monitorOfSinkIndex: 2)
    /// The loopback's module.
    let loopbackModule: UInt32 = 7
    let now = Moment(milliseconds: 500)

    /// The loopback's playback stream, on `sink`.
    func loopback(on sink: UInt32, index: UInt32 = 0) -> SinkInputSnapshot {
        SinkInputSnapshot(index: index, sinkIndex: sink, mediaRole: nil, corked: false, muted: false, clientIndex: nil,
                          applicationName: nil, ownerModuleIndex: loopbackModule)
    }

    /// A translator with our stream on fx and the loopback carrying fx's monitor to the headphones, described in the
    /// order the player lists them.
    func onLoopback() -> JudgedTranslator {
        var translator = JudgedTranslator()
        #expect(translator.ourStreamIsOn(fx, sinkInputIndex: 10, at: now) == [])
        for sink in [headphones, speakers, fx] { #expect(translator.sinkChanged(sink) == []) }
        #expect(translator.sinkInputChanged(loopback(on: 0), at: now) == [])
        #expect(translator.sourceChanged(fxMonitor, at: now) == [])
        #expect(translator.sourceOutputChanged(
            SourceOutputSnapshot(index: 0, sourceIndex: 3, mediaRole: nil, ownerModuleIndex: loopbackModule),
            at: now) == [])
        #expect(translator.sinksBehindOurSink == [0])
        return translator
    }

    @Test("PulseAudio: the device's removal is the loss; the loopback's move to the speakers after it is nothing more")
    func unplugOnPulseAudio() {
        var translator = onLoopback()
        #expect(translator.sinkRemoved(0, at: now) == [.outputLost(.deviceRemoved)])
        #expect(translator.sourceRemoved(0, at: now) == [])
        #expect(translator.sinkInputChanged(loopback(on: 1), at: now) == [])
        #expect(translator.sinkInputChanged(loopback(on: 1), at: now) == [])
        // Now the speakers are behind fx, and watched.
        #expect(translator.sinksBehindOurSink == [1])
        #expect(translator.sinkRemoved(1, at: now) == [.outputLost(.deviceRemoved)])
    }

    @Test("pipewire-pulse: the device's removal is the loss, with nothing of the loopback after it")
    func unplugOnPipeWire() {
        // pipewire-pulse: a monitor has its sink's index, and sink and monitor go together.
        var translator = JudgedTranslator()
        let fx = SinkSnapshot(name: "fx", index: 66, ownerModuleIndex: 536_870_915)
        #expect(translator.ourStreamIsOn(fx, sinkInputIndex: 87, at: now) == [])
        #expect(translator.sinkChanged(SinkSnapshot(name: "headphones", index: 45, ownerModuleIndex: 536_870_913))
            == [])
        let monitor = SourceSnapshot(index: 66, cardIndex: nil, monitorOfSinkIndex: 66)
        #expect(translator.sourceChanged(monitor, at: now) == [])
        #expect(translator.sourceOutputChanged(
            SourceOutputSnapshot(index: 75, sourceIndex: 66, mediaRole: nil, ownerModuleIndex: 536_870_916),
            at: now) == [])
        #expect(translator.sinkInputChanged(
            SinkInputSnapshot(index: 74, sinkIndex: 45, mediaRole: nil, corked: false, muted: false, clientIndex: nil,
                              applicationName: nil, ownerModuleIndex: 536_870_916),
            at: now) == [])
        #expect(translator.sinksBehindOurSink == [45])
        #expect(translator.sinkRemoved(45, at: now) == [.outputLost(.deviceRemoved)])
        #expect(translator.sourceRemoved(45, at: now) == [])
    }

    @Test("A deliberate move of the loopback while the headphones still exist is a route change")
    func deliberateMove() {
        var translator = onLoopback()
        #expect(translator.sinkInputChanged(loopback(on: 1), at: now) == [.routeChanged])
        // PulseAudio sends the same change more than once.
        #expect(translator.sinkInputChanged(loopback(on: 1), at: now) == [])
        #expect(translator.sinksBehindOurSink == [1])
        // The headphones no longer carry our audio.
        #expect(translator.sinkRemoved(0, at: now) == [])
    }

    @Test("A carrier moved off a sink the translator never knew is a device removal")
    func unknownOrigin() {
        var translator = JudgedTranslator()
        #expect(translator.ourStreamIsOn(fx, sinkInputIndex: 10, at: now) == [])
        #expect(translator.sourceChanged(fxMonitor, at: now) == [])
        #expect(translator.sourceOutputChanged(
            SourceOutputSnapshot(index: 0, sourceIndex: 3, mediaRole: nil, ownerModuleIndex: loopbackModule),
            at: now) == [])
        #expect(translator.sinkInputChanged(loopback(on: 0), at: now) == [])
        #expect(translator.sinkInputChanged(loopback(on: 1), at: now) == [.outputLost(.deviceRemoved)])
    }

    @Test("Other sinks, other loopbacks and clients' streams are not the chain")
    func notTheChain() {
        var translator = onLoopback()
        #expect(translator.sinkRemoved(1, at: now) == [])
        // A loopback from another monitor, and a client's stream moving, are not ours.
        let speakersMonitor = SourceSnapshot(index: 1, cardIndex: nil, monitorOfSinkIndex: 1)
        #expect(translator.sourceChanged(speakersMonitor, at: now) == [])
        #expect(translator.sourceOutputChanged(
            SourceOutputSnapshot(index: 5, sourceIndex: 1, mediaRole: nil, ownerModuleIndex: 9), at: now) == [])
        let other = SinkInputSnapshot(index: 6, sinkIndex: 0, mediaRole: nil, corked: false, muted: false,
                                      clientIndex: nil, applicationName: nil, ownerModuleIndex: 9)
        #expect(translator.sinkInputChanged(other, at: now) == [])
        #expect(translator.sinksBehindOurSink == [0])
        let client = SinkInputSnapshot(index: 20, sinkIndex: 0, mediaRole: "music", corked: false, muted: false,
                                       clientIndex: 3, applicationName: "paplay")
        #expect(translator.sinkInputChanged(client, at: now) == [])
        // A device sink of ours has nothing behind it.
        #expect(translator.ourStreamIsOn(headphones, sinkInputIndex: 10, at: now) == [])
        #expect(translator.sinksBehindOurSink == [])
        #expect(translator.sinkRemoved(1, at: now) == [])
    }

    @Test("A combine sink's slaves and a filter's master are behind it; a chain of virtual sinks leads to its end")
    func combineAndChains() {
        // module-combine-sink (module 12) owns the sink and one stream on each slave.
        var translator = JudgedTranslator()
        let combined = SinkSnapshot(name: "combined", index: 5, ownerModuleIndex: 12)
        #expect(translator.ourStreamIsOn(combined, sinkInputIndex: 10, at: now) == [])
        for (index, slave) in [(UInt32(30), UInt32(0)), (31, 1)] {
            #expect(translator.sinkInputChanged(
                SinkInputSnapshot(index: index, sinkIndex: slave, mediaRole: nil, corked: false, muted: false,
                                  clientIndex: nil, applicationName: nil, ownerModuleIndex: 12), at: now) == [])
        }
        #expect(translator.sinksBehindOurSink == [0, 1])
        #expect(translator.sinkRemoved(1, at: now) == [.outputLost(.deviceRemoved)])

        // fx -> loopback -> eq (a filter sink of module 14) -> its master, the headphones.
        var chained = onLoopback()
        let eq = SinkSnapshot(name: "eq", index: 8, ownerModuleIndex: 14)
        #expect(chained.sinkAdded(eq) == [.outputAppeared])
        #expect(chained.sinkInputChanged(loopback(on: 8), at: now) == [.routeChanged])
        #expect(chained.sinkInputChanged(
            SinkInputSnapshot(index: 40, sinkIndex: 0, mediaRole: nil, corked: false, muted: false, clientIndex: nil,
                              applicationName: nil, ownerModuleIndex: 14), at: now) == [])
        #expect(chained.sinksBehindOurSink == [8, 0])
        #expect(chained.sinkRemoved(0, at: now) == [.outputLost(.deviceRemoved)])
    }

    @Test("The reducer pauses for the loss and keeps playing for the route change")
    func reducer() {
        var translator = onLoopback()
        var playing = PlayerState(playback: .playing, queue: QueueCursor(trackCount: 1, index: 0),
                                  stream: StreamCondition(isOpen: true, isCorked: false))
        var moved = playing
        let commands = translator.sinkRemoved(0, at: now).flatMap { playing.apply($0) }
        #expect(commands.first == .cork)
        #expect(playing.playback == .paused(.outputLost(.deviceRemoved)))
        var other = onLoopback()
        #expect(other.sinkInputChanged(loopback(on: 1), at: now).flatMap { moved.apply($0) } == [])
        #expect(moved.playback == .playing)
    }

    @Test("PulseAudio: a client recording our sink's monitor does not make every client's playback a carrier")
    func clientRecorderIsNoCarrier() {
        // As measured on PulseAudio 16.1: module-native-protocol-unix (module 0 here) owns every client's stream, a
        // parec of fx.monitor and a paplay on the speakers alike.
        var translator = onLoopback()
        let protocolModule: UInt32 = 0
        #expect(translator.sourceOutputChanged(
            SourceOutputSnapshot(index: 1, sourceIndex: 3, mediaRole: nil, ownerModuleIndex: protocolModule,
                                 clientIndex: 6),
            at: now) == [])
        #expect(translator.sinkInputChanged(
            SinkInputSnapshot(index: 1, sinkIndex: 1, mediaRole: nil, corked: false, muted: false, clientIndex: 7,
                              applicationName: "paplay", ownerModuleIndex: protocolModule),
            at: now) == [])
        #expect(translator.sinksBehindOurSink == [0], "the speakers are not behind fx")
        #expect(translator.sinkRemoved(1, at: now) == [], "another application's device going is not our loss")
        #expect(translator.sinkRemoved(0, at: now) == [.outputLost(.deviceRemoved)])
    }
}
