// The translator and the rules' judgement of its facts together, as the player joins them: the translator says what
// the server said (`CallSignal`s, our sink's port changes, what happened behind a virtual sink), EarshotCore's
// `OutputFactJudge` and `CallJudge` say what that amounts to (a call, an unplug, a probe, a port choice, a move) with
// the rules' timing, and the timer the rules would arm is run here by the test. The translator's tests assert on the
// judged events, which are what the rules then apply.
import EarshotCore
import PulseOutput

@dynamicMemberLookup
struct JudgedTranslator {
    /// The translator under test.
    private(set) var translator: ServerEventTranslator
    /// The rules' judgement of its signals.
    private(set) var judge = CallJudge()
    /// The rules' timing.
    var timing: CallTiming = .standard
    /// What interrupts, as the rules would hold it: the judged events' begins less their ends.
    private(set) var interrupting: Set<InterruptionSource> = []

    init(
        triggerRoles: Set<String> = ["phone"], scope: InterruptionScope = .session,
        callDetection: CallDetectionSettings = CallDetectionSettings(), duckRoles: Set<String> = ["a11y", "event"]
    ) {
        translator = ServerEventTranslator(triggerRoles: triggerRoles, scope: scope, callDetection: callDetection,
                                           duckRoles: duckRoles)
    }

    subscript<Value>(dynamicMember path: KeyPath<ServerEventTranslator, Value>) -> Value { translator[keyPath: path] }

    /// The moment the rules' timer would be armed for.
    var deadline: Moment? { judge.deadline }
    /// The applications counted as calls (`microphone#N`).
    var activeCalls: Set<UInt32> { judge.microphoneCalls }
    /// The profile switches in progress.
    var profileSwitches: [UInt32: ProfileSwitch] { judge.profileSwitches }

    private mutating func judged(_ events: [Event]) -> [Event] {
        var judged: [Event] = []
        for reported in events.flatMap(OutputFactJudge.judge) {
            for event in judge.judge(reported, timing: timing, interrupting: interrupting) {
                switch event {
                case .interruptionBegan(let source, _): interrupting.insert(source)
                case .interruptionEnded(let source, _, _): interrupting.remove(source)
                default: break
                }
                judged.append(event)
            }
        }
        return judged
    }

    /// The rules' timer going off at `moment`.
    mutating func timerExpired(at moment: Moment) -> [Event] { judged([.timerFired(at: moment)]) }

    mutating func ourStreamIsOn(_ sink: SinkSnapshot, sinkInputIndex: UInt32?, at moment: Moment) -> [Event] {
        judged(translator.ourStreamIsOn(sink, sinkInputIndex: sinkInputIndex, at: moment))
    }
    mutating func ourStreamMovedOffExistingSink() -> [Event] { judged(translator.ourStreamMovedOffExistingSink()) }
    mutating func ourStreamIsGone(at moment: Moment) -> [Event] { judged(translator.ourStreamIsGone(at: moment)) }
    mutating func sinkInputChanged(_ input: SinkInputSnapshot, at moment: Moment) -> [Event] {
        judged(translator.sinkInputChanged(input, at: moment))
    }
    mutating func sinkInputRemoved(_ index: UInt32, at moment: Moment) -> [Event] {
        judged(translator.sinkInputRemoved(index, at: moment))
    }
    mutating func sinkAdded(_ sink: SinkSnapshot) -> [Event] { judged(translator.sinkAdded(sink)) }
    mutating func sinkChanged(_ sink: SinkSnapshot) -> [Event] { judged(translator.sinkChanged(sink)) }
    mutating func sinkRemoved(_ index: UInt32, at moment: Moment) -> [Event] {
        judged(translator.sinkRemoved(index, at: moment))
    }
    mutating func ourStreamLeftRemovedSink(at moment: Moment) -> [Event] {
        judged(translator.ourStreamLeftRemovedSink(at: moment))
    }
    mutating func cardChanged(_ card: CardSnapshot, at moment: Moment) -> [Event] {
        judged(translator.cardChanged(card, at: moment))
    }
    mutating func cardRemoved(_ index: UInt32, at moment: Moment) -> [Event] {
        judged(translator.cardRemoved(index, at: moment))
    }
    mutating func sourceChanged(_ source: SourceSnapshot, at moment: Moment) -> [Event] {
        judged(translator.sourceChanged(source, at: moment))
    }
    mutating func sourceRemoved(_ index: UInt32, at moment: Moment) -> [Event] {
        judged(translator.sourceRemoved(index, at: moment))
    }
    mutating func sourceOutputChanged(_ capture: SourceOutputSnapshot, at moment: Moment) -> [Event] {
        judged(translator.sourceOutputChanged(capture, at: moment))
    }
    mutating func sourceOutputListed(_ capture: SourceOutputSnapshot, at moment: Moment) -> [Event] {
        judged(translator.sourceOutputListed(capture, at: moment))
    }
    mutating func sourceOutputRemoved(_ index: UInt32, at moment: Moment) -> [Event] {
        judged(translator.sourceOutputRemoved(index, at: moment))
    }
    func callExclusion(of capture: SourceOutputSnapshot) -> CaptureExclusion? { translator.callExclusion(of: capture) }
}
