// A bounded exhaustive check of the translator as a whole (ServerEventTranslator with VirtualSinkChain, its port facts
// judged by PortJudge, and CaptureCalls; issue 21): every order of the notices the owner hands it, up to a depth, in
// three small servers that hold each family of its notices: a laptop sink with a headphone jack, a Bluetooth headset
// that can switch to a call profile, and a virtual sink whose loopback carries our audio to a device. Each has a phone
// stream and a second sink (the speakers) our stream can be moved to. A model of each server says what happened, kept
// apart from the translator; on every notice the check holds the translator to three invariants:
// (1) never an interruption without a trigger: a trigger-role stream begins only while it runs unmuted, a profile
//     switch only when our Bluetooth sink is removed while its card stays, and nothing else begins (call detection by
//     microphone is off here: CaptureCallExhaustiveTests covers it); no source ends that did not begin, none twice;
// (2) never an output loss for a deliberate move: moving our stream to a sink that exists, moving the loopback while
//     the device it played on exists, choosing the headphone port, a sink appearing and the other streams' and
//     captures' notices never lose the output, unless a removal before them was still being told apart (a profile
//     switch pending: the server's move then shows it was an unplug);
// (3) never a state that makes a paused player sound: the events feed two players, one the user paused and one
//     playing. The paused one never plays; the playing one is quiet whenever a trigger runs or our sink has gone and
//     nothing has said where the stream is, never plays again after an output loss, and resumes only when the
//     translator ends a source with permission to resume;
// (4) never a wait without an end: a profile switch waits with no bound only while its card is in a call profile (a
//     switch pending, or back on A2DP with our stream elsewhere, ends at the translator's deadline, when the owner's
//     timer calls it: that timer is one more notice of the alphabet).
//
// The depth: six notices in each server. The longest story that matters is six long: a call's stream starts, our
// Bluetooth sink goes, the card switches to the call profile, the call ends, the card comes back to A2DP, our stream
// reaches its new sink; every shorter story is covered with any notice before, between or after its steps. The run
// prints the count of notices checked: 649 946, in about 4 s in a debug build.
import EarshotCore
import PulseOutput
import Testing

/// What one server of the check looks like now, told apart from what the translator concluded.
private struct ServerModel {
    /// The phone stream (index 20, on the speakers): nil when it does not exist.
    var phoneRunning: Bool?
    /// A capture with `media.role=phone` runs (a Bluetooth switch is one with or without it).
    var phoneCapture = false
    /// The sink our stream is on, and whether that sink has been removed with no word yet of where the stream went.
    var ourSink: UInt32
    var ourSinkGone = false
    /// Sinks removed (never come back in a sequence).
    var removed: Set<UInt32> = []
    /// The Bluetooth card's profile: nil once removed.
    var cardProfile: String? = World.a2dp
    /// The laptop sink's ports: the active one, and whether the headphones are plugged in.
    var headphonesActive = true
    var headphonesPlugged = true
    /// The sink the loopback plays on (virtual sink server).
    var loopbackOn: UInt32 = World.laptop
    /// The interruption sources the translator began and has not ended.
    var active: Set<InterruptionSource> = []
}

/// The snapshots of the three servers.
private enum World {
    static let laptop: UInt32 = 1, speakers: UInt32 = 2, bluetooth: UInt32 = 3, bluetoothCall: UInt32 = 4
    static let bluetoothAgain: UInt32 = 5
    static let fx: UInt32 = 6, card: UInt32 = 9
    static let a2dp = "a2dp_sink", headUnit = "handsfree_head_unit", off = "off"
    static let moment = Moment(milliseconds: 1_000)

    static func laptopSink(headphonesActive: Bool, plugged: Bool) -> SinkSnapshot {
        SinkSnapshot(
            name: "alsa_output.analog-stereo", index: laptop,
            ports: [
                PortSnapshot(name: "analog-output-speaker", type: .speaker, priority: 10_000),
                PortSnapshot(name: "analog-output-headphones", type: .headphones, availability: plugged ? .yes : .no,
                             priority: 9_900),
            ],
            activePortName: headphonesActive ? "analog-output-headphones" : "analog-output-speaker",
            ownerModuleIndex: 11, cardIndex: 0)
    }

