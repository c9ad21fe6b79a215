// Rules 1-5, 17 and 18 of shared/RULES.md, before the interruption itself: what the server said about a call's signals
// (an application recording from a microphone, a Bluetooth headset's sink going away, its card changing profile, our
// stream reaching a sink) is a fact the translator reports with its moment; whether it is a call, an unplug or a
// microphone probe, how long to wait before saying so, and whether its end may resume the music is decided here.
// Time enters only inside events: a wait is a timer the rules ask for (`armTimer`) and the executor reports
// (`timerFired`).

/// What a Bluetooth card's active profile offers our stream, as the server last described the card.
public enum CardProfileKind: Hashable, Sendable, CustomStringConvertible {
    /// No active profile, or one without a sink (`off`, `a2dp_source`): nothing to follow our stream to.
    case withoutSink
    /// An A2DP profile with a sink: music.
    case a2dp
    /// Another profile with a sink: a call profile (HFP/HSP).
    case call

    /// `withoutSink`, `a2dp` or `call`.
    public var description: String {
        switch self {
        case .withoutSink: return "withoutSink"
        case .a2dp: return "a2dp"
        case .call: return "call"
        }
    }
}

/// A Bluetooth card as the server last described it: its index and what its active profile offers.
public struct BluetoothCard: Hashable, Sendable {
    /// The card's server index.
    public var index: UInt32
    /// What its active profile offers.
    public var profile: CardProfileKind

    /// A card description.
    public init(index: UInt32, profile: CardProfileKind) {
        self.index = index
        self.profile = profile
    }
}

/// A fact about a call's signals, in the translator's words (PulseOutput's ServerEventTranslator): what the server
/// said, never what to do about it.
public enum CallSignal: Hashable, Sendable, CustomStringConvertible {
    /// Application `client` (the server's client index) records from a microphone, without a break since `since`.
    /// `listedAtStart`: the capture was in the server's inventory when our stream opened, so it ran before we did.
    /// Reported again with every notice about sources and captures while it records.
    case microphoneCaptureRunning(client: UInt32, since: Moment, listedAtStart: Bool)
    /// No capture of `client` records from a microphone any more: it stopped, corked or changed kind; `sourceLost`
    /// when it stopped counting because what it records from is no longer known (the source went away, the capture
    /// lost its client or moved to another one).
    case microphoneCaptureStopped(client: UInt32, sourceLost: Bool)
    /// Our sink was removed: `bluetooth` is its card when that card is a known Bluetooth card that stays, with its
    /// active profile as last described; nil for any other sink (a USB device, a card gone or never described).
    case ourSinkRemoved(bluetooth: BluetoothCard?)
    /// A Bluetooth card changed its active profile (or was described again).
    case cardChanged(BluetoothCard)
    /// A card was removed (a headset disconnected).
    case cardRemoved(index: UInt32)
    /// Our stream is on a sink now: of card `card` (nil: none), an A2DP sink or not, and `deliberately` when it was
    /// moved off a sink that still exists (the user's move, or the desktop's default changing).
    case ourStreamReached(card: UInt32?, a2dp: Bool, deliberately: Bool)
    /// Our stream is gone (the server lost, the stream closed): nothing that interrupted it can be seen ending now.
    case ourStreamGone

    /// The signal's kind with content-free details, e.g. `ourSinkRemoved(card#7, a2dp)`.
    public var description: String {
        switch self {
        case .microphoneCaptureRunning(let client, _, let listed):
            return "microphoneCaptureRunning(microphone#\(client)\(listed ? ", listed" : ""))"
        case .microphoneCaptureStopped(let client, let lost):
            return "microphoneCaptureStopped(microphone#\(client)\(lost ? ", sourceLost" : ""))"
        case .ourSinkRemoved(let card?): return "ourSinkRemoved(card#\(card.index), \(card.profile))"
        case .ourSinkRemoved(nil): return "ourSinkRemoved"
        case .cardChanged(let card): return "cardChanged(card#\(card.index), \(card.profile))"
        case .cardRemoved(let index): return "cardRemoved(card#\(index))"
        case .ourStreamReached(let card, let a2dp, let deliberately):
            return "ourStreamReached(\(card.map { "card#\($0)" } ?? "no card")\(a2dp ? ", a2dp" : "")"
                + "\(deliberately ? ", deliberately" : ""))"
        case .ourStreamGone: return "ourStreamGone"
        }
    }
}

/// How far a Bluetooth profile switch has gone, per card (rule 17).
public enum ProfileSwitch: Hashable, Sendable {
    /// Our sink went away while the card, as last described, was still in A2DP: a call or an unplug, told apart by
    /// the card's next description (or its removal), or an unplug at `until`.
    case pending(until: Moment)
    /// The card was seen in a call profile: it ends when our stream is back on A2DP.
    case call
    /// The card is back in A2DP: it ends when our stream reaches the card's A2DP sink, or at `until` without a resume.
    case returning(until: Moment)
    /// Our stream was moved deliberately to another device's sink during the call: it ends, with a resume, when the
    /// card is back in A2DP or goes.
    case movedAway

