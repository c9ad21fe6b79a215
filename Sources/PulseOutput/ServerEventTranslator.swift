// Turns what the server reports about sinks and other streams into EarshotCore events. Pure: no libpulse,
// no clock (the caller passes the moment), so every path is tested with snapshots. The libpulse callbacks
// feed it through the service's serial owner, one notification at a time.
import EarshotCore

/// Tracks our sink and the trigger-role streams of the session, and says which events a server notification means.
///
/// Bluetooth profile switches (RULES.md rule 17)
/// ---------------------------------------------
/// A call that opens a headset's microphone makes the server replace our A2DP sink by the headset's HFP/HSP sink
/// while the card stays: PulseAudio 16's module-bluetooth-policy switches every Bluetooth card in `a2dp_sink` to
/// `handsfree_head_unit` or `headset_head_unit` as soon as a capture stream with `media.role=phone` starts on any
/// source; WirePlumber 0.5 switches 500 ms after a capture stream links to the headset's loopback source
/// (`bluez_input.ADDR`, a source of the headset's device). The notices come in no fixed order: PulseAudio posts SINK
/// REMOVE, SINK NEW and then CARD CHANGE, but a removal needs no follow-up query and so overtakes the replies to
/// earlier queries (the capture stream's own description among them); pipewire-pulse reports the device's new
/// profile before or after the node goes. So nothing waits: every notice moves the switch on from what is known.
/// The card staying and leaving A2DP for a profile with a sink is the switch itself (RULES.md, the interruption
/// row), with or without a call to be seen: the user picks the headset profile in the sound settings, or a session
/// manager switches before the call's capture is described (the fake headset's bare switch, measured on 0.3.65,
/// 1.4.2 and 1.6.9: the node goes, then the card says `headset-head-unit`, and nothing records).
///
/// The translator reports what it sees as `CallSignal`s (our sink removed with its card's profile, a Bluetooth card's
/// change or removal, our stream reaching a sink, our stream gone); the rules decide (EarshotCore's CallSignals.swift,
/// `CallJudge`), with the settle time as a rule parameter (`CallTiming`), as below.
///
/// Our sink is removed (SINK REMOVE, or the moved callback finding the old sink gone, whichever comes first):
/// - its card is unknown, gone or not Bluetooth                             -> outputLost(deviceRemoved)
/// - its card is already in a profile without a sink (`off`)                -> outputLost(deviceRemoved)
/// - its card is already in another profile with a sink                     -> interruptionBegan(profile#N): a call
/// - its card is still in A2DP as far as we know (CARD CHANGE not yet seen) -> interruptionBegan(profile#N): pending
/// - its card has a switch in progress (the call sink goes on the way back) -> nothing
/// A pending switch then becomes:
/// - a call, on CARD CHANGE to another profile with a sink                  -> nothing to report
/// - an unplug, when our stream reaches an A2DP sink of a card that never left A2DP (not a profile switch: a codec
///   switch, or a sink recreated for another reason)                        -> outputLost, interruptionEnded(no resume)
/// Pending or a call:
/// - CARD REMOVE, or CARD CHANGE to a profile without a sink                -> outputLost, interruptionEnded(no resume)
/// - our stream is gone                                                     -> interruptionEnded(no resume)
/// A call, back in A2DP, or moved away:
/// - our stream reaches an A2DP sink of the card                            -> interruptionEnded(resume allowed)
/// A call:
/// - CARD CHANGE back to A2DP                                               -> nothing yet: back in A2DP
/// - a deliberate move of our stream to a sink of another device            -> nothing yet: moved away
/// Back in A2DP:
/// - a deliberate move of our stream to a sink of another device            -> interruptionEnded(resume allowed)
/// Moved away (the user put the paused music on another device during the call):
/// - CARD CHANGE back to A2DP or to a profile without a sink, CARD REMOVE   -> interruptionEnded(resume allowed)
/// Pending, or back in A2DP, and our stream not on the card's A2DP sink `profileSwitchSettleMilliseconds` later (the
/// rules' timer): the server left it elsewhere -> outputLost, interruptionEnded(no resume)
///
/// The quiet comes at once either way: rules 1 and 10 both cork, and the removal of our sink is what either one
/// answers (the stream itself never corks; the owner does, as the rules say). A pending switch that turns out to be
/// an unplug therefore costs nothing audible; the reducer sees the loss a few milliseconds later, when the card's
/// removal arrives, and being quiet already it keeps what the stream holds instead of flushing it (as for any loss
/// during an interruption).
///
/// The switch ends when our stream is on an A2DP sink of the card again, judged by that sink's own Bluetooth profile
/// (whatever the card's last description says), not when such a sink merely appears: PulseAudio 16 moves our stream
/// to the default sink (often the speakers) when the old one is unlinked, and back only once the new A2DP sink is
/// the default again or our stream's preferred sink, so resuming on the sink's appearance could play out loud.
/// Nothing promises that a session manager moves it back (the one time it seemed not to, WirePlumber 0.4.13 had
/// switched the card `off` from a kept profile: docs/measured.md), and a switch that never ended would hold every
/// later `play` (rule 9). So a switch whose card is back in A2DP, or that is still pending, has a bound, after which
/// it ends as an unplug would: our stream was taken off the headset by the server, not moved by the user, so it must
/// not resume where it was left (not even when another call ends later with a resume), and the user's `play` plays
/// where the stream is.
///
/// A deliberate move (off a sink that still exists, `ourStreamMovedOffExistingSink`) to a sink of another device is the
/// user's choice, or the desktop's when its default changes: the call still pauses us, but its end no longer depends on
/// the headset getting our stream back, so the switch ends with the card's return to A2DP (RULES.md's own words for
/// it) and the music resumes where the user put it. The servers' own moves between the headset's sinks (PulseAudio
/// moves our stream from the sink it rescued it to onto the head unit sink, and back onto the new A2DP sink) also leave
/// a sink that still exists, so only a move to another device's sink counts.
///
/// Calls inferred from microphone captures (RULES.md, the interruption row; CaptureCalls.swift)
/// ------------------------------------------------------------------------------------------
/// Almost no calling application sets `media.role=phone`; every call has another application's running capture from a
/// microphone. A capture is a call when it runs (not corked), has a client and no owner module, is no filter's half
/// (`node.link-group`), no level meter (`peaks`, `stream.monitor`), no recording of a sink or a stream
/// (`stream.capture.sink`, a monitor source), records from a source known not to be a monitor (a virtual source that
/// stands for the microphone, echo-cancel's or an effects tool's, counts; the filter's own capture of the device has an
/// owner module or a link group and does not), is not Earshot's own, not ignored by configuration, and, with
/// `callDetection: knownApps`, is made by a known calling application. A capture once seen recording an output stays a
/// recording when the server moves it to a microphone (PulseAudio moves a removed sink's monitor recorders to the
/// default source). Per application (client index):
/// The translator reports each application recording so (`microphoneCaptureRunning`, with since when) and its stop
/// (`microphoneCaptureStopped`, and whether its source was lost); the rules count the probe and decide the rest:
/// - its first such capture has run `microphoneProbeMilliseconds` (a signal or the rules' timer)
///                                                                        -> interruptionBegan(microphone#N)
/// - its last such capture is removed, corks or changes into an excluded kind
///                                                                        -> interruptionEnded(microphone#N, resume)
/// - its last such capture stops counting because its source went away or it lost its client (unknown is no
///   permission to play: a microphone unplugged mid-call, the capture moved on) -> interruptionEnded(microphone#N, no
///   resume)
/// - our stream is gone (the server's description is forgotten)           -> interruptionEnded(microphone#N, no resume)
/// A capture that opens a Bluetooth headset's microphone is such a call, and the profile switch it brings is a source
/// of its own (above): the reducer nests the two (rules 3 and 4), so the music resumes when both have ended.
///
/// The device behind a virtual sink (RULES.md, output lost and route changed)
/// ---------------------------------------------------------------------------
/// When our sink is virtual (a null sink whose monitor a loopback plays to a device, a combine sink, a filter), our
/// own stream never moves when the device goes: the server moves the loopback instead (to the default sink), and the
/// music goes on out loud. So the translator follows the chain (VirtualSinkChain.swift: module-owned sink-inputs
/// fed from our sink's monitor or owned by our sink's module, and the sinks they play on, in turn) and watches the
/// sinks behind ours. It reports what it sees as `VirtualSinkSignal`s, and the rules decide (EarshotCore's
/// VirtualSinkSignals.swift, `OutputFactJudge`), as below:
/// - SINK REMOVE of a sink behind ours         -> sinkBehindRemoved             -> outputLost(deviceRemoved)
/// - a carrier then seen on another sink       -> carrierMoved(removalReported) -> nothing (the server's move)
/// - a carrier elsewhere, its old sink there   -> carrierMoved(exists)          -> routeChanged (the user's)
/// - a carrier elsewhere, its old sink unknown -> carrierMoved(unknown)         -> outputLost(deviceRemoved)
/// - a carrier, capture stream or monitor coming or going -> nothing (the chain is followed again)
/// The sequences the servers send (measured with `module-loopback source=fx.monitor sink=headphones` and the
/// headphones' module unloaded): PulseAudio 16.1 posts the loopback's SINK_INPUT CHANGE (moved to the default sink)
/// before SINK REMOVE, but that change needs a query and the removal does not, so the removal reaches the translator
/// first and the move comes after it (then one more CHANGE). pipewire-pulse 0.3.65 and 1.4.2 report SINK REMOVE and
/// SOURCE REMOVE, and no change of the loopback's sink-input at all (WirePlumber relinks it silently); a user's
/// `pactl move-sink-input` of the loopback is not reported there either, so on PipeWire a deliberate move is only
/// ever seen as nothing: Earshot keeps playing (right), but keeps watching the old device, whose later removal then
/// pauses it (the safe side: unknown is no permission to play).
public struct ServerEventTranslator: Sendable {
    /// Stream roles that interrupt us (default `phone`).
    public var triggerRoles: Set<String>
    /// Where a trigger-role stream must play to interrupt us.
    public var scope: InterruptionScope
    /// The sink our stream plays on, as last seen (nil before the stream is ready).
    public private(set) var ourSink: SinkSnapshot?
    /// Our own sink-input, which is never an interruption source.
    public private(set) var ourSinkInputIndex: UInt32?
    /// Every known stream with a trigger role, wherever it plays.
    private var triggerStreams: [UInt32: SinkInputSnapshot] = [:]
    /// The trigger streams that currently interrupt us.
    public private(set) var activeTriggers: Set<UInt32> = []
    /// Whether the removal of `ourSink` has already been decided (by SINK REMOVE or by the moved callback).
    private var ourSinkRemovalDecided = false
    /// Whether our stream's last move left a sink that still exists, not yet followed by where it is now.
    private var movedOffExistingSink = false
    /// The server's cards, by index, as last described.
    private var cards: [UInt32: CardSnapshot] = [:]
    /// What carries our sink's audio on to devices, when our sink is virtual. It also keeps the server's sources and
    /// capture streams, which calls are inferred from.
    private var chain = VirtualSinkChain()