    static let speakerSink = SinkSnapshot(name: "speakers", index: speakers, ownerModuleIndex: 12)
    static func bluetoothSink(_ index: UInt32, _ profile: String) -> SinkSnapshot {
        SinkSnapshot(name: "bluez_sink.00_11.\(profile)", index: index, cardIndex: card, bluetoothProfile: profile)
    }

    static func headset(_ profile: String) -> CardSnapshot {
        CardSnapshot(
            index: card, name: "bluez_card.00_11",
            profiles: [
                CardProfileSnapshot(name: a2dp, sinkCount: 1, sourceCount: 0),
                CardProfileSnapshot(name: headUnit, sinkCount: 1, sourceCount: 1),
                CardProfileSnapshot(name: off, sinkCount: 0, sourceCount: 0),
            ],
            activeProfileName: profile, deviceBus: "bluetooth", deviceAPI: "bluez")
    }

    static let fxSink = SinkSnapshot(name: "fx", index: fx, ownerModuleIndex: 30)
    static let fxMonitor = SourceSnapshot(index: 7, cardIndex: nil, monitorOfSinkIndex: fx)
    static let microphone = SourceSnapshot(index: 8, cardIndex: 0)
    static func loopback(on sink: UInt32) -> SinkInputSnapshot {
        SinkInputSnapshot(index: 40, sinkIndex: sink, mediaRole: nil, corked: false, muted: false, clientIndex: nil,
                          applicationName: nil, ownerModuleIndex: 31)
    }

    static let loopbackCapture = SourceOutputSnapshot(index: 41, sourceIndex: 7, mediaRole: nil, ownerModuleIndex: 31)
    static let phoneCapture = SourceOutputSnapshot(index: 60, sourceIndex: 8, mediaRole: "phone", clientIndex: 3)
    static func phone(running: Bool) -> SinkInputSnapshot {
        SinkInputSnapshot(index: 20, sinkIndex: speakers, mediaRole: "phone", corked: !running, muted: false,
                          clientIndex: 3, applicationName: "paplay")
    }
}

/// One notice of the alphabet: a translator call the owner makes, and what it means in the model.
private enum Notice: CaseIterable {
    case phoneRuns, phoneCorks, phoneRemoved, phoneCaptureRuns, phoneCaptureRemoved
    case ourSinkRemoved, movedOffRemovedSink, movedToSpeakers, speakersAppear, streamGone
    case headphonesUnplugged, headphonesPluggedIn, headphonesChosen
    case cardToCall, cardToA2DP, cardOff, cardRemoved, reachedCallSink, reachedA2DPAgain, timerExpires
    case deviceBehindRemoved, loopbackMovedToSpeakers

    /// A deliberate move, or a notice about something else than our output: never an output loss (invariant 2).
    var isDeliberateOrUnrelated: Bool {
        switch self {
        case .phoneRuns, .phoneCorks, .phoneRemoved, .phoneCaptureRuns, .phoneCaptureRemoved, .movedToSpeakers,
             .speakersAppear, .headphonesPluggedIn, .headphonesChosen, .loopbackMovedToSpeakers, .streamGone,
             .reachedCallSink:
            return true
        default:
            return false
        }
    }
}

/// The three servers of the check, each with the notices that mean something in it.
private enum Server: CaseIterable {
    case laptop, bluetooth, virtualSink

    var alphabet: [Notice] {
        let common: [Notice] = [.phoneRuns, .phoneCorks, .phoneRemoved, .ourSinkRemoved, .movedOffRemovedSink,
                                .movedToSpeakers, .streamGone]
        switch self {
        case .laptop: return common + [.speakersAppear, .headphonesUnplugged, .headphonesPluggedIn, .headphonesChosen]
        case .bluetooth:
            return common + [.phoneCaptureRuns, .phoneCaptureRemoved, .cardToCall, .cardToA2DP, .cardOff, .cardRemoved,
                             .reachedCallSink, .reachedA2DPAgain, .timerExpires]
        case .virtualSink: return common + [.deviceBehindRemoved, .loopbackMovedToSpeakers]
        }
    }

