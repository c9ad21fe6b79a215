// The player's link to the sound server: the connection and its generation, the stream and its generation, and what
// the streams closed so far counted.
//
// Every connection is made on a thread of its own (`Player.attemptConnection`), never on the owner: libpulse's connect
// waits for the server. Its outcome comes back as an input, tagged with the generation it was begun in.
//
// It holds lifetime and mechanics only. What to do when the server goes or the stream dies (pause, flush, resume),
// when to connect again and what waits for the connection are the rulebook's (row 42, EarshotCore's ServerLink.swift);
// the player asks this type to connect, forget, open and close, and feeds the outcomes to the rules. It lives inside
// the player's actor and is used only there. Generations tag every notice a connection or stream sends to the inbox,
// so a notice from one that was replaced since is told apart and dropped.
import AudioPipeline
import PulseOutput
import RealtimeScheduling

/// What opening a stream has to remember until the stream is open.
struct StreamOpening {
    /// The format the stream was opened for.
    let format: AudioFormat
    /// The sink it was sent to; nil for the server's default. A named sink that refuses falls back to the default.
    let sinkName: String?
    /// The server said the stream is ready (`.ready`).
    var isReady = false
    /// The inventory sent with the stream came back before `.ready` (or could not be sent): it is asked for again at
    /// `.ready`, so that nothing the subscription reports in between is overwritten by an older list.
    var listsAgainWhenReady = false
}

/// The connection and the stream the player plays through, and how they are replaced.
struct OutputLink {
    private(set) var connection: PulseConnection?
    /// The scheduling of the connection's mainloop thread (the one that feeds the server), and its thread id.
    private(set) var realtime: (outcome: RealtimeOutcome, threadID: Int32?)?
    /// Tags the current connection's notices; moves on with every connection made and every one lost.
    private(set) var connectionGeneration = 0
    /// The server's name, as its answer to `requestServerInfo` gave it.
    var serverName: String?

    private(set) var stream: PlaybackStream?
    /// While the stream is being opened (sent, and not yet reported to the rules as open): what the open needs.
    private(set) var streamOpening: StreamOpening?
    /// Tags the current stream's notices; moves on with every stream opened, failed or closed.
    private(set) var streamGeneration = 0
    private var underrunsOfClosedStreams = 0
    private var serverUnderflowsOfClosedStreams = 0

    // MARK: The connection

    /// Whether a notice tagged `generation` comes from the current connection.
    func isCurrent(connectionGeneration generation: Int) -> Bool {
        generation == connectionGeneration && connection != nil
    }

    /// A connection attempt's connection: when it is for the current generation and there is no connection, it
    /// becomes the current connection (true); otherwise (a stale attempt) false, and the attempt's connection is
    /// dropped with its result.
    mutating func connected(_ server: ConnectedServer, generation: Int) -> Bool {
        guard generation == connectionGeneration, connection == nil else { return false }
        connection = server.connection
        realtime = (server.realtime, server.threadID)
        return true
    }

    /// The server went away: the connection and what was known of it are forgotten, and notices still on their way
    /// from it are dropped. The stream is closed first (`closeStream`).
    mutating func lost() {
        connection = nil
        realtime = nil
        serverName = nil
        connectionGeneration += 1
    }

    /// Ends the connection for good (the service stops). The stream is closed first (`closeStream`).
    mutating func disconnect() {
        connection?.disconnect()
        connection = nil
    }

    // MARK: The stream

    /// Whether a notice tagged `generation` comes from the current stream.
    func isCurrent(streamGeneration generation: Int) -> Bool {
        generation == streamGeneration && stream != nil
    }

    /// Moves the stream generation on for a stream about to be opened, and returns it: the tag of its notices.
    mutating func newStreamGeneration() -> Int {
        streamGeneration += 1
        return streamGeneration
    }

    /// The stream sent for `opening` is the current one, still opening.
    mutating func opened(_ opened: PlaybackStream, for opening: StreamOpening) {
        stream = opened
        streamOpening = opening
    }

    /// The server said the stream being opened is ready.
    mutating func openingStreamReady() {
        streamOpening?.isReady = true
    }

    /// The inventory sent with the stream being opened is of no use: it is asked for again when the stream is ready.
    mutating func openingListsAgainWhenReady() {
        streamOpening?.listsAgainWhenReady = true
    }

    /// The stream is open and the rules may hear of it: it is no longer opening.
    mutating func openingFinished() {
        streamOpening = nil
    }

    /// The server refused the stream before it was ready: it is closed and forgotten (it played nothing, so it
    /// counted nothing).
    mutating func openFailed() {
        stream?.close()
        stream = nil
        streamOpening = nil
        streamGeneration += 1
    }

    /// Closes the stream, keeping its underrun counts. Returns false when there was none.
    mutating func closeStream() -> Bool {
        guard let closing = stream else { return false }
        underrunsOfClosedStreams += closing.underrunCount
        serverUnderflowsOfClosedStreams += closing.serverUnderflowCount
        closing.close()
        stream = nil
        streamOpening = nil
        streamGeneration += 1
        return true
    }

    /// The write callbacks that found the ring empty, in every stream so far.
    var underruns: Int { underrunsOfClosedStreams + (stream?.underrunCount ?? 0) }
    /// The server's underflow reports, in every stream so far.
    var serverUnderflows: Int { serverUnderflowsOfClosedStreams + (stream?.serverUnderflowCount ?? 0) }
}
