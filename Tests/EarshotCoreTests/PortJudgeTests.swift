// The rules' judgement of our sink's port changes (PortChanges.swift; RULES.md rules 10-12): the translator reports the
// ports before and after, as facts, and the rules decide whether that is a loss, a deliberate port choice or a replug.
// Every case the translator's classifier used to decide, on facts alone, and then the rules reacting to each.
import EarshotCore
import Testing

@Suite("Rules 10-12: the rules judge a change of our sink's ports")
struct PortJudgeTests {
    static let speaker = "analog-output-speaker"
    static let headphones = "analog-output-headphones"

    /// A laptop's analog sink: a speaker of unknown availability and headphones on a jack.
    static func laptop(active: String, headphones: SinkPort.Availability) -> SinkPorts {
        SinkPorts(ports: [
            SinkPort(name: speaker, headphoneLike: false, availability: .unknown),
            SinkPort(name: Self.headphones, headphoneLike: true, availability: headphones),
        ], activeName: active)
    }

    /// A sink with one port, as a Bluetooth device has in each profile.
    static func single(_ name: String, headphoneLike: Bool, _ availability: SinkPort.Availability = .plugged)
        -> SinkPorts {
        SinkPorts(ports: [SinkPort(name: name, headphoneLike: headphoneLike, availability: availability)],
                  activeName: name)
    }

    static func judge(_ previous: SinkPorts, _ current: SinkPorts) -> PortChange? {
        PortJudge.judge(previous: previous, current: current)
    }

