// The fetch thread: one libcurl easy handle on a thread of its own reads an http(s) URL into a StreamByteBuffer,
// splitting ICY metadata out of the audio, and reports what happened as notices. Nobody waits for it: the owner gets
// notices, the decoder reads the buffer.
//
// A note on threading: every libcurl call on the handle, and every callback below, runs on the fetch thread.
// `stop()` may be called from any thread: it sets a flag the progress callback reads (libcurl calls it at least once
// a second, and after every read), which aborts the transfer; nothing else crosses threads but the buffer (locked)
// and the notices (handed to `notify`, which must not wait).
import CCurlLoader
import Synchronization
import SystemSupport

/// Why a fetch failed on the network's side.
public enum NetworkFailure: Equatable, Sendable {
    /// Nothing arrived for the silence limit (10 s by default), or the connection could not be made in that time.
    case timedOut
    /// The host name did not resolve.
    case unresolvedHost
    /// The connection was refused or could not be made.
    case connectionRefused
    /// The server's certificate did not verify against the system's certificates.
    case certificateNotTrusted
    /// The TLS handshake or the encrypted connection failed otherwise.
    case tlsFailed
    /// More redirects than the limit.
    case tooManyRedirects
    /// Not an http:// or https:// URL (also for a redirect to another scheme).
    case unsupportedScheme
    /// The URL could not be read as one.
    case malformedURL
    /// The connection broke while receiving.
    case connectionLost
    /// libcurl (libcurl.so.4, Debian's libcurl4) is not installed, or is not one Earshot can use.
    case libraryMissing
    /// Any other libcurl error, by its CURLcode.
    case other(Int32)
}

/// How a fetch ended.
public enum StreamEnd: Equatable, Sendable {
    /// The server closed the body normally, with no length announced: the stream is over, or the server went away
    /// (whoever gets it decides which, RULES rows 38-39).
    case serverClosed
    /// The server sent the whole body of the length it announced: a file, not a stream, and it is over.
    case completed
    /// The server closed normally a plain HTTP response (no ICY header: not a station's server) that announced no
    /// length: a file sent as HTTP/1.0 does, ended by its close, or a plain server that went away (whoever gets it
    /// decides which, RULES row 39).
    case plainResponseClosed
    /// `stop()` ended it.
    case stopped
    /// The response is not one Earshot plays.
    case refused(StreamRefusal)
    /// The network failed.
    case failed(NetworkFailure)
}

/// What the fetch thread reports, in order: `started` (unless it fails first), any number of `title`, one `ended`.
public enum StreamNotice: Equatable, Sendable {
    /// The response is audio of this format; the station's name, when its headers give one.
    case started(StreamFormat, stationName: String?)
    /// The ICY `StreamTitle` changed to this (empty: the station cleared it).
    case title(String)
    /// The fetch is over, for this reason; the buffer holds what came before it.
    case ended(StreamEnd)
}

extension StreamEnd {
    /// Whether the stream ended without a failure: closed by the server (a station's or a plain one), sent whole, or
    /// stopped. A decoder plays what it received to its end.
    public var isClean: Bool {
        switch self {
        case .serverClosed, .completed, .plainResponseClosed, .stopped: return true
        case .refused, .failed: return false
        }
    }
}

/// The limits of one fetch.
public struct StreamLimits: Equatable, Sendable {
    /// A fetch that receives nothing for this long (connecting, waiting for the head, or mid-stream) has failed.
    public var silenceSeconds: Int
    /// The most redirects followed.
    public var maximumRedirects: Int

    /// The defaults: 10 s of silence, 5 redirects.
    public init(silenceSeconds: Int = 10, maximumRedirects: Int = 5) {
        self.silenceSeconds = silenceSeconds
        self.maximumRedirects = maximumRedirects
    }
}

/// One fetch of one URL on its own thread. Start it once; stop it any time.
public final class StreamFetcher: Sendable {
    /// The number of body bytes read before deciding on a response whose head leaves its type open.
    static let sniffBytes = 16