    /// The sinks behind our virtual sink (the devices its loopbacks, combine sink or filter play on, and any virtual
    /// sinks between), by index; empty when our sink is a device.
    public var sinksBehindOurSink: Set<UInt32> { chain.sinksBehind }

    /// The applications recording from a microphone (see CaptureCalls.swift and the type's notes).
    private var calls: CaptureCalls
    /// The duck-role streams of the session (rule 20, DuckStreams.swift).
    public private(set) var ducks: DuckStreams

    /// The applications (client indices) reported as recording from a microphone (`microphoneCaptureRunning`).
    public var recordingApplications: Set<UInt32> { calls.reported }

    /// A translator for `triggerRoles` within `scope`, inferring calls from captures as `callDetection` says.
    public init(
        triggerRoles: Set<String> = ["phone"], scope: InterruptionScope = .session,
        callDetection: CallDetectionSettings = CallDetectionSettings(), duckRoles: Set<String> = ["a11y", "event"]
    ) {
        self.triggerRoles = triggerRoles
        self.scope = scope
        ducks = DuckStreams(roles: duckRoles)
        calls = CaptureCalls(settings: callDetection)
    }

    /// Our stream is (now) on `sink` as sink-input `sinkInputIndex`: after it became ready or moved. Trigger
    /// streams are weighed again, since "on our sink" may have changed.
    public mutating func ourStreamIsOn(
        _ sink: SinkSnapshot, sinkInputIndex: UInt32?, at moment: Moment
    ) -> [Event] {
        ourSink = sink
        ourSinkInputIndex = sinkInputIndex
        ourSinkRemovalDecided = false
        let deliberate = movedOffExistingSink
        movedOffExistingSink = false
        triggerStreams[sinkInputIndex ?? UInt32.max] = nil
        chain.startsAt(sink)
        // Calls on the new sink first: a profile switch ending here must not resume into one.
        return reweigh(at: moment) + [.callSignal(.ourStreamReached(
            card: sink.cardIndex, a2dp: sink.isA2DP, deliberately: deliberate), at: moment)]
    }

