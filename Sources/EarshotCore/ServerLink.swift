// The connection to the sound server (row 42 in docs/design.md): when to connect, when to try again after the server
// went away or was not there yet, and what a stream asked for meanwhile waits for. The executor only connects when
// told (`connectServer`, on a thread of its own) and reports what came of it (`serverConnected`,
// `serverConnectFailed`) and a connection lost (`serverDisconnected`); the waits between attempts are the rules' one
// timer (`armTimer`, `timerFired`), shared with the calls' and the radio's.
//
// The player's state while the server is away is rule 10's (`paused(outputLost(serverLost))`, the position kept and
// the wish to resume cleared), and the server coming back is rule 12's output appearing: nothing starts by itself.
// There is no give-up: a desktop's sound server comes back when the user or an upgrade restarts it, perhaps hours
// later, and an attempt costs one failed connect to a missing socket a second.

/// The waits between connection attempts, as rule parameters.
public struct ServerReconnectTiming: Hashable, Sendable {
    /// The wait before the first attempt after the server went away: 200 ms, by which a server killed and started
    /// again (pipewire-pulse restarted by systemd, `pulseaudio -k` with autospawn) is usually back. Each failure
    /// doubles it.
    public var firstDelayMilliseconds: Int64
    /// The longest wait between two attempts: 1 s, so a server started by hand is found within a second.
    public var maximumDelayMilliseconds: Int64

    /// The defaults above.
    public static let standard = ServerReconnectTiming(firstDelayMilliseconds: 200, maximumDelayMilliseconds: 1_000)

    /// A timing.
    public init(firstDelayMilliseconds: Int64, maximumDelayMilliseconds: Int64) {
        self.firstDelayMilliseconds = firstDelayMilliseconds
        self.maximumDelayMilliseconds = maximumDelayMilliseconds
    }
}

/// What the rules know of the connection to the sound server.
public struct ServerLink: Hashable, Sendable {
    /// Where the connection stands.
    public enum Phase: Hashable, Sendable, CustomStringConvertible {
        /// Connected (also the state's default, for a player whose executor has not started: its start asks for the
        /// first connection, `playerStarted`).
        case connected
        /// An attempt is under way: its answer is `serverConnected` or `serverConnectFailed`.
        case connecting
        /// The rules wait until this moment (their timer) before the next attempt.
        case waiting(until: Moment)

        /// `connected`, `connecting` or `waiting`.
        public var description: String {
            switch self {
            case .connected: return "connected"
            case .connecting: return "connecting"
            case .waiting: return "waiting"
            }
        }
    }

    /// Where the connection stands.
    public var phase: Phase = .connected
    /// When the server was found away, or the first connection began; nil while connected.
    public var awaySince: Moment?
    /// The server went away after a connection; false until the first connection is made.
    public var afterLoss = false
    /// An attempt since the server was last connected (or since the start) has failed.
    public var attemptFailed = false
    /// The wait after the next failed attempt.
    public var nextDelayMilliseconds: Int64 = ServerReconnectTiming.standard.firstDelayMilliseconds
    /// The stream the rules asked for (`openStream` or `openStreamOnDefaultSink`) while the server was away: opened
    /// once the attempt under way connects.
    public var awaitedStream: Command?

    /// Connected, as a state starts.
    public init() {}

    /// Whether the rules hold a connection.
    public var isConnected: Bool { phase == .connected }
}

extension PlayerState {
    /// The moment the connection's next attempt waits for, when it waits: the rules' timer is armed for it.
    var serverAttemptDeadline: Moment? {
        if case .waiting(let until) = server.phase { return until }
        return nil
    }

    /// Row 42: the player started with no connection: the first attempt at once.
    mutating func startConnecting(at moment: Moment) -> [Command] {
        guard server.isConnected else { return [] }
        server = ServerLink()
        server.awaySince = moment
        // The first attempt is made at once: a failure waits twice the first delay, as after a wait.
        let timing = policy.serverReconnect
        server.nextDelayMilliseconds = min(timing.firstDelayMilliseconds * 2, timing.maximumDelayMilliseconds)
        server.phase = .connecting
        return [.connectServer]
    }

    /// Row 42: the connection was lost: rule 10 for the server (paused, the position kept, nothing remembered), and
    /// the first attempt after `firstDelayMilliseconds`. A stream still awaited is asked for again by the next play.
    mutating func serverDisconnected(at moment: Moment) -> [Command] {
        if server.isConnected {
            let timing = policy.serverReconnect
            server = ServerLink()
            server.awaySince = moment
            server.afterLoss = true
            server.phase = .waiting(until: moment.advanced(by: timing.firstDelayMilliseconds))
            server.nextDelayMilliseconds = min(timing.firstDelayMilliseconds * 2, timing.maximumDelayMilliseconds)
        }
        return outputLost(.serverLost)
    }

    /// Row 42: the attempt under way connected. Rule 12: a server back is an output appearing, which starts nothing;
    /// a stream asked for meanwhile is opened now.
    mutating func serverConnected() -> [Command] {
        guard server.phase == .connecting else { return [] }
        let awaited = server.awaitedStream
        server = ServerLink()
        return awaited.map { [$0] } ?? []
    }

    /// Row 42: the attempt under way found no server: the next waits twice as long as this one did, up to
    /// `maximumDelayMilliseconds`. Row 29: a foreground player's first attempt has nothing to wait for. A stream the
    /// rules asked for meanwhile cannot be had: the output is lost, for the server (rule 10).
    mutating func serverConnectFailed(at moment: Moment) -> [Command] {
        guard server.phase == .connecting else { return [] }
        let first = !server.afterLoss && !server.attemptFailed
        let timing = policy.serverReconnect
        server.attemptFailed = true
        server.phase = .waiting(until: moment.advanced(by: server.nextDelayMilliseconds))
        server.nextDelayMilliseconds = min(server.nextDelayMilliseconds * 2, timing.maximumDelayMilliseconds)
        if first && policy.frontEnd == .foreground { return [.exitForeground(.noServer)] }
        guard server.awaitedStream != nil else { return [] }
        server.awaitedStream = nil
        return outputLost(.serverLost)
    }

    /// Row 42: the rules' timer went off; a wait that is over makes the next attempt.
    mutating func serverTimerFired(at moment: Moment) -> [Command] {
        guard let until = serverAttemptDeadline, until <= moment else { return [] }
        server.phase = .connecting
        return [.connectServer]
    }

    /// Row 42: while the server is away, a stream the rules ask for (rule 8's play, a sink refused) waits for the
    /// connection, and the next attempt is made at once rather than after its wait. Returns `commands` without the
    /// stream's opening, and with the attempt when one starts.
    mutating func holdStreamUntilConnected(_ commands: [Command]) -> [Command] {
        guard !server.isConnected else { return commands }
        var held: [Command] = []
        for command in commands {
            guard command == .openStream || command == .openStreamOnDefaultSink else {
                held.append(command)
                continue
            }
            server.awaitedStream = command
            if case .waiting = server.phase {
                server.phase = .connecting
                held.append(.connectServer)
            }
        }
        return held
    }
}