    /// The translator with our stream on this server's sink, the server described as the owner lists it.
    func start() -> (JudgedTranslator, ServerModel) {
        var translator = JudgedTranslator(callDetection: CallDetectionSettings(detection: .roles))
        let moment = World.moment
        var events: [Event] = []
        switch self {
        case .laptop:
            let sink = World.laptopSink(headphonesActive: true, plugged: true)
            events += translator.ourStreamIsOn(sink, sinkInputIndex: 10, at: moment)
            events += translator.sinkChanged(sink) + translator.sinkChanged(World.speakerSink)
            return (translator, ServerModel(ourSink: World.laptop))
        case .bluetooth:
            let sink = World.bluetoothSink(World.bluetooth, World.a2dp)
            events += translator.cardChanged(World.headset(World.a2dp), at: moment)
            events += translator.ourStreamIsOn(sink, sinkInputIndex: 10, at: moment)
            events += translator.sinkChanged(World.speakerSink) + translator.sourceChanged(World.microphone, at: moment)
            return (translator, ServerModel(ourSink: World.bluetooth))
        case .virtualSink:
            events += translator.ourStreamIsOn(World.fxSink, sinkInputIndex: 10, at: moment)
            for sink in [World.laptopSink(headphonesActive: true, plugged: true), World.speakerSink, World.fxSink] {
                events += translator.sinkChanged(sink)
            }
            events += translator.sinkInputChanged(World.loopback(on: World.laptop), at: moment)
            events += translator.sourceChanged(World.fxMonitor, at: moment)
            events += translator.sourceOutputChanged(World.loopbackCapture, at: moment)
            #expect(translator.sinksBehindOurSink == [World.laptop])
            return (translator, ServerModel(ourSink: World.fx))
        }
    }
}

/// The two players the events feed (invariant 3).
private struct Players {
    /// Paused by the user: never plays, whatever the server says.
    var paused = PlayerState(playback: .paused(.user), queue: QueueCursor(trackCount: 2, index: 0),
                             stream: .openCorked)
    /// Playing at the start.
    var playing = PlayerState(playback: .playing, queue: QueueCursor(trackCount: 2, index: 0),
                              stream: StreamCondition(isOpen: true, isCorked: false))
    /// The playing one lost its output: only a user play could start it again.
    var lost = false
}

@Suite("The translator, exhaustively")
struct TranslatorExhaustiveTests {
    static let depth = 6

    @Test("Any order of the notices keeps the translator's invariants: triggers, deliberate moves, paused players")
    func everySequenceKeepsTheInvariants() {
        var sequences = 0
        var violations: [String] = []
        for server in Server.allCases {
            let (translator, model) = server.start()
            explore(server, translator, model, Players(), depth: Self.depth, path: [], sequences: &sequences,
                    violations: &violations)
        }
        print("Translator check: \(sequences) notices in sequences up to \(Self.depth) long, over three servers")
        #expect(violations.isEmpty, "\(violations.prefix(5).joined(separator: "\n"))")
        #expect(sequences > 500_000)
    }

    private func explore(
        _ server: Server, _ translator: JudgedTranslator, _ model: ServerModel, _ players: Players, depth: Int,
        path: [Notice], sequences: inout Int, violations: inout [String]
    ) {
        guard depth > 0, violations.count < 5 else { return }
        for notice in server.alphabet {
            var translator = translator
            var model = model
            let before = model
            // A loss may be owed to an earlier removal that was still being told apart (a profile switch pending).
            let switchPending = !translator.profileSwitches.isEmpty
            // The loopback's move after its device was removed is the server's, not a deliberate one.
            let deliberate = notice.isDeliberateOrUnrelated
                && !(notice == .loopbackMovedToSpeakers && model.removed.contains(model.loopbackOn))
            guard let events = Self.deliver(notice, to: &translator, model: &model) else { continue }
            sequences += 1
            var players = players
            var problems = Self.check(notice, events, &model, before: before, deliberate: deliberate && !switchPending,
                                      translator: translator)
            problems += Self.feed(events, to: &players, model: model)
            if !problems.isEmpty {
                let story = (path + [notice]).map { "\($0)" }.joined(separator: ", ")
                violations += problems.map { "\(server): \($0) after [\(story)] -> \(events)" }
                continue
            }
            // Our stream gone, the translator forgets the server until the owner describes it with the next stream:
            // a sequence ends there.
            explore(server, translator, model, players, depth: notice == .streamGone ? 0 : depth - 1,
                    path: path + [notice],
                    sequences: &sequences, violations: &violations)
        }
    }