    /// The moment this phase gives up waiting, if it has one.
    public var until: Moment? {
        switch self {
        case .pending(let until), .returning(let until): return until
        case .call, .movedAway: return nil
        }
    }
}

/// The calls the rules judge from signals: captures waiting out the probe, the applications counted as calls, the
/// profile switches in progress.
public struct CallJudge: Hashable, Sendable {
    /// Applications recording from a microphone, not yet counted as calls: the moment each will have recorded for
    /// the probe's time.
    public var probing: [UInt32: Moment] = [:]
    /// Applications counted as calls (`microphone#N` began and has not ended).
    public var microphoneCalls: Set<UInt32> = []
    /// The Bluetooth profile switches in progress, by card index: each is an interruption source.
    public var profileSwitches: [UInt32: ProfileSwitch] = [:]
    /// Nothing known.
    public init() {}

    /// The next moment something waits for (a capture's probe running out, a profile switch giving up); the rules
    /// keep the executor's timer armed for it.
    public var deadline: Moment? {
        (Array(probing.values) + profileSwitches.values.compactMap(\.until)).min()
    }

    /// The events `event` amounts to, as the rules go on to apply them: a signal or the timer judged into the
    /// interruptions and output losses it means, any other event unchanged. `interrupting` is what interrupts the
    /// player now (the rules' `interruptions`): our stream going away ends its trigger streams too.
    public mutating func judge(_ event: Event, timing: CallTiming, interrupting: Set<InterruptionSource>) -> [Event] {
        switch event {
        case .callSignal(.ourStreamGone, let moment):
            // Nothing that interrupted our stream can be seen ending now: each ends without a resume, since it did
            // not really end.
            let triggers = interrupting.compactMap { source -> UInt32? in
                if case .triggerStream(let index) = source { return index } else { return nil }
            }
            let ended = triggers.sorted().map { InterruptionSource.triggerStream(index: $0) }
                + profileSwitches.keys.sorted().map { InterruptionSource.profileSwitch(card: $0) }
                + microphoneCalls.sorted().map { InterruptionSource.microphoneCapture(client: $0) }
            self = CallJudge()
            return ended.map { .interruptionEnded($0, resumeAllowed: false, at: moment) }
        case .callSignal(let signal, let moment):
            return judge(signal, at: moment, timing: timing)
        case .timerFired(let moment):
            let expired = profileSwitches.filter { _, phase in phase.until.map { $0 <= moment } ?? false }
            return countProbes(at: moment)
                + expired.keys.sorted().flatMap { switchTurnedIntoUnplug(card: $0, at: moment) }
        default:
            return [event]
        }
    }

    private mutating func judge(_ signal: CallSignal, at moment: Moment, timing: CallTiming) -> [Event] {
        switch signal {
        case .microphoneCaptureRunning(let client, let since, let listed):
            guard !microphoneCalls.contains(client) else { return [] }
            // Listed with the inventory: it ran before our stream did, so there is no probe to wait out.
            probing[client] = listed ? moment : since.advanced(by: timing.microphoneProbeMilliseconds)
            return countProbes(at: moment)
        case .microphoneCaptureStopped(let client, let sourceLost):
            // A probe that ends before its time was no call.
            probing[client] = nil
            guard microphoneCalls.remove(client) != nil else { return [] }
            // Unknown is no permission to play: a microphone unplugged mid-call, the capture moved to another one.
            return [.interruptionEnded(.microphoneCapture(client: client), resumeAllowed: !sourceLost, at: moment)]
        case .ourSinkRemoved(let card):
            return ourSinkRemoved(card, at: moment, timing: timing)
        case .cardChanged(let card):
            return cardChanged(card, at: moment, timing: timing)
        case .cardRemoved(let index):
            switch profileSwitches[index] {
            case nil: return []
            case .movedAway?: return switchEnded(card: index, at: moment)
            case _?: return switchTurnedIntoUnplug(card: index, at: moment)
            }
        case .ourStreamReached(let card, let a2dp, let deliberately):
            return profileSwitchReached(card: card, a2dp: a2dp, at: moment)
                + (deliberately ? switchesFollowUser(to: card, at: moment) : [])
        case .ourStreamGone:
            // Judged with what interrupts (above).
            return []
        }
    }

    /// Captures that have recorded for the probe's time count as calls now, in client order.
    private mutating func countProbes(at moment: Moment) -> [Event] {
        let due = probing.filter { $0.value <= moment }
        return due.keys.sorted().map { client in
            probing[client] = nil
            microphoneCalls.insert(client)
            return .interruptionBegan(.microphoneCapture(client: client), at: moment)
        }
    }