    /// The server moved our stream off a sink that still exists: a deliberate move (the user's, or the desktop's
    /// default changing), which is a route change. Call it before telling the translator where the stream is now: a
    /// profile switch in progress takes a sink of another device as the user's choice (see the type's notes).
    public mutating func ourStreamMovedOffExistingSink() -> [Event] {
        movedOffExistingSink = true
        return [.routeChanged]
    }

    /// Our stream is gone (server lost, stream closed): nothing can interrupt it now, and the rules end what did
    /// (`CallSignal.ourStreamGone`: without permission to resume, since it did not really end). What is known of
    /// the server's cards, sources and capture streams is forgotten too: the owner describes them again with the next
    /// stream (an index of a server that went away may name something else on the next one).
    public mutating func ourStreamIsGone(at moment: Moment) -> [Event] {
        ourSink = nil
        ourSinkInputIndex = nil
        ourSinkRemovalDecided = false
        movedOffExistingSink = false
        activeTriggers = []
        triggerStreams = [:]
        cards = [:]
        chain = VirtualSinkChain()
        calls.forget()
        return [.callSignal(.ourStreamGone, at: moment)] + ducks.forget()
    }

    /// A sink-input appeared or changed. A loopback (or another carrier of our virtual sink, see the type's notes)
    /// on another sink than before was moved.
    public mutating func sinkInputChanged(_ input: SinkInputSnapshot, at moment: Moment) -> [Event] {
        guard input.index != ourSinkInputIndex else { return [] }
        let moved = chain.streamDescribed(input) + ducks.described(input)
        guard let role = input.mediaRole, triggerRoles.contains(role) else {
            // A stream whose role changed away from a trigger role stops counting.
            triggerStreams[input.index] = nil
            return moved + reweigh(at: moment)
        }
        triggerStreams[input.index] = input
        return moved + reweigh(at: moment)
    }