    /// Hands `notice` to the translator as the owner would and updates the model; nil when the notice cannot happen
    /// now (a move off a sink that was not removed, a card that is gone changing).
    private static func deliver(_ notice: Notice, to translator: inout JudgedTranslator,
                                model: inout ServerModel) -> [Event]? {
        let moment = World.moment
        switch notice {
        case .phoneRuns, .phoneCorks:
            model.phoneRunning = notice == .phoneRuns
            return translator.sinkInputChanged(World.phone(running: notice == .phoneRuns), at: moment)
        case .phoneRemoved:
            guard model.phoneRunning != nil else { return nil }
            model.phoneRunning = nil
            return translator.sinkInputRemoved(20, at: moment)
        case .phoneCaptureRuns:
            model.phoneCapture = true
            return translator.sourceOutputChanged(World.phoneCapture, at: moment)
        case .phoneCaptureRemoved:
            guard model.phoneCapture else { return nil }
            model.phoneCapture = false
            return translator.sourceOutputRemoved(60, at: moment)
        case .ourSinkRemoved:
            guard !model.ourSinkGone, model.ourSink != World.speakers else { return nil }
            model.ourSinkGone = true
            model.removed.insert(model.ourSink)
            return translator.sinkRemoved(model.ourSink, at: moment)
        case .movedOffRemovedSink:
            // The server moved our stream to the speakers off the removed sink (the moved callback found it gone).
            guard model.ourSinkGone else { return nil }
            model.ourSinkGone = false
            model.ourSink = World.speakers
            return translator.ourStreamLeftRemovedSink(at: moment)
                + translator.ourStreamIsOn(World.speakerSink, sinkInputIndex: 10, at: moment)
        case .movedToSpeakers:
            // Moved deliberately while its sink still exists: the owner tells the rules `routeChanged` itself.
            guard !model.ourSinkGone, model.ourSink != World.speakers else { return nil }
            model.ourSink = World.speakers
            return translator.ourStreamMovedOffExistingSink()
                + translator.ourStreamIsOn(World.speakerSink, sinkInputIndex: 10, at: moment)
        case .speakersAppear:
            return translator.sinkAdded(World.speakerSink)
        case .streamGone:
            return translator.ourStreamIsGone(at: moment)
        case .headphonesUnplugged, .headphonesPluggedIn, .headphonesChosen:
            guard model.ourSink == World.laptop, !model.removed.contains(World.laptop) else { return nil }
            if notice == .headphonesChosen {
                guard !model.headphonesActive, model.headphonesPlugged else { return nil }
                model.headphonesActive = true
            } else {
                // The server switches an unplugged jack's sink to the speaker port; a replug leaves the choice to the
                // user (`headphonesChosen`).
                model.headphonesPlugged = notice == .headphonesPluggedIn
                if !model.headphonesPlugged { model.headphonesActive = false }
            }
            return translator.sinkChanged(World.laptopSink(headphonesActive: model.headphonesActive,
                                                           plugged: model.headphonesPlugged))
        case .cardToCall, .cardToA2DP, .cardOff:
            guard model.cardProfile != nil else { return nil }
            let profile = notice == .cardToCall ? World.headUnit : notice == .cardToA2DP ? World.a2dp : World.off
            model.cardProfile = profile
            return translator.cardChanged(World.headset(profile), at: moment)
        case .cardRemoved:
            guard model.cardProfile != nil else { return nil }
            model.cardProfile = nil
            return translator.cardRemoved(World.card, at: moment)
        case .reachedCallSink, .reachedA2DPAgain:
            // The server moves our stream (from the speakers, which stay) to the headset's sink of its profile now,
            // which is, to the owner, a move off a sink that still exists.
            let again = notice == .reachedA2DPAgain
            guard model.cardProfile == (again ? World.a2dp : World.headUnit), model.ourSink == World.speakers,
                  !model.ourSinkGone, !model.removed.contains(again ? World.bluetoothAgain : World.bluetoothCall)
            else { return nil }
            model.ourSink = again ? World.bluetoothAgain : World.bluetoothCall
            let sink = World.bluetoothSink(model.ourSink, again ? World.a2dp : World.headUnit)
            return translator.ourStreamMovedOffExistingSink()
                + translator.ourStreamIsOn(sink, sinkInputIndex: 10, at: moment)
        case .timerExpires:
            // The owner's one-shot timer for the translator's deadline; the server is unchanged.
            guard let deadline = translator.deadline else { return nil }
            return translator.timerExpired(at: deadline)
        case .deviceBehindRemoved:
            guard !model.removed.contains(model.loopbackOn) else { return nil }
            model.removed.insert(model.loopbackOn)
            return translator.sinkRemoved(model.loopbackOn, at: moment)
        case .loopbackMovedToSpeakers:
            guard model.loopbackOn != World.speakers else { return nil }
            model.loopbackOn = World.speakers
            return translator.sinkInputChanged(World.loopback(on: World.speakers), at: moment)
        }
    }

