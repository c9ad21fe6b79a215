// What the player is made of besides its actor: the inputs its inbox carries, how it was started, the connections it
// makes, and the names the rulebook gives to what the decoder and the clock report.
import AudioPipeline
import EarshotCore
import EarshotMPRIS
import Glibc
import PulseOutput
import RealtimeScheduling
import TrackPaths

/// A new connection to the sound server and how its mainloop thread is scheduled.
struct ConnectedServer: Sendable {
    /// The connected, subscribed connection.
    let connection: PulseConnection
    /// What real-time scheduling its mainloop thread got.
    let realtime: RealtimeOutcome
    /// The kernel thread id of its mainloop thread, when it could be found.
    let threadID: Int32?
}

extension Player {
    /// Everything that can happen to the player, in one ordered stream.
    enum Input: Sendable {
        /// A notice of the decode thread.
        case decode(DecodeNotice)
        /// What the cover worker made of a started track's picture.
        case cover(CoverArtJob, CoverArtOutcome)
        case stream(StreamNotice, generation: Int)
        case connection(ConnectionNotice, generation: Int)
        /// The lists asked for with `requestInventory`, for the stream of that generation.
        case inventory(ServerInventory, purpose: InventoryPurpose, generation: Int)
        /// A connection attempt (`attemptConnection`, on a thread of its own) connected.
        case connected(ConnectedServer, generation: Int)
        /// A connection attempt found no server; the rules say when the next one is made.
        case connectFailed(generation: Int)
        case tick(arming: Int)
        /// The rules' timer went off (`armTimer`): a capture may have run long enough to count as a call, a profile
        /// switch has waited long enough for our stream, or a reconnection's wait is over.
        case rulesTimerDue(arming: Int)
        case request(ControlRequest, any ReplyReceiver<String>)
        case mpris(MPRISCommand, any ReplyReceiver<MPRISReply>)
        /// What logind announced, translated by its adapter (rule 19).
        case session(Event)
        /// The live stream at that index dropped bytes nobody heard from its buffer (the fetch thread, rule 32).
        case liveBufferOverflowed(index: Int)
        /// What happened to the connection of the live stream at that index (its fetch or decode thread, rows 38-41).
        case liveNetwork(index: Int, LiveNetworkNotice)
        /// The fade and duck timer went off (the arming's number): the next step of a ramp (Player+Edges).
        case edgeDue(arming: Int)
        /// The music library's latest state, from its scanning thread.
        case library(LibraryStatus)
        case shutdown(signal: Int32)
    }

    /// What is known of a track once the decoder opened it.
    struct TrackInfo {
        var format: AudioFormat
        var lengthFrames: Int?
        var metadata: TrackMetadata
        /// The track's cover picture in the art cache, once stored.
        var artFile: TrackPath?
        /// A reason the picture could not be stored was shown already (once per track, not at every seek).
        var coverSkipShown = false
    }
}

/// How the player was started.
public enum PlayerMode: Sendable {
    /// `earshot play FILE...`: play the files and exit at the end of the queue.
    case foreground(files: [TrackPath])
    /// `earshot serve`: a long-running service that restores its saved queue, paused.
    case service
}

extension ResumePolicy {
    /// The configuration's policy for a player started in `mode`: the rules learn their front-end from it.
    func startedAs(_ mode: PlayerMode) -> ResumePolicy {
        var policy = self
        if case .foreground = mode { policy.frontEnd = .foreground } else { policy.frontEnd = .service }
        return policy
    }
}

/// Which sink the rules asked a stream to be opened on (`openStream`, `openStreamOnDefaultSink`).
enum SinkChoice {
    /// The sink named in configuration, or the server's default when none is named.
    case configured
    /// The server's default sink: the configured one refused the stream (`configuredSinkRefused`).
    case serverDefault
}

/// A silence the stall watchdog reported to the rules (`Player.tick`): one report per silence and per answer to
/// whether the sink had played since the stream started.
struct SilenceReport: Equatable {
    /// The server's last request before the silence (`PlaybackStream.lastRequestUptimeNanoseconds`): a request
    /// ends the silence, and the next one is a new silence.
    var lastRequest: UInt64
    /// Whether the listener had heard audio since the stream last started.
    var heardSinceStart: Bool
}

/// The silence alarm the owner gave a stream (`Player.armTick`): given again only when it changes.
struct SilenceAlarmSetting: Equatable {
    /// The stream it was given to (`OutputLink.streamGeneration`).
    var streamGeneration: Int
    /// Its length; nil when withdrawn.
    var alarm: Duration?
}

/// Milliseconds on CLOCK_BOOTTIME: the moments stamped on events. Monotonic as CLOCK_MONOTONIC is, but it counts the
/// time the machine slept, so that the rules' windows do too: a station lost before a suspend and still lost after it
/// has been lost for the whole time (`radioReconnectMinutes`, the settle time). The owner's timers wait on
/// CLOCK_MONOTONIC (libdispatch's clock; a pthread condition takes no other but the wall clock), so the rules' timer
/// is armed with the wait from now on this clock (`armRulesTimer`): a wait that spans a sleep ends its remaining
/// part after the wake, and the moment it fires at says how long it really was.
func eventMoment() -> Moment {
    var now = timespec()
    clock_gettime(CLOCK_BOOTTIME, &now)
    return Moment(milliseconds: Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000)
}

extension Player {
    /// A connected, subscribed connection whose notices go to the inbox tagged with `generation`, its mainloop
    /// thread raised to real-time scheduling as far as allowed (every connection has a thread of its own).
    static func makeConnection(
        generation: Int, inbox: AsyncStream<Input>.Continuation
    ) -> ConnectedServer? {
        do {
            let connection = try PulseConnection(operationTimeout: .seconds(3)) { notice in
                inbox.yield(.connection(notice, generation: generation))
            }
            try connection.connect(applicationName: "Earshot")
            try connection.subscribe()
            guard let threadID = try? connection.mainloopThreadID() else {
                return ConnectedServer(connection: connection, realtime: .none(reason: "mainloop thread not found"),
                                       threadID: nil)
            }
            return ConnectedServer(connection: connection, realtime: RealtimePriority.raise(threadID: threadID),
                                   threadID: threadID)
        } catch {
            return nil
        }
    }

    /// The rulebook's name for why the decoder could not play a track.
    static func failure(of kind: DecodeError.Kind) -> TrackFailure {
        switch kind {
        case .cannotOpen: return .unreadable
        case .empty, .noAudio, .notMPEGAudio: return .notMPEGAudio
        case .badHeaders: return .badHeaders
        case .unsupportedFormat: return .unsupportedFormat
        case .decodeFailed, .seekFailed, .libraryFailure: return .decodeFailed
        }
    }
}

extension StatusText {
    /// The foreground player's progress line for a terminal, e.g. `[1/3] 0:42 / 3:10 [#####---] playing`, drawn
    /// over the previous one.
    static func progressLine(track index: Int, of count: Int, at position: Int, length: Int?, state: String) -> String {
        let width = 24
        let filled = length.map { $0 > 0 ? min(width, position * width / $0) : 0 } ?? 0
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        return "\r[\(index + 1)/\(count)] \(StatusText.clock(position)) / "
            + "\(length.map(StatusText.clock) ?? "--:--") [\(bar)] \(state)\u{1B}[K"
    }
}