    /// A sink-input went away.
    public mutating func sinkInputRemoved(_ index: UInt32, at moment: Moment) -> [Event] {
        triggerStreams[index] = nil
        chain.streamRemoved(index)
        return ducks.removed(index) + reweigh(at: moment)
    }

    /// A sink appeared: a device was plugged in (never a reason to play).
    public mutating func sinkAdded(_ sink: SinkSnapshot) -> [Event] {
        chain.sinkDescribed(sink)
        return sink.index == ourSink?.index ? [] : [.outputAppeared]
    }

    /// A sink changed (or was listed); for our sink, a change of its ports is reported with the last description
    /// (a wired jack: the sink stays and only its ports change), for the rules to judge (`PortJudge`).
    public mutating func sinkChanged(_ sink: SinkSnapshot) -> [Event] {
        chain.sinkDescribed(sink)
        guard let previous = ourSink, previous.index == sink.index else { return [] }
        ourSink = sink
        let before = previous.portFacts, after = sink.portFacts
        return before == after ? [] : [.sinkPortsChanged(from: before, to: after)]
    }

    /// A sink was removed. Ours going away is a device removal, or a Bluetooth profile switch when its card stays
    /// (see the type's notes), whichever of this and `ourStreamLeftRemovedSink` comes first. A device behind our
    /// virtual sink going away is reported for the rules (`sinkBehindRemoved`, an output loss).
    public mutating func sinkRemoved(_ index: UInt32, at moment: Moment) -> [Event] {
        guard index == ourSink?.index else { return chain.sinkRemoved(index) }
        return ourSinkWentAway(at: moment)
    }

    /// The server moved our stream off a sink that no longer exists (the moved callback could not find the old sink).
    /// Call it before telling the translator where the stream is now. The same removal as `sinkRemoved` when that
    /// came first; when the old sink is unknown it is a device removal, since unknown origin is no permission to play.
    public mutating func ourStreamLeftRemovedSink(at moment: Moment) -> [Event] {
        movedOffExistingSink = false
        guard ourSink != nil else { return [.callSignal(.ourSinkRemoved(bluetooth: nil), at: moment)] }
        return ourSinkWentAway(at: moment)
    }

    /// A card appeared or changed: a Bluetooth card's profile is reported (a profile switch in progress moves on).
    public mutating func cardChanged(_ card: CardSnapshot, at moment: Moment) -> [Event] {
        cards[card.index] = card
        guard card.isBluetooth else { return [] }
        return [.callSignal(.cardChanged(BluetoothCard(index: card.index, profile: Self.activeProfileKind(of: card))),
                            at: moment)]
    }

    /// A card was removed (a headset disconnected): reported for a Bluetooth card.
    public mutating func cardRemoved(_ index: UInt32, at moment: Moment) -> [Event] {
        guard let card = cards.removeValue(forKey: index), card.isBluetooth else { return [] }
        return [.callSignal(.cardRemoved(index: index), at: moment)]
    }