    @Test("The active port becoming unplugged is a loss; an already unplugged one reported again is nothing")
    func activePortUnavailable() {
        let plugged = Self.laptop(active: Self.headphones, headphones: .plugged)
        let unplugged = Self.laptop(active: Self.headphones, headphones: .unplugged)
        #expect(Self.judge(plugged, unplugged) == .activePortUnavailable)
        #expect(Self.judge(unplugged, unplugged) == nil)
        // An active port that is unplugged and new to us is a loss too (nothing was heard from it).
        #expect(Self.judge(SinkPorts(), unplugged) == .activePortUnavailable)
        // Another unplugged port made active: a loss of its own, not the one already reported.
        let ports = [SinkPort(name: "analog-output-lineout", headphoneLike: false, availability: .unplugged),
                     SinkPort(name: "analog-output-rear", headphoneLike: false, availability: .unplugged)]
        #expect(Self.judge(SinkPorts(ports: ports, activeName: "analog-output-lineout"),
                           SinkPorts(ports: ports, activeName: "analog-output-rear")) == .activePortUnavailable)
    }

    @Test("Headphones to something else while they are unplugged, gone or unknown: switched away (no permission)")
    func switchedAwayFromHeadphones() {
        let before = Self.laptop(active: Self.headphones, headphones: .plugged)
        #expect(Self.judge(before, Self.laptop(active: Self.speaker, headphones: .unplugged))
            == .switchedAwayFromHeadphones)
        #expect(Self.judge(before, Self.laptop(active: Self.speaker, headphones: .unknown))
            == .switchedAwayFromHeadphones)
        var gone = Self.laptop(active: Self.speaker, headphones: .plugged)
        gone.ports.removeAll { $0.name == Self.headphones }
        #expect(Self.judge(before, gone) == .switchedAwayFromHeadphones)
        // No active port at all after it: nothing is known to sound only for the wearer.
        var noActive = Self.laptop(active: Self.speaker, headphones: .unplugged)
        noActive.activeName = nil
        #expect(Self.judge(before, noActive) == .switchedAwayFromHeadphones)
        // A headset's port to a speaker port on a single-port sink.
        #expect(Self.judge(Self.single("headset-output", headphoneLike: true),
                           Self.single("speaker-output", headphoneLike: false)) == .switchedAwayFromHeadphones)
    }

    @Test("Headphones to another port while they stay plugged in: a port chosen, a route change")
    func activePortChosen() {
        #expect(Self.judge(Self.laptop(active: Self.headphones, headphones: .plugged),
                           Self.laptop(active: Self.speaker, headphones: .plugged)) == .activePortChosen)
    }

    @Test("Headphones to a headset and back (a Bluetooth profile switch swapping the only port) is nothing")
    func headphonesToHeadset() {
        let a2dp = Self.single("headphone-output", headphoneLike: true)
        let headset = Self.single("headset-output", headphoneLike: true)
        #expect(Self.judge(a2dp, headset) == nil)
        #expect(Self.judge(headset, a2dp) == nil)
    }

    @Test("A port unplugged before and plugged now, or new and plugged, is a replug, whichever port is active")
    func portBecameAvailable() {
        let unplugged = Self.laptop(active: Self.speaker, headphones: .unplugged)
        #expect(Self.judge(unplugged, Self.laptop(active: Self.speaker, headphones: .plugged)) == .portBecameAvailable)
        #expect(Self.judge(unplugged, Self.laptop(active: Self.headphones, headphones: .plugged))
            == .portBecameAvailable)
        // A new port arriving plugged in beside the active one (a second HDMI monitor).
        let one = SinkPorts(ports: [SinkPort(name: "hdmi-output-0", headphoneLike: false, availability: .unplugged)],
                            activeName: "hdmi-output-0")
        var two = one
        two.ports.append(SinkPort(name: "hdmi-output-1", headphoneLike: false, availability: .plugged))
        // The active port is unplugged in both: not a new loss, and the new port is a replug.
        #expect(Self.judge(one, two) == .portBecameAvailable)
        // Unknown availability before tells nothing of a replug: only unplugged to plugged is one.
        #expect(Self.judge(Self.laptop(active: Self.speaker, headphones: .unknown),
                           Self.laptop(active: Self.speaker, headphones: .plugged)) == nil)
        // A new port of unknown availability tells nothing.
        two.ports[1].availability = .unknown
        #expect(Self.judge(one, two) == nil)
        // A sink that had no active port before: its first port plugged in counts even when it is the active one.
        #expect(Self.judge(SinkPorts(), Self.single("line-out", headphoneLike: false)) == .portBecameAvailable)
    }

    @Test("A new port that only replaces the active one (not headphone-like before) is no replug")
    func newActivePortIsNoReplug() {
        #expect(Self.judge(Self.single("speaker-output", headphoneLike: false),
                           Self.single("line-output", headphoneLike: false)) == nil)
    }

    @Test("A loss wins over an appearance in the same update")
    func lossWins() {
        let before = SinkPorts(ports: [
            SinkPort(name: Self.headphones, headphoneLike: true, availability: .plugged),
            SinkPort(name: "analog-output-lineout", headphoneLike: false, availability: .unplugged),
        ], activeName: Self.headphones)
        let after = SinkPorts(ports: [
            SinkPort(name: Self.headphones, headphoneLike: true, availability: .unplugged),
            SinkPort(name: "analog-output-lineout", headphoneLike: false, availability: .plugged),
        ], activeName: "analog-output-lineout")
        #expect(Self.judge(before, after) == .switchedAwayFromHeadphones)
        // The active port itself unplugged while another appears.
        var activeUnplugged = after
        activeUnplugged.activeName = Self.headphones
        #expect(Self.judge(before, activeUnplugged) == .activePortUnavailable)
    }

    @Test("Harmless changes: speaker to headphones, an unchanged sink, sinks without ports")
    func harmless() {
        let speaker = Self.laptop(active: Self.speaker, headphones: .plugged)
        let headphones = Self.laptop(active: Self.headphones, headphones: .plugged)
        #expect(Self.judge(speaker, headphones) == nil)
        #expect(Self.judge(headphones, headphones) == nil)
        #expect(Self.judge(SinkPorts(), SinkPorts()) == nil)
    }

    @Test("Each change amounts to its event: a loss (rule 10), a route change (rule 11), an appearance (rule 12)")
    func events() {
        #expect(PortChange.activePortUnavailable.event == .outputLost(.portUnplugged))
        #expect(PortChange.switchedAwayFromHeadphones.event == .outputLost(.portUnplugged))
        #expect(PortChange.activePortChosen.event == .routeChanged)
        #expect(PortChange.portBecameAvailable.event == .outputAppeared)
        #expect(OutputFactJudge.judge(.userPlay) == [.userPlay])
        let same = Self.laptop(active: Self.headphones, headphones: .plugged)
        #expect(OutputFactJudge.judge(.sinkPortsChanged(from: same, to: same)) == [])
    }

    @Test("The rules react to what the change amounts to, and log it as such")
    func rulesReact() {
        let plugged = Self.laptop(active: Self.headphones, headphones: .plugged)
        // The jack unplugged while playing: rule 10, cork then flush.
        var store = RuleStore(Given.playing)
        store.send(.sinkPortsChanged(from: plugged, to: Self.laptop(active: Self.speaker, headphones: .unplugged)),
                   commands: [.cork, .flush]) {
            $0.playback = .paused(.outputLost(.portUnplugged))
        }
        // A replug then never plays by itself (rule 12).
        store.send(.sinkPortsChanged(from: Self.laptop(active: Self.speaker, headphones: .unplugged),
                                     to: Self.laptop(active: Self.speaker, headphones: .plugged)), commands: [])
        // The speaker chosen while the headphones stay plugged in keeps playing (rule 11).
        var chosen = RuleStore(Given.playing)
        let change = Event.sinkPortsChanged(from: plugged, to: Self.laptop(active: Self.speaker, headphones: .plugged))
        chosen.send(change, commands: [])
        var state = Given.playing
        #expect(state.applyJudged(change).map(\.event) == [.routeChanged])
        // A change that matters not is one decision of its own, in the translator's words, of no consequence (not
        // logged); one that mattered is not.
        let nothing = state.applyJudged(.sinkPortsChanged(from: plugged, to: plugged))
        #expect(nothing.map(\.event) == [.sinkPortsChanged(from: plugged, to: plugged)])
        #expect(nothing.allSatisfy { $0.isOutputFactOfNoConsequence(before: state.playback) })
        let before = state.playback
        let lost = state.applyJudged(.sinkPortsChanged(from: plugged, to: Self.laptop(active: Self.headphones,
                                                                                      headphones: .unplugged)))
        #expect(lost.map(\.event) == [.outputLost(.portUnplugged)])
        #expect(!lost.contains { $0.isOutputFactOfNoConsequence(before: before) })
        // A fact judged to nothing that still changed the playback would be logged (none does today).
        var armed = nothing[0]
        armed.commands = [.armTimer(at: nil)]
        #expect(!armed.isOutputFactOfNoConsequence(before: armed.playback))
        var changed = nothing[0]
        changed.playback = .stopped
        #expect(!changed.isOutputFactOfNoConsequence(before: .playing))
    }
}
