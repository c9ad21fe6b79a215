// Pure: no libpulse here. A wired headphone unplug keeps the sink and only changes its ports (the server sends
// CARD CHANGE and SINK CHANGE, nothing is removed and our stream is not moved), so the only way to see it is to
// compare two descriptions of the same sink.

/// What a change in a sink's ports means for a player on that sink.
public enum PortChange: Sendable, Equatable {
    /// The active port is now unplugged (availability went to "no"): the output the user was hearing is gone.
    case activePortUnavailable
    /// The active port switched from headphones or a headset to something else, typically the built-in
    /// speakers after a jack unplug: continuing would play out loud.
    case switchedAwayFromHeadphones
    /// The active port switched away from headphones or a headset that are still plugged in (availability "yes"):
    /// someone chose another port (pavucontrol, `pactl set-sink-port`), a route change, not a loss.
    case activePortChosen
    /// A port became plugged in (availability "no" to "yes", or a new port that appeared plugged in): a replug.
    case portBecameAvailable
}

/// Classifies the difference between two snapshots of one sink as a port change a player must react to.
public enum PortClassifier {
    /// The most important port change between `previous` and `current`, or nil when nothing relevant changed.
    ///
    /// Both snapshots must describe the same sink (same index); pairing them is the caller's job. A loss wins over
    /// an appearance: a jack unplug can make one port unavailable and another available in the same update.
    public static func classify(previous: SinkSnapshot, current: SinkSnapshot) -> PortChange? {
        let before = previous.activePort
        let after = current.activePort

        if let after, after.availability == .no {
            let alreadyUnavailable = before?.name == after.name && before?.availability == .no
            if !alreadyUnavailable {
                return .activePortUnavailable
            }
        }

        if let before, isHeadphoneLike(before), before.name != after?.name {
            // Headphones to a headset (a Bluetooth profile switch for a call) still sounds only for the wearer.
            if after.map(isHeadphoneLike) != true {
                // Still plugged in: a choice. Gone, unplugged or of unknown availability: no permission to play.
                let stillPlugged = current.ports.first { $0.name == before.name }?.availability == .yes
                return stillPlugged ? .activePortChosen : .switchedAwayFromHeadphones
            }
        }

        for port in current.ports where port.availability == .yes {
            guard let old = previous.ports.first(where: { $0.name == port.name }) else {
                // A new port counts only if it arrives plugged in (unknown availability tells nothing), and not
                // when it simply replaces the active port: a Bluetooth profile switch swaps the sink's only port.
                if port.name != after?.name || before == nil {
                    return .portBecameAvailable
                }
                continue
            }
            if old.availability == .no {
                return .portBecameAvailable
            }
        }
        return nil
    }

    /// Whether a port leads to something only the wearer hears. When the server does not know the type, the
    /// port's name is the only evidence left ("analog-output-headphones", "headset-output").
    static func isHeadphoneLike(_ port: PortSnapshot) -> Bool {
        switch port.type {
        case .headphones, .headset:
            return true
        case .unknown:
            let name = port.name.lowercased()
            return name.contains("headphone") || name.contains("headset")
        default:
            return false
        }
    }
}
