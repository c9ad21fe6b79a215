// MPD's `albumart` and `readpicture`: a library file's picture in chunks of at most the client's `binarylimit`, each
// reply `size: TOTAL`, (`type: MIME` for readpicture), `binary: N`, N bytes, a line break and OK. `readpicture` gives
// the picture embedded in the file (read by AudioPipeline's tag readers, as the cover store takes it); `albumart`
// gives a cover file in the track's folder (`cover.jpg`, `cover.png`, `folder.jpg`, `folder.png`), else the embedded
// picture. Binary replies are written by the server outside command lists. Runs on the client's thread.
import AudioPipeline
import Glibc
import MPDProtocol
import SystemSupport
import TrackPaths

/// One picture: its bytes and MIME type.
struct MPDPicture {
    var bytes: [UInt8]
    var mimeType: String
}

extension MPDSession {
    /// The cover files `albumart` looks for in a track's folder, in order.
    static let coverFileNames = ["cover.jpg", "cover.png", "folder.jpg", "folder.png"]

    /// The whole reply (one chunk, or MPD's error line) to an `albumart` or `readpicture` request.
    public mutating func picture(_ request: MPDRequest) -> [UInt8] {
        if let refusal = refusal(of: request.name) { return Array(refusal.line.utf8) }
        let name = request.name
        let uri: String
        let offset: Int
        switch MPDCommand.parse(request) {
        case .success(.albumart(let given, let at)), .success(.readpicture(let given, let at)):
            uri = given
            offset = at
        case .failure(let error): return Array(error.line.utf8)
        default: return Array(MPDError(.unknown, "unknown command \"\(name)\"").line.utf8)
        }
        let key = name + "\u{0}" + uri
        let picture: MPDPicture?
        if let last = lastPicture, last.key == key {
            picture = last.picture
        } else {
            switch libraryPath(uri, name) {
            case .failure(let error): return Array(error.line.utf8)
            case .success(let path): picture = Self.readPicture(path, coverFiles: name == "albumart")
            }
            lastPicture = (key, picture)
        }
        guard let picture else {
            // MPD: readpicture of a file without one is an empty OK; albumart without a cover is an error.
            return Array((name == "readpicture" ? "OK\n"
                : MPDError(.noExist, command: name, "No file exists").line).utf8)
        }
        guard offset <= picture.bytes.count else {
            return Array(MPDError(.argument, command: name, "Bad file offset").line.utf8)
        }
        let chunk = picture.bytes[offset..<min(picture.bytes.count, offset + binaryLimit)]
        var header = "size: \(picture.bytes.count)\n"
        if name == "readpicture" { header += "type: \(picture.mimeType)\n" }
        header += "binary: \(chunk.count)\n"
        return Array(header.utf8) + chunk + Array("\nOK\n".utf8)
    }

    /// The picture of the file at `path`: a cover file beside it when `coverFiles`, else the one its tags embed.
    static func readPicture(_ path: TrackPath, coverFiles: Bool) -> MPDPicture? {
        if coverFiles, let text = path.string {
            let folder = PathText.directory(of: text)
            for file in coverFileNames {
                if let bytes = readWhole(folder + "/" + file, limit: CoverPicture.maximumBytes) {
                    return MPDPicture(bytes: bytes, mimeType: file.hasSuffix(".png") ? "image/png" : "image/jpeg")
                }
            }
        }
        guard let decoder = try? AudioFileKind.openDecoder(path: path), let cover = decoder.metadata.cover,
              let bytes = cover.load() else { return nil }
        return MPDPicture(bytes: bytes, mimeType: cover.mimeType)
    }

    /// The bytes of the file at `path` when it exists and holds at most `limit`.
    private static func readWhole(_ path: String, limit: Int) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= limit else {
            return nil
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let count = bytes[done...].withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            done += count
        }
        return bytes
    }
}