    private let url: String
    private let buffer: StreamByteBuffer
    private let limits: StreamLimits
    private let notify: @Sendable (StreamNotice) -> Void
    private let finishesBuffer: Bool
    private let stopRequested = Atomic<Bool>(false)

    /// A fetch of `url` into `buffer`, reporting to `notify` (called on the fetch thread; it must not wait). With
    /// `finishesBuffer` false the fetch leaves the buffer open at its end, for whoever gets `ended` to decide (a live
    /// stream's connection, which another fetch may take up into the same buffer).
    public init(
        url: String, buffer: StreamByteBuffer, limits: StreamLimits = StreamLimits(), finishesBuffer: Bool = true,
        notify: @escaping @Sendable (StreamNotice) -> Void
    ) {
        self.url = url
        self.buffer = buffer
        self.limits = limits
        self.finishesBuffer = finishesBuffer
        self.notify = notify
    }

    /// Starts the fetch thread.
    public func start() {
        SystemThread.start(named: "earshot-fetch") { [self] in run() }
    }

    /// Asks the fetch to end; it ends with `.stopped` within about a second, and never writes to the buffer after.
    public func stop() {
        stopRequested.store(true, ordering: .relaxed)
    }

    var isStopRequested: Bool { stopRequested.load(ordering: .relaxed) }

    private func run() {
        let end = transfer()
        if finishesBuffer { buffer.finish(end) }
        notify(.ended(end))
    }

    // The whole transfer on this thread: returns how it ended.
    private func transfer() -> StreamEnd {
        // libcurl is loaded (and initialized) by the first fetch of the process.
        guard earshot_curl_load() == 0 else { return .failed(.libraryMissing) }
        guard let handle = earshot_curl_easy_init() else { return .failed(.other(Int32(CURLE_FAILED_INIT.rawValue))) }
        defer { earshot_curl_easy_cleanup(handle) }
        let headers: UnsafeMutablePointer<curl_slist>? = earshot_curl_slist_append(nil, "Icy-MetaData: 1")
        defer { earshot_curl_slist_free_all(headers) }
        // SHOUTcast v1 answers `ICY 200 OK`, which libcurl takes for HTTP/0.9 (refused) unless named an alias of 200.
        let statusAliases: UnsafeMutablePointer<curl_slist>? = earshot_curl_slist_append(nil, "ICY 200 OK")
        defer { earshot_curl_slist_free_all(statusAliases) }
        let session = FetchSession(fetcher: self, buffer: buffer, notify: notify)
        let context = Unmanaged.passUnretained(session).toOpaque()
        var failed = false
        func set(_ code: CURLcode) { failed = failed || code != CURLE_OK }
        set(earshot_curl_set_string(handle, CURLOPT_URL, url))
        set(earshot_curl_set_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        set(earshot_curl_set_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"))
        set(earshot_curl_set_long(handle, CURLOPT_FOLLOWLOCATION, 1))
        set(earshot_curl_set_long(handle, CURLOPT_MAXREDIRS, limits.maximumRedirects))
        set(earshot_curl_set_long(handle, CURLOPT_CONNECTTIMEOUT, limits.silenceSeconds))
        // Under 1 byte a second for the silence limit: nothing has come for that long.
        set(earshot_curl_set_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1))
        set(earshot_curl_set_long(handle, CURLOPT_LOW_SPEED_TIME, limits.silenceSeconds))
        // No signals from libcurl's resolver timeouts: this is one thread of many.
        set(earshot_curl_set_long(handle, CURLOPT_NOSIGNAL, 1))
        set(earshot_curl_set_long(handle, CURLOPT_TCP_KEEPALIVE, 1))
        set(earshot_curl_set_string(handle, CURLOPT_USERAGENT, "Earshot"))
        set(earshot_curl_set_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(headers)))
        set(earshot_curl_set_pointer(handle, CURLOPT_HTTP200ALIASES, UnsafeMutableRawPointer(statusAliases)))
        set(earshot_curl_set_data_callback(handle, CURLOPT_HEADERFUNCTION, headerCallback))
        set(earshot_curl_set_pointer(handle, CURLOPT_HEADERDATA, context))
        set(earshot_curl_set_data_callback(handle, CURLOPT_WRITEFUNCTION, writeCallback))
        set(earshot_curl_set_pointer(handle, CURLOPT_WRITEDATA, context))
        set(earshot_curl_set_long(handle, CURLOPT_NOPROGRESS, 0))
        set(earshot_curl_set_progress_callback(handle, progressCallback))
        set(earshot_curl_set_pointer(handle, CURLOPT_XFERINFODATA, context))
        // Certificates: libcurl's defaults, which on Debian are the system's bundle (/etc/ssl/certs), verified.
        set(earshot_curl_set_long(handle, CURLOPT_SSL_VERIFYPEER, 1))
        set(earshot_curl_set_long(handle, CURLOPT_SSL_VERIFYHOST, 2))
        guard !failed else { return .failed(.other(Int32(CURLE_FAILED_INIT.rawValue))) }
        let result = withExtendedLifetime(session) { earshot_curl_easy_perform(handle) }
        return session.end(for: result)
    }
}