    /// Our sink went away: an unplug, unless its Bluetooth card stays in (or has not yet been seen leaving) A2DP.
    private mutating func ourSinkRemoved(_ card: BluetoothCard?, at moment: Moment, timing: CallTiming) -> [Event] {
        guard let card else { return [.outputLost(.deviceRemoved)] }
        // The call sink of a switch in progress goes away on the way back to A2DP.
        guard profileSwitches[card.index] == nil else { return [] }
        let phase: ProfileSwitch
        switch card.profile {
        case .withoutSink: return [.outputLost(.deviceRemoved)]
        case .a2dp: phase = .pending(until: moment.advanced(by: timing.profileSwitchSettleMilliseconds))
        case .call: phase = .call
        }
        profileSwitches[card.index] = phase
        return [.interruptionBegan(.profileSwitch(card: card.index), at: moment)]
    }

    /// A Bluetooth card changed profile: a switch in progress on it moves on.
    private mutating func cardChanged(_ card: BluetoothCard, at moment: Moment, timing: CallTiming) -> [Event] {
        guard let phase = profileSwitches[card.index] else { return [] }
        switch (card.profile, phase) {
        case (.withoutSink, .movedAway), (.a2dp, .movedAway):
            return switchEnded(card: card.index, at: moment)
        case (.withoutSink, _):
            return switchTurnedIntoUnplug(card: card.index, at: moment)
        case (.a2dp, .call):
            // Back on it: the end waits for our stream, for a while.
            profileSwitches[card.index] = .returning(
                until: moment.advanced(by: timing.profileSwitchSettleMilliseconds))
            return []
        case (.a2dp, _), (.call, .movedAway):
            // Not yet left A2DP, or back on it already; or the user took our stream elsewhere.
            return []
        case (.call, _):
            profileSwitches[card.index] = .call
            return []
        }
    }

    /// Our stream is on a sink of `card` now: if it is an A2DP sink of a card with a switch in progress, the switch is
    /// over.
    private mutating func profileSwitchReached(card: UInt32?, a2dp: Bool, at moment: Moment) -> [Event] {
        guard a2dp, let card, let phase = profileSwitches[card] else { return [] }
        switch phase {
        case .call, .returning, .movedAway:
            return switchEnded(card: card, at: moment)
        case .pending:
            // The card never left A2DP: our sink was removed for another reason (a codec switch recreates it).
            return switchTurnedIntoUnplug(card: card, at: moment)
        }
    }

    /// A deliberate move of our stream to a sink of `card` during profile switches: for the switch of another card,
    /// the stream is where the user wants it. In a call profile the switch then ends with the card's return to A2DP;
    /// back in A2DP already, it ends now.
    private mutating func switchesFollowUser(to card: UInt32?, at moment: Moment) -> [Event] {
        profileSwitches.keys.sorted().filter { $0 != card }.flatMap { other -> [Event] in
            switch profileSwitches[other] {
            case .call?:
                profileSwitches[other] = .movedAway
                return []
            case .returning?: return switchEnded(card: other, at: moment)
            default: return []
            }
        }
    }

    /// Ends the switch on `card` as the call it was: the music may resume (rule 5).
    private mutating func switchEnded(card: UInt32, at moment: Moment) -> [Event] {
        profileSwitches[card] = nil
        return [.interruptionEnded(.profileSwitch(card: card), resumeAllowed: true, at: moment)]
    }

    /// Ends the switch on `card` as the output loss it turned out to be: our stream was taken off the headset by the
    /// server, not moved by the user, so it must not resume where it was left. The loss first, so the rules forget
    /// the wish to resume before the source ends.
    private mutating func switchTurnedIntoUnplug(card: UInt32, at moment: Moment) -> [Event] {
        profileSwitches[card] = nil
        return [
            .outputLost(.deviceRemoved),
            .interruptionEnded(.profileSwitch(card: card), resumeAllowed: false, at: moment),
        ]
    }
}

/// How long the rules wait on a call's signals (part of the rules' configuration, `ResumePolicy.callTiming`).
public struct CallTiming: Hashable, Sendable {
    /// How long an application must record from a microphone before it counts as a call: 400 ms. A page that asks
    /// for the device list opens no stream at all; a microphone check or a permission probe opens one for a moment
    /// and closes it, and Chromium opens its capture corked and uncorks it only to record. A call's far end takes far
    /// longer than this to answer, so the music still pauses before anyone speaks, and WirePlumber 0.5 waits 500 ms
    /// after a capture links before it switches a headset for it, for the same reason.
    public var microphoneProbeMilliseconds: Int64
    /// How long a Bluetooth profile switch waits for our stream to reach the card's A2DP sink, when our sink went away
    /// with the card still in A2DP (a call, or an unplug not yet seen) or once the card is back in A2DP: 3 s. The
    /// servers move our stream there within milliseconds of the card's change; past this bound the switch ends as an
    /// unplug, without a resume, so no wait is unbounded.
    public var profileSwitchSettleMilliseconds: Int64

    /// The defaults above.
    public static let standard = CallTiming(microphoneProbeMilliseconds: 400, profileSwitchSettleMilliseconds: 3_000)

    /// A timing.
    public init(microphoneProbeMilliseconds: Int64, profileSwitchSettleMilliseconds: Int64) {
        self.microphoneProbeMilliseconds = microphoneProbeMilliseconds
        self.profileSwitchSettleMilliseconds = profileSwitchSettleMilliseconds
    }
}
