// Rules 10, 11 and 12 for our sink's ports (shared/RULES.md, the rows "output lost", "route changed" and "output
// appeared"): a wired headphone unplug keeps the sink and only changes its ports (the server sends CARD CHANGE and SINK
// CHANGE, nothing is removed and our stream is not moved), so the translator reports our sink's ports before and after
// each change it sees, as facts (`Event.sinkPortsChanged`), and whether that is a loss, a deliberate port choice or a
// replug is decided here (`PortJudge`, through `OutputFactJudge`), before the rules react to what it amounts to.

/// One port of our sink, in the translator's words: what the server said about it, never what to do about it.
public struct SinkPort: Hashable, Sendable {
    /// Whether something is plugged into the port, as far as the hardware can tell (jack detection).
    public enum Availability: Hashable, Sendable, CustomStringConvertible {
        /// No jack detection for this port: it may or may not be usable.
        case unknown
        /// Unplugged.
        case unplugged
        /// Plugged in.
        case plugged

        /// `unknown`, `unplugged` or `plugged`.
        public var description: String {
            switch self {
            case .unknown: return "unknown"
            case .unplugged: return "unplugged"
            case .plugged: return "plugged"
            }
        }
    }

    /// The port's name (the server's, e.g. `analog-output-headphones`): what tells two descriptions of a port apart.
    public var name: String
    /// Whether the port leads to something only the wearer hears (headphones, a headset). A reading of the server's
    /// description, which is the translator's (the port's type, or its name when the server does not know the type);
    /// what it means for the music is decided here.
    public var headphoneLike: Bool
    /// Whether something is plugged in.
    public var availability: Availability

    /// A port description.
    public init(name: String, headphoneLike: Bool, availability: Availability) {
        self.name = name
        self.headphoneLike = headphoneLike
        self.availability = availability
    }
}

/// Our sink's ports and which one is active, as one description of the server's.
public struct SinkPorts: Hashable, Sendable, CustomStringConvertible {
    /// Every port of the sink (none for null sinks and network sinks).
    public var ports: [SinkPort]
    /// The name of the active port, if the sink has ports.
    public var activeName: String?

    /// A description of a sink's ports.
    public init(ports: [SinkPort] = [], activeName: String? = nil) {
        self.ports = ports
        self.activeName = activeName
    }

    /// The active port, when it is among the ports.
    public var active: SinkPort? {
        guard let activeName else { return nil }
        return ports.first { $0.name == activeName }
    }

    /// The port named `name`, if the sink has it.
    func port(named name: String) -> SinkPort? { ports.first { $0.name == name } }

    /// The active port's kind and availability, with no names, e.g. `headphones plugged, 2 ports`.
    public var description: String {
        let active = self.active.map { "\($0.headphoneLike ? "headphones" : "other") \($0.availability)" } ?? "none"
        return "\(active), \(ports.count) ports"
    }
}

/// What a change of our sink's ports means for a player on it.
public enum PortChange: Hashable, Sendable, CustomStringConvertible {
    /// The active port is now unplugged: the output the user was hearing is gone.
    case activePortUnavailable
    /// The active port switched from headphones or a headset to something else while those are no longer known to
    /// be plugged in, typically the built-in speakers after a jack unplug: continuing would play out loud.
    case switchedAwayFromHeadphones
    /// The active port switched away from headphones or a headset that are still plugged in: someone chose another
    /// port (pavucontrol, `pactl set-sink-port`), a route change, not a loss.
    case activePortChosen
    /// A port became plugged in (unplugged to plugged, or a new port that appeared plugged in): a replug.
    case portBecameAvailable

    /// The event it amounts to for the rules: an output loss (rule 10), a route change (rule 11), an appearance
    /// (rule 12).
    public var event: Event {
        switch self {
        case .activePortUnavailable, .switchedAwayFromHeadphones: return .outputLost(.portUnplugged)
        case .activePortChosen: return .routeChanged
        case .portBecameAvailable: return .outputAppeared
        }
    }

    /// The change's name.
    public var description: String {
        switch self {
        case .activePortUnavailable: return "activePortUnavailable"
        case .switchedAwayFromHeadphones: return "switchedAwayFromHeadphones"
        case .activePortChosen: return "activePortChosen"
        case .portBecameAvailable: return "portBecameAvailable"
        }
    }
}

/// The rules' judgement of our sink's port changes: stateless, since each report carries both descriptions
/// (`OutputFactJudge` applies it to the translator's `sinkPortsChanged`).
public enum PortJudge {
    /// The most important change between two descriptions of one sink's ports, or nil when nothing that matters
    /// changed. A loss wins over an appearance: a jack unplug can make one port unavailable and another available in
    /// the same update.
    public static func judge(previous: SinkPorts, current: SinkPorts) -> PortChange? {
        let before = previous.active
        let after = current.active

        if let after, after.availability == .unplugged {
            let alreadyUnavailable = before?.name == after.name && before?.availability == .unplugged
            if !alreadyUnavailable {
                return .activePortUnavailable
            }
        }

        if let before, before.headphoneLike, before.name != after?.name {
            // Headphones to a headset (a Bluetooth profile switch for a call) still sounds only for the wearer.
            if after?.headphoneLike != true {
                // Still plugged in: a choice. Gone, unplugged or of unknown availability: no permission to play.
                let stillPlugged = current.port(named: before.name)?.availability == .plugged
                return stillPlugged ? .activePortChosen : .switchedAwayFromHeadphones
            }
        }

        for port in current.ports where port.availability == .plugged {
            guard let old = previous.port(named: port.name) else {
                // A new port counts only if it arrives plugged in (unknown availability tells nothing), and not when
                // it simply replaces the active port: a Bluetooth profile switch swaps the sink's only port.
                if port.name != after?.name || before == nil {
                    return .portBecameAvailable
                }
                continue
            }
            if old.availability == .unplugged {
                return .portBecameAvailable
            }
        }
        return nil
    }
}