private let headerCallback: earshot_curl_data_callback = { bytes, size, count, context in
    guard let bytes, let context else { return 0 }
    let session = Unmanaged<FetchSession>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    return session.header(UnsafeRawBufferPointer(start: bytes, count: length)) ? length : 0
}

private let writeCallback: earshot_curl_data_callback = { bytes, size, count, context in
    guard let bytes, let context else { return 0 }
    let session = Unmanaged<FetchSession>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    return session.body(UnsafeRawBufferPointer(start: bytes, count: length)) ? length : 0
}

private let progressCallback: earshot_curl_progress_callback = { context, _, _, _, _ in
    guard let context else { return 1 }
    return Unmanaged<FetchSession>.fromOpaque(context).takeUnretainedValue().fetcher.isStopRequested ? 1 : 0
}

extension StreamEnd: CustomStringConvertible {
    /// The end in words for the user and the log: no address, no server text.
    public var description: String {
        switch self {
        case .serverClosed: return "The server ended the stream"
        case .completed: return "The server sent the whole file"
        case .plainResponseClosed: return "The server ended its response"
        case .stopped: return "The stream was stopped"
        case .refused(let refusal): return refusal.description
        case .failed(let failure): return failure.description
        }
    }
}

extension StreamRefusal: CustomStringConvertible {
    /// The refusal in words.
    public var description: String {
        switch self {
        case .httpStatus(let status): return "The server answered HTTP status \(status)"
        case .notAudio: return "The server answered with a web page or text, not audio"
        case .playlist: return "The server answered with a playlist where audio was expected"
        case .unsupportedType: return "The server sends a kind of audio Earshot does not play"
        case .headTooLarge: return "The server's response head is larger than any real server's"
        case .metadataIntervalOutOfRange: return "The server claims an ICY metadata interval out of range"
        }
    }
}

extension NetworkFailure: CustomStringConvertible {
    /// The failure in words.
    public var description: String {
        switch self {
        case .timedOut: return "Nothing came from the server for the silence limit"
        case .unresolvedHost: return "The server's name did not resolve"
        case .connectionRefused: return "The server refused the connection"
        case .certificateNotTrusted: return "The server's certificate is not trusted by the system's certificates"
        case .tlsFailed: return "The encrypted connection failed"
        case .tooManyRedirects: return "The server redirected too many times"
        case .unsupportedScheme: return "Not an http:// or https:// address"
        case .malformedURL: return "The stream's address is malformed"
        case .connectionLost: return "The connection to the server broke"
        case .libraryMissing: return "Internet radio needs libcurl (Debian's libcurl4), which cannot be loaded"
        case .other(let code): return "The network failed (libcurl error \(code))"
        }
    }
}
