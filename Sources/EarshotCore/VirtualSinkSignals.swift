// Rules 10 and 11 for the devices behind a virtual sink (shared/RULES.md, the rows "output lost" and "route changed"):
// when our sink is virtual (a null sink whose monitor a loopback plays to a device, a combine sink, a filter), the
// translator follows what carries its audio on (PulseOutput's VirtualSinkChain) and reports what the server did to
// it, as facts (`Event.virtualSinkSignal`); whether that is an output loss or a deliberate route change is decided
// here (`OutputFactJudge`), with our sink's port changes (PortChanges.swift).

/// What is known of the sink a carrier of our virtual sink's audio left.
public enum LeftSink: Hashable, Sendable, CustomStringConvertible {
    /// Its removal was reported (`sinkBehindRemoved`) before the carrier was seen elsewhere.
    case removalReported
    /// It still exists.
    case exists
    /// Nothing: it is gone, and its removal was not reported (or it was never described).
    case unknown

    /// `removalReported`, `exists` or `unknown`.
    public var description: String {
        switch self {
        case .removalReported: return "removalReported"
        case .exists: return "exists"
        case .unknown: return "unknown"
        }
    }
}

/// A fact about what carries our virtual sink's audio on to a device, in the translator's words: what the server said,
/// never what to do about it.
public enum VirtualSinkSignal: Hashable, Sendable, CustomStringConvertible {
    /// A sink behind our virtual sink (a device its loopback, combine sink or filter plays on, or a virtual sink
    /// between) was removed.
    case sinkBehindRemoved
    /// A carrier (a module's stream taking our sink's audio on) is now on another sink; `left` is what is known of the
    /// sink it played on before.
    case carrierMoved(left: LeftSink)

    /// The signal's kind, e.g. `carrierMoved(exists)`.
    public var description: String {
        switch self {
        case .sinkBehindRemoved: return "sinkBehindRemoved"
        case .carrierMoved(let left): return "carrierMoved(\(left))"
        }
    }
}

/// The rules' judgement of the facts the translator reports about our output (our sink's ports, the carriers behind a
/// virtual sink), before the rules apply what they amount to. Stateless: each report carries what it needs.
public enum OutputFactJudge {
    /// The events `event` amounts to: a fact about our output judged into the loss, route change or appearance it means
    /// (none when nothing that matters changed), any other event unchanged.
    public static func judge(_ event: Event) -> [Event] {
        switch event {
        case .sinkPortsChanged(let previous, let current):
            return PortJudge.judge(previous: previous, current: current).map { [$0.event] } ?? []
        case .virtualSinkSignal(let signal):
            return judge(signal).map { [$0] } ?? []
        default:
            return [event]
        }
    }

    /// What a change behind our virtual sink amounts to, or nil for nothing.
    public static func judge(_ signal: VirtualSinkSignal) -> Event? {
        switch signal {
        case .sinkBehindRemoved:
            // The device the user hears our audio on is gone: the server moves the carrier on (to the default sink),
            // and the music would go on out loud.
            return .outputLost(.deviceRemoved)
        case .carrierMoved(.removalReported):
            // The removal was the loss; this is the server putting the carrier elsewhere (PulseAudio's default sink).
            return nil
        case .carrierMoved(.exists):
            // A deliberate move (pavucontrol, `pactl move-sink-input`): keep playing (rule 11).
            return .routeChanged
        case .carrierMoved(.unknown):
            // Unknown origin is no permission to play.
            return .outputLost(.deviceRemoved)
        }
    }
}
