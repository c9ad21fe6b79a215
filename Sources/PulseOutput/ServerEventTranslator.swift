// Turns what the server reports about sinks and other streams into EarshotCore events. Pure: no libpulse,
// no clock (the caller passes the moment), so every path is tested with snapshots. The libpulse callbacks
// feed it through the service's serial owner, one notification at a time.
import EarshotCore

/// Tracks our sink and the trigger-role streams of the session, and says which events a server notification means.
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

    /// A translator for `triggerRoles` within `scope`.
    public init(triggerRoles: Set<String> = ["phone"], scope: InterruptionScope = .session) {
        self.triggerRoles = triggerRoles
        self.scope = scope
    }

    /// Our stream is (now) on `sink` as sink-input `sinkInputIndex`: after it became ready or moved. Trigger
    /// streams are weighed again, since "on our sink" may have changed.
    public mutating func ourStreamIsOn(
        _ sink: SinkSnapshot, sinkInputIndex: UInt32?, at moment: Moment
    ) -> [Event] {
        ourSink = sink
        ourSinkInputIndex = sinkInputIndex
        triggerStreams[sinkInputIndex ?? UInt32.max] = nil
        return reweigh(at: moment)
    }

    /// Our stream is gone (server lost, stream closed): nothing can interrupt it now. Active trigger
    /// streams end without permission to resume, since they did not really end.
    public mutating func ourStreamIsGone(at moment: Moment) -> [Event] {
        ourSink = nil
        ourSinkInputIndex = nil
        let ended = activeTriggers.sorted().map {
            Event.interruptionEnded(.triggerStream(index: $0), resumeAllowed: false, at: moment)
        }
        activeTriggers = []
        triggerStreams = [:]
        return ended
    }

    /// A sink-input appeared or changed.
    public mutating func sinkInputChanged(_ input: SinkInputSnapshot, at moment: Moment) -> [Event] {
        guard input.index != ourSinkInputIndex else { return [] }
        guard let role = input.mediaRole, triggerRoles.contains(role) else {
            // A stream whose role changed away from a trigger role stops counting.
            triggerStreams[input.index] = nil
            return reweigh(at: moment)
        }
        triggerStreams[input.index] = input
        return reweigh(at: moment)
    }

    /// A sink-input went away.
    public mutating func sinkInputRemoved(_ index: UInt32, at moment: Moment) -> [Event] {
        triggerStreams[index] = nil
        return reweigh(at: moment)
    }

    /// A sink appeared: a device was plugged in (never a reason to play).
    public mutating func sinkAdded(_ sink: SinkSnapshot) -> [Event] {
        sink.index == ourSink?.index ? [] : [.outputAppeared]
    }

    /// A sink changed; for our sink, its ports are compared with the last snapshot (wired jack).
    public mutating func sinkChanged(_ sink: SinkSnapshot) -> [Event] {
        guard let previous = ourSink, previous.index == sink.index else { return [] }
        ourSink = sink
        switch PortClassifier.classify(previous: previous, current: sink) {
        case .activePortUnavailable?, .switchedAwayFromHeadphones?: return [.outputLost(.portUnplugged)]
        case .portBecameAvailable?: return [.outputAppeared]
        case nil: return []
        }
    }

    /// A sink was removed. Ours going away is a device removal, whichever of this and the moved callback
    /// comes first (PipeWire reports the removal first; PulseAudio moves us first).
    public mutating func sinkRemoved(_ index: UInt32) -> [Event] {
        guard index == ourSink?.index else { return [] }
        return [.outputLost(.deviceRemoved)]
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
