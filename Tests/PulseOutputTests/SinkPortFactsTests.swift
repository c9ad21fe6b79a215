// The wired-jack path, which null sinks cannot exercise: snapshots shaped like what `pactl list sinks` shows on
// real laptops (HDA Intel analog outputs with jack detection, Bluetooth, HDMI), read as the translator reads them
// (`portFacts`: a port's kind from its type, or from its name when the type is unknown) and judged by EarshotCore's
// `PortJudge`, as the rules judge them. The judgement's own cases are in EarshotCoreTests' PortJudgeTests.
import EarshotCore
import PulseOutput
import Testing

/// The translator's reading of sink snapshots, judged by the rules.
@Suite("Sink port facts: wired jack, Bluetooth and HDMI port changes read and judged")
struct SinkPortFactsTests {
    /// What the rules make of a change from `previous` to `current`, as the translator reports it.
    func classify(previous: SinkSnapshot, current: SinkSnapshot) -> PortChange? {
        PortJudge.judge(previous: previous.portFacts, current: current.portFacts)
    }

    // HDA Intel analog sink: speaker and headphones share no jack; headphones report availability through the
    // jack and sit in an availability group with the headset microphone.
    /// The built-in sink of a laptop with the given active port and jack states.
    func laptop(
        active: String,
        headphones: PortAvailability,
        speaker: PortAvailability = .unknown
    ) -> SinkSnapshot {
        SinkSnapshot(
            name: "alsa_output.pci-0000_00_1f.3.analog-stereo",
            index: 45,
            description: "Built-in Audio Analog Stereo",
            ports: [
                PortSnapshot(
                    name: "analog-output-speaker", type: .speaker, availability: speaker,
                    availabilityGroup: nil, priority: 10000),
                PortSnapshot(
                    name: "analog-output-headphones", type: .headphones, availability: headphones,
                    availabilityGroup: "Legacy 2", priority: 9900),
            ],
            activePortName: active,
            ownerModuleIndex: 7
        )
    }

    @Test("Unplugging headphones switches the active port to the speaker: switched away")
    func headphonesToSpeaker() {
        let before = laptop(active: "analog-output-headphones", headphones: .yes)
        let after = laptop(active: "analog-output-speaker", headphones: .no)
        #expect(classify(previous: before, current: after) == .switchedAwayFromHeadphones)
    }

    @Test("Choosing the speaker while headphones stay plugged in is a chosen port (a route change), not a loss")
    func speakerChosen() {
        let before = laptop(active: "analog-output-headphones", headphones: .yes)
        let after = laptop(active: "analog-output-speaker", headphones: .yes)
        #expect(classify(previous: before, current: after) == .activePortChosen)
    }

    @Test("The active headphone port gone from the sink's ports, the speaker active: switched away (no permission)")
    func headphonesLeaveTheSink() {
        // pipewire-pulse 0.3.65's picture of a route that lists no devices any more (issue 25, FakeCardJackTests):
        // the sink keeps the speaker port alone, active, and the headphones were never said to be unplugged.
        let before = laptop(active: "analog-output-headphones", headphones: .yes)
        var after = laptop(active: "analog-output-speaker", headphones: .yes)
        after.ports.removeAll { $0.name == "analog-output-headphones" }
        #expect(classify(previous: before, current: after) == .switchedAwayFromHeadphones)
    }

    @Test("The active headphone port becoming unavailable (no switch yet) is an unavailable active port")
    func activePortGoesUnavailable() {
        let before = laptop(active: "analog-output-headphones", headphones: .yes)
        let after = laptop(active: "analog-output-headphones", headphones: .no)
        #expect(classify(previous: before, current: after) == .activePortUnavailable)
    }

    @Test("A repeated report of an already unavailable active port is not a new loss")
    func alreadyUnavailable() {
        let before = laptop(active: "analog-output-headphones", headphones: .no)
        let after = laptop(active: "analog-output-headphones", headphones: .no)
        #expect(classify(previous: before, current: after) == nil)
    }