    /// A source appeared or changed: a capture waiting for its source to be known is judged now.
    public mutating func sourceChanged(_ source: SourceSnapshot, at moment: Moment) -> [Event] {
        chain.sourceDescribed(source)
        return reweighCalls(at: moment)
    }

    /// A source was removed: the calls recording from it end, without a resume (a capture the server moves elsewhere
    /// is judged again when its change arrives, as a new one).
    public mutating func sourceRemoved(_ index: UInt32, at moment: Moment) -> [Event] {
        chain.sourceRemoved(index)
        return reweighCalls(at: moment)
    }

    /// A capture stream appeared or changed: another application's running capture from a microphone is a call once
    /// it has run `CallDetectionSettings.delayMilliseconds` (CaptureCalls.swift). A loopback's carries our virtual
    /// sink's audio on.
    public mutating func sourceOutputChanged(_ capture: SourceOutputSnapshot, at moment: Moment) -> [Event] {
        chain.captureDescribed(capture)
        return reweighCalls(at: moment)
    }

    /// A capture stream listed with the server's inventory when our stream opened: it was running before, so it counts
    /// at once when it is a call (no probe to wait out), and a playing player is paused before it is uncorked.
    public mutating func sourceOutputListed(_ capture: SourceOutputSnapshot, at moment: Moment) -> [Event] {
        chain.captureDescribed(capture)
        return reweighCalls(at: moment, alreadyRunning: [capture.index])
    }

    /// A capture stream went away: its application's call ends with its last counting capture. A profile switch goes
    /// on until our stream is back on A2DP.
    public mutating func sourceOutputRemoved(_ index: UInt32, at moment: Moment) -> [Event] {
        chain.captureRemoved(index)
        return reweighCalls(at: moment)
    }

    /// Why `capture` is not a call as things stand, or nil when it is one (for tests and debug logs).
    public func callExclusion(of capture: SourceOutputSnapshot) -> CaptureExclusion? {
        if calls.recordersOfOutput.contains(capture.index) { return .recordsOutput }
        return calls.settings.exclusion(of: capture, source: chain.sources[capture.sourceIndex])
    }

    /// The application name of a capture of `client`, for a debug log line only (never at the default level).
    public func applicationName(ofClient client: UInt32) -> String? {
        let capture = chain.captures.values.first { $0.clientIndex == client }
        return capture.flatMap { $0.applicationName ?? $0.applicationBinary }
    }

    private mutating func reweighCalls(at moment: Moment, alreadyRunning: Set<UInt32> = []) -> [Event] {
        calls.reweigh(captures: chain.captures, sources: chain.sources, at: moment, alreadyRunning: alreadyRunning)
    }

    // MARK: Bluetooth profile switches

    /// What a card's active profile offers our stream.
    private static func activeProfileKind(of card: CardSnapshot) -> CardProfileKind {
        guard let profile = card.activeProfile, profile.sinkCount > 0 else { return .withoutSink }
        return profile.isA2DP ? .a2dp : .call
    }

    /// Reports the removal of `ourSink` once per sink, with its card when that is a known Bluetooth card (the rules
    /// tell a profile switch from an unplug, see the type's notes).
    private mutating func ourSinkWentAway(at moment: Moment) -> [Event] {
        guard !ourSinkRemovalDecided else { return [] }
        ourSinkRemovalDecided = true
        guard let cardIndex = ourSink?.cardIndex, let card = cards[cardIndex], card.isBluetooth else {
            return [.callSignal(.ourSinkRemoved(bluetooth: nil), at: moment)]
        }
        let described = BluetoothCard(index: cardIndex, profile: Self.activeProfileKind(of: card))
        return [.callSignal(.ourSinkRemoved(bluetooth: described), at: moment)]
    }

    /// Compares the trigger streams with the active set and reports the differences, in index order.
    private mutating func reweigh(at moment: Moment) -> [Event] {
        let interrupting = Set(triggerStreams.values.filter { input in
            !input.corked && !input.muted && (scope == .session || input.sinkIndex == ourSink?.index)
        }.map(\.index))
        let began = interrupting.subtracting(activeTriggers).sorted()
        let ended = activeTriggers.subtracting(interrupting).sorted()
        activeTriggers = interrupting
        return ended.map { Event.interruptionEnded(.triggerStream(index: $0), resumeAllowed: true, at: moment) }
            + began.map { Event.interruptionBegan(.triggerStream(index: $0), at: moment) }
    }
}