    /// Invariants 1 and 2 on what the translator said about `notice`; records the sources it began and ended.
    private static func check(_ notice: Notice, _ events: [Event], _ model: inout ServerModel, before: ServerModel,
                              deliberate: Bool, translator: JudgedTranslator) -> [String] {
        // A profile switch begins only when our Bluetooth sink goes while its card stays.
        let bluetoothSinkWent = (notice == .ourSinkRemoved || notice == .movedOffRemovedSink)
            && [World.bluetooth, World.bluetoothCall, World.bluetoothAgain].contains(before.ourSink)
            && model.cardProfile != nil
        var problems: [String] = []
        for event in events {
            switch event {
            case .interruptionBegan(let source, _):
                if !model.active.insert(source).inserted { problems.append("(1) \(source) began twice") }
                switch source {
                case .triggerStream(20) where model.phoneRunning == true: break
                case .profileSwitch(World.card) where bluetoothSinkWent: break
                default: problems.append("(1) \(source) began with no trigger")
                }
            case .interruptionEnded(let source, let resumeAllowed, _):
                if model.active.remove(source) == nil { problems.append("(1) \(source) ended without a begin") }
                // Our stream gone, nothing really ended: no resume.
                if notice == .streamGone && resumeAllowed { problems.append("(3) \(source) ended with a resume") }
            case .outputLost:
                if deliberate { problems.append("(2) output lost for \(notice)") }
            case .routeChanged, .outputAppeared:
                break
            default:
                problems.append("an event the translator never makes: \(event)")
            }
        }
        // The translator's own record agrees: the phone stream interrupts exactly while it runs (scope session).
        // (Our stream gone, it has forgotten the server: the sequence ends there.)
        if notice != .streamGone && translator.activeTriggers != (model.phoneRunning == true ? [20] : []) {
            problems.append("(1) activeTriggers \(translator.activeTriggers)")
        }
        for (card, phase) in translator.profileSwitches
        where [.call, .movedAway].contains(phase) && model.cardProfile != World.headUnit {
            problems.append("(4) the switch on card \(card) waits with no bound (card: \(model.cardProfile ?? "gone"))")
        }
        return problems
    }

    /// Invariant 3: the events through the rules, for a paused and a playing player.
    private static func feed(_ events: [Event], to players: inout Players, model: ServerModel) -> [String] {
        var problems: [String] = []
        for event in events {
            _ = players.paused.apply(event)
            let wasPlaying = players.playing.isPlaying
            _ = players.playing.apply(event)
            if case .outputLost = event { players.lost = true }
            if players.paused.isPlaying { problems.append("(3) the paused player plays after \(event)") }
            if !wasPlaying && players.playing.isPlaying {
                if players.lost { problems.append("(3) played again after an output loss") }
                guard case .interruptionEnded(_, true, _) = event else {
                    problems.append("(3) started by \(event)")
                    continue
                }
            }
        }
        if players.playing.isPlaying && (model.phoneRunning == true || model.ourSinkGone) {
            problems.append("(3) playing while a call runs or our sink is gone")
        }
        return problems
    }
}
