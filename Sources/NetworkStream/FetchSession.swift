// One transfer's state on the fetch thread: the response's head, the decision on its body, the ICY demuxer and the
// last title; what libcurl's callbacks call into. Only the fetch thread touches it.
import CCurlLoader

/// The fetch thread's side of one transfer (see StreamFetcher's note on threading).
final class FetchSession {
    let fetcher: StreamFetcher
    private let buffer: StreamByteBuffer
    private let notify: @Sendable (StreamNotice) -> Void
    private var head = ResponseHead()
    // Body bytes held back until the response's kind is decided (at most StreamFetcher.sniffBytes).
    private var firstBytes: [UInt8] = []
    private var decided = false
    private var refusal: StreamRefusal?
    private var demuxer = ICYDemuxer(interval: nil)
    private var title: String?

    init(fetcher: StreamFetcher, buffer: StreamByteBuffer, notify: @escaping @Sendable (StreamNotice) -> Void) {
        self.fetcher = fetcher
        self.buffer = buffer
        self.notify = notify
    }

    /// One header line; false refuses the response (its head is too large).
    func header(_ line: UnsafeRawBufferPointer) -> Bool {
        // A line over the limit is not copied whole: its length alone refuses it.
        if line.count > ResponseHead.maximumLineBytes {
            refusal = .headTooLarge
            return false
        }
        head.feed(line: Array(line))
        if head.tooLarge { refusal = .headTooLarge }
        return refusal == nil
    }

    /// Body bytes; false aborts the transfer (refused, or stopped).
    func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if fetcher.isStopRequested { return false }
        if decided { return deliver(bytes) }
        let wanted = StreamFetcher.sniffBytes - firstBytes.count
        firstBytes.append(contentsOf: bytes.prefix(wanted))
        guard firstBytes.count >= StreamFetcher.sniffBytes else { return true }
        guard decide() else { return false }
        let held = firstBytes
        firstBytes = []
        let heldDelivered = held.withUnsafeBytes { deliver($0) }
        return heldDelivered && deliver(UnsafeRawBufferPointer(rebasing: bytes[min(wanted, bytes.count)...]))
    }

    /// How the transfer ended, given libcurl's result.
    func end(for result: CURLcode) -> StreamEnd {
        if let refusal { return .refused(refusal) }
        if fetcher.isStopRequested { return .stopped }
        if result == CURLE_OK, !decided {
            // A body shorter than the sniff, or none (a 404 with an empty page): decide on what came.
            guard decide() else { return .refused(refusal ?? .notAudio) }
            let held = firstBytes
            firstBytes = []
            _ = held.withUnsafeBytes { deliver($0) }
        }
        if result == CURLE_OK, head.announcesLength { return .completed }
        if result == CURLE_OK, !head.speaksICY { return .plainResponseClosed }
        return Self.end(for: result)
    }

    // Decides on the response from its head and first bytes; reports `started` or records the refusal.
    private func decide() -> Bool {
        decided = true
        switch head.verdict(firstBytes: firstBytes) {
        case .failure(let reason):
            refusal = reason
            return false
        case .success(let format):
            if case .success(let interval) = head.metadataInterval { demuxer = ICYDemuxer(interval: interval) }
            notify(.started(format, stationName: head.stationName))
            return true
        }
    }

    private func deliver(_ bytes: UnsafeRawBufferPointer) -> Bool {
        demuxer.feed(bytes, audio: { buffer.write($0) }, metadata: { block in
            guard let newTitle = ICYMetadata(block: block).streamTitle, newTitle != title else { return }
            title = newTitle
            notify(.title(newTitle))
        })
        return true
    }

    // libcurl's result as a stream's end.
    static func end(for result: CURLcode) -> StreamEnd {
        switch result {
        case CURLE_OK: return .serverClosed
        case CURLE_ABORTED_BY_CALLBACK, CURLE_WRITE_ERROR: return .stopped
        case CURLE_OPERATION_TIMEDOUT: return .failed(.timedOut)
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return .failed(.unresolvedHost)
        case CURLE_COULDNT_CONNECT: return .failed(.connectionRefused)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE: return .failed(.certificateNotTrusted)
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_ENGINE_NOTFOUND,
             CURLE_USE_SSL_FAILED:
            return .failed(.tlsFailed)
        case CURLE_TOO_MANY_REDIRECTS: return .failed(.tooManyRedirects)
        case CURLE_UNSUPPORTED_PROTOCOL: return .failed(.unsupportedScheme)
        case CURLE_URL_MALFORMAT: return .failed(.malformedURL)
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_HTTP2_STREAM:
            return .failed(.connectionLost)
        default: return .failed(.other(Int32(result.rawValue)))
        }
    }
}