    @Test("Plugging headphones back in (no to yes) is a port that became available, whichever port is active")
    func replug() {
        let unplugged = laptop(active: "analog-output-speaker", headphones: .no)
        let stillOnSpeaker = laptop(active: "analog-output-speaker", headphones: .yes)
        let switchedBack = laptop(active: "analog-output-headphones", headphones: .yes)
        #expect(classify(previous: unplugged, current: stillOnSpeaker) == .portBecameAvailable)
        #expect(classify(previous: unplugged, current: switchedBack) == .portBecameAvailable)
    }

    @Test("Switching from the speaker to headphones is not a loss; an unchanged sink is nothing")
    func harmlessChanges() {
        let speaker = laptop(active: "analog-output-speaker", headphones: .yes)
        let headphones = laptop(active: "analog-output-headphones", headphones: .yes)
        #expect(classify(previous: speaker, current: headphones) == nil)
        #expect(classify(previous: headphones, current: headphones) == nil)
    }

    @Test("Unknown port types fall back to the port name")
    func unknownTypeUsesName() {
        // A USB adapter whose ports report no type.
        func sink(active: String) -> SinkSnapshot {
            SinkSnapshot(
                name: "alsa_output.usb-Generic_USB_Audio-00.analog-stereo", index: 12,
                ports: [
                    PortSnapshot(name: "analog-output-headphones", priority: 9900),
                    PortSnapshot(name: "analog-output-lineout", priority: 9000),
                ],
                activePortName: active)
        }
        #expect(
            classify(
                previous: sink(active: "analog-output-headphones"), current: sink(active: "analog-output-lineout"))
                == .switchedAwayFromHeadphones)
        #expect(
            classify(
                previous: sink(active: "analog-output-lineout"), current: sink(active: "analog-output-headphones"))
                == nil)
    }

    @Test("A Bluetooth profile switch from A2DP headphones to the headset profile is not a loss")
    func bluetoothProfileSwitch() {
        // PipeWire keeps one sink per device; the profile switch for a call swaps its port.
        let a2dp = SinkSnapshot(
            name: "bluez_output.00_1B_66_AA_BB_CC.1", index: 80, description: "WH-1000XM4",
            ports: [
                PortSnapshot(name: "headphone-output", type: .headphones, availability: .yes, priority: 0)
            ],
            activePortName: "headphone-output")
        let headset = SinkSnapshot(
            name: "bluez_output.00_1B_66_AA_BB_CC.1", index: 80, description: "WH-1000XM4",
            ports: [
                PortSnapshot(name: "headset-output", type: .headset, availability: .yes, priority: 0)
            ],
            activePortName: "headset-output")
        // Still only the wearer hears it, and the new port that replaced the active one is not a replug.
        #expect(classify(previous: a2dp, current: headset) == nil)
        #expect(classify(previous: headset, current: a2dp) == nil)
    }

    @Test("Switching from a Bluetooth headset port to a speaker-type port is switched away")
    func bluetoothToSpeaker() {
        let headset = SinkSnapshot(
            name: "bluez_output.00_1B_66_AA_BB_CC.1", index: 80,
            ports: [PortSnapshot(name: "headset-output", type: .headset, availability: .yes)],
            activePortName: "headset-output")
        let speaker = SinkSnapshot(
            name: "bluez_output.00_1B_66_AA_BB_CC.1", index: 80,
            ports: [PortSnapshot(name: "speaker-output", type: .speaker, availability: .yes)],
            activePortName: "speaker-output")
        #expect(classify(previous: headset, current: speaker) == .switchedAwayFromHeadphones)
    }

    @Test("An HDMI port appearing plugged in is a port that became available")
    func hdmiAppears() {
        let internalOnly = SinkSnapshot(
            name: "alsa_output.pci-0000_00_1f.3.hdmi-stereo", index: 46,
            ports: [PortSnapshot(name: "hdmi-output-0", type: .hdmi, availability: .no, priority: 5900)],
            activePortName: "hdmi-output-0")
        let monitorPlugged = SinkSnapshot(
            name: "alsa_output.pci-0000_00_1f.3.hdmi-stereo", index: 46,
            ports: [
                PortSnapshot(name: "hdmi-output-0", type: .hdmi, availability: .no, priority: 5900),
                PortSnapshot(name: "hdmi-output-1", type: .hdmi, availability: .yes, priority: 5800),
            ],
            activePortName: "hdmi-output-0")
        #expect(classify(previous: internalOnly, current: monitorPlugged) == .portBecameAvailable)
        // A new port of unknown availability says nothing about a replug.
        var unknown = monitorPlugged
        unknown.ports[1].availability = .unknown
        #expect(classify(previous: internalOnly, current: unknown) == nil)
    }

    @Test("A loss wins over an appearance in the same update")
    func lossWins() {
        // The headset jack: headphones unplugged while line out appears (a dock), in one update.
        let before = SinkSnapshot(
            name: "dock", index: 3,
            ports: [
                PortSnapshot(name: "analog-output-headphones", type: .headphones, availability: .yes),
                PortSnapshot(name: "analog-output-lineout", type: .lineOut, availability: .no),
            ],
            activePortName: "analog-output-headphones")
        let after = SinkSnapshot(
            name: "dock", index: 3,
            ports: [
                PortSnapshot(name: "analog-output-headphones", type: .headphones, availability: .no),
                PortSnapshot(name: "analog-output-lineout", type: .lineOut, availability: .yes),
            ],
            activePortName: "analog-output-lineout")
        #expect(classify(previous: before, current: after) == .switchedAwayFromHeadphones)
    }

    @Test("A port's kind is read from its type, or from its name when the server does not know the type")
    func reading() {
        #expect(PortSnapshot(name: "x", type: .headphones).isHeadphoneLike)
        #expect(PortSnapshot(name: "x", type: .headset).isHeadphoneLike)
        #expect(!PortSnapshot(name: "analog-output-headphones", type: .speaker).isHeadphoneLike)
        #expect(PortSnapshot(name: "Analog-Output-Headphones").isHeadphoneLike)
        #expect(PortSnapshot(name: "headset-output").isHeadphoneLike)
        #expect(!PortSnapshot(name: "analog-output-lineout").isHeadphoneLike)
        let sink = laptop(active: "analog-output-headphones", headphones: .no, speaker: .yes)
        #expect(sink.portFacts == SinkPorts(ports: [
            SinkPort(name: "analog-output-speaker", headphoneLike: false, availability: .plugged),
            SinkPort(name: "analog-output-headphones", headphoneLike: true, availability: .unplugged),
        ], activeName: "analog-output-headphones"))
        #expect(PortSnapshot(name: "x").fact.availability == .unknown)
    }

    @Test("The translator reports our sink's ports only when their facts changed, not at every SINK CHANGE")
    func reportedOnlyWhenChanged() {
        var translator = ServerEventTranslator()
        let plugged = laptop(active: "analog-output-headphones", headphones: .yes)
        _ = translator.ourStreamIsOn(plugged, sinkInputIndex: 10, at: Moment(milliseconds: 0))
        // A new description, another priority: the same ports, nothing to judge (a volume change is such a notice).
        var renamed = plugged
        renamed.description = "Headphones (renamed)"
        renamed.ports[0].priority = 1
        #expect(translator.sinkChanged(renamed) == [])
        let unplugged = laptop(active: "analog-output-speaker", headphones: .no)
        #expect(translator.sinkChanged(unplugged) == [.sinkPortsChanged(from: plugged.portFacts, to: unplugged.portFacts)])
        #expect(translator.sinkChanged(unplugged) == [])
    }

    @Test("Sinks without ports (null sinks, network sinks) never classify")
    func noPorts() {
        let sink = SinkSnapshot(name: "headphones", index: 1, description: "Headphones")
        #expect(classify(previous: sink, current: sink) == nil)
    }
}
