// A private Icecast2 for the internet-radio tests (IcecastTests, issue 40): Debian's icecast2 started as a child of the
// test on a free loopback port, with its configuration, logs and pid file in a folder of its own under /tmp (never the
// system's service, never /etc), fed by GStreamer's shout2send (libshout) from audio the tests make (MP3 or Ogg
// Vorbis), and killed at the end. A missing icecast2 or gst-launch-1.0 is a failure, never a skip (scripts/test
// installs both).
//
// Why shout2send: ices2 only sends Ogg Vorbis, and Debian 12's ffmpeg is not built with libshout; gstreamer's shout2
// plugin (gstreamer1.0-plugins-good) sends an MP3 or an Ogg file as it is, paced at its own bit rate by libshout, and
// takes a title for an MP3.
#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation

/// A private Icecast2 on 127.0.0.1.
final class IcecastServer: @unchecked Sendable {
    /// The port it listens on (a free one of the kernel's choice).
    let port: Int
    /// The folder of its configuration, logs and pid file; removed by `stop`.
    let folder: URL
    /// What icecast2 sends a listener at once on connecting, from before the moment it joins (0: nothing).
    let burstBytes: Int
    /// The running icecast2 (another one after `restart`).
    private(set) var process: ChildProcess
    // Its executable and configuration file, for `restart`.
    private let executable: String
    private let configuration: URL
    /// The sources' password (the mount's user is `source`).
    static let sourcePassword = "earshot-source"
    /// The admin's user and password, for the metadata updates.
    static let admin = (user: "earshot-admin", password: "earshot-admin")

    /// `http://127.0.0.1:PORT`.
    var baseURL: String { "http://127.0.0.1:\(port)" }

    private init(port: Int, folder: URL, burstBytes: Int, executable: String, configuration: URL) throws {
        self.port = port
        self.folder = folder
        self.burstBytes = burstBytes
        self.executable = executable
        self.configuration = configuration
        process = try ChildProcess(executable, ["-c", configuration.path])
    }

    /// Starts icecast2 and returns once it answers its status page. `burstBytes`: icecast2's burst on connecting,
    /// 64 KiB by default (4 s at 128 kbit/s, as a station usually has); 0 turns it off, as some stations do.
    ///
    /// As root, icecast2 refuses to run unless told to change to another user: it becomes the `icecast2` user that
    /// Debian's package makes, and its log folder is that user's.
    static func start(burstBytes: Int = 65_536) async throws -> IcecastServer {
        let icecast = try ProcessRunner.requireTool("icecast2", package: "icecast2")
        _ = try ProcessRunner.requireTool("gst-launch-1.0", package: "gstreamer1.0-tools")
        for element in ["shout2send", "mpegaudioparse", "taginject", "oggparse"]
        where try ProcessRunner.run("gst-inspect-1.0", ["--exists", element]).status != 0 {
            throw ToolkitError("GStreamer's \(element) is missing: apt-get install gstreamer1.0-plugins-good")
        }
        let port = try MPDClientTests.freePort()
        var template = Array("/tmp/earshot-icecast.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ToolkitError("mkdtemp: errno \(errno)") }
        let folder = URL(fileURLWithPath: String(cString: made), isDirectory: true)
        let logs = folder.appendingPathComponent("log", isDirectory: true)
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        chmod(folder.path, 0o755)
        var owner = ""
        if getuid() == 0 {
            guard let user = getpwnam("icecast2"), let group = getgrnam("icecast") else {
                throw ToolkitError("icecast2's system user (icecast2:icecast) is missing: apt-get install icecast2")
            }
            chown(logs.path, user.pointee.pw_uid, group.pointee.gr_gid)
            owner = "<changeowner><user>icecast2</user><group>icecast</group></changeowner>"
        }
        // A source gone quiet for 10 s is dropped.
        let configuration = folder.appendingPathComponent("icecast.xml")
        try """
            <icecast>
              <location>loopback</location><admin>earshot@localhost</admin><hostname>127.0.0.1</hostname>
              <limits><clients>16</clients><sources>4</sources><queue-size>524288</queue-size>
                <client-timeout>30</client-timeout><header-timeout>15</header-timeout>
                <source-timeout>10</source-timeout>
                <burst-on-connect>\(burstBytes > 0 ? 1 : 0)</burst-on-connect><burst-size>\(burstBytes)</burst-size>
              </limits>
              <authentication><source-password>\(sourcePassword)</source-password>
                <admin-user>\(admin.user)</admin-user><admin-password>\(admin.password)</admin-password>
              </authentication>
              <listen-socket><port>\(port)</port><bind-address>127.0.0.1</bind-address></listen-socket>
              <fileserve>0</fileserve>
              <paths><basedir>/usr/share/icecast2</basedir><logdir>\(logs.path)</logdir>
                <webroot>/usr/share/icecast2/web</webroot><adminroot>/usr/share/icecast2/admin</adminroot>
                <pidfile>\(logs.appendingPathComponent("icecast.pid").path)</pidfile></paths>
              <logging><accesslog>access.log</accesslog><errorlog>error.log</errorlog><loglevel>3</loglevel>
              </logging>
              <security><chroot>0</chroot>\(owner)</security>
            </icecast>
            """.write(to: configuration, atomically: true, encoding: .utf8)
        let server = try IcecastServer(port: port, folder: folder, burstBytes: burstBytes, executable: icecast,
                                       configuration: configuration)
        do {
            try await server.waitUntilAnswering()
        } catch {
            server.stop()
            throw error
        }
        return server
    }

    /// Starts icecast2 again on the same port, with the same configuration, after it was killed (a server coming
    /// back); returns once it answers. Its mounts have no source until fed again.
    func restart() async throws {
        process.removeOutputFiles()
        process = try ChildProcess(executable, ["-c", configuration.path])
        try await waitUntilAnswering()
    }

    // Waits until the running icecast2 answers its status page.
    private func waitUntilAnswering() async throws {
        let process = process
        try await waitUntil("icecast2 answers on 127.0.0.1:\(port)", timeout: .seconds(20),
                            interval: .milliseconds(50)) {
            guard process.isRunning else {
                throw ToolkitError("icecast2 exited: \(process.standardError()) \(self.errorLog())")
            }
            return (try? self.get("/status-json.xsl"))?.contains("icestats") == true
        }
    }

    /// GETs `path` from the server with curl (which scripts/test installs) and returns the body; throws on an HTTP
    /// error status.
    func get(_ path: String, admin: Bool = false) throws -> String {
        let credentials = admin ? ["-u", "\(Self.admin.user):\(Self.admin.password)"] : []
        return try ProcessRunner.run("curl", ["-sSf", "--max-time", "5"] + credentials + [baseURL + path],
                                     timeout: .seconds(10)).requireSuccess().standardOutput
    }

    /// Whether `mount` has a source now (it is listed in the status page).
    func hasSource(_ mount: String) -> Bool {
        (try? get("/status-json.xsl"))?.contains("\"listenurl\":\"\(baseURL)\(mount)\"") == true
    }

    /// Sets `mount`'s current title, as a station's playout does (the admin interface's metadata update).
    func setTitle(_ title: String, of mount: String) throws {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let song = title.addingPercentEncoding(withAllowedCharacters: allowed) ?? title
        let reply = try get("/admin/metadata?mount=\(mount)&mode=updinfo&song=\(song)", admin: true)
        guard reply.contains("Metadata update successful") else {
            throw ToolkitError("icecast2 refused the title update: \(reply)")
        }
    }

    /// How long a source has been on air when `feed` returns (with a burst on connecting): icecast2's burst (64 KiB,
    /// 4 s at 128 kbit/s) is full then, as on a station that has been on air for a while. A listener joining a source
    /// that went on air a moment ago gets less than the decoder's prebuffer and waits for the rest at the stream's own
    /// pace (IcecastTests.liveEdgeStation hears a station with no burst at all).
    static let onAirBeforeListeners = Duration.milliseconds(4500)

    /// Feeds `mount` from the MP3 or Ogg `file` at its own bit rate with shout2send, as station `name` with the first
    /// title `artist - title` (an MP3's only: an Ogg stream's titles are in its own headers), and returns once icecast2
    /// lists the mount and, when the server has a burst on connecting, it has been on air `onAirBeforeListeners`.
    func feed(_ mount: String, from file: URL, name: String, artist: String, title: String) async throws
        -> ChildProcess
    {
        // gst-launch joins its arguments into one description: values with spaces are quoted inside it.
        let parse = file.pathExtension == "ogg" ? ["oggparse"] : [
            "mpegaudioparse", "!",
            "taginject", "tags=\"artist=\\\"\(artist)\\\",title=\\\"\(title)\\\"\"",
        ]
        let source = try ChildProcess("gst-launch-1.0", ["-q", "filesrc", "location=\(file.path)", "!"] + parse + [
            "!", "shout2send", "ip=127.0.0.1", "port=\(port)", "password=\(Self.sourcePassword)", "mount=\(mount)",
            "streamname=\"\(name)\"",
        ])
        do {
            try await waitUntil("icecast2 lists \(mount)", timeout: .seconds(20), interval: .milliseconds(50)) {
                guard source.isRunning else {
                    throw ToolkitError("shout2send ended: \(source.standardError()); icecast2 running: "
                        + "\(self.process.isRunning) (\(self.process.standardError())); its log: \(self.errorLog())")
                }
                return self.hasSource(mount)
            }
            if burstBytes > 0 { try await Task.sleep(for: Self.onAirBeforeListeners) }
            guard source.isRunning else { throw ToolkitError("shout2send ended: \(source.standardError())") }
        } catch {
            source.kill()
            throw error
        }
        return source
    }

    /// icecast2's error log so far, for messages.
    func errorLog() -> String {
        (try? String(contentsOf: folder.appendingPathComponent("log/error.log"), encoding: .utf8)) ?? ""
    }

    /// Kills icecast2 (SIGKILL, as a crash would) and removes its folder.
    func stop() {
        process.kill()
        process.removeOutputFiles()
        try? FileManager.default.removeItem(at: folder)
    }

    /// The position sweep (`Fixtures.positionTrack`) as a station sends it: a constant bit-rate MP3, or an Ogg
    /// Vorbis at a managed bit rate, at `bitRate` kbit/s (128 by default, as stations usually send). Not the quality
    /// the fixtures' Vorbis files are made at: the sweep, one tone at a time, takes 22 kbit/s there, so icecast2's
    /// 64 KiB burst held 23 s of the show, which a listener played out before it noticed a lost server (and the
    /// reconnection's backoff had grown to 16-30 s by then: 61 s for IcecastTests.reconnects' Ogg case).
    static func positionShow(seconds: Double, bitRate: Int = 128, format: Fixtures.Format = .mp3) throws -> URL {
        let wav = try Fixtures.positionTrackWAV(seconds: seconds)
        return try Fixtures.file(named: "position-\(seconds)s-\(bitRate)k.\(format.fileExtension)") { output in
            switch format {
            case .mp3:
                try Fixtures.encode(wav, as: .mp3, into: output, bitRate: bitRate)
            case .vorbis:
                _ = try ProcessRunner.requireTool("oggenc", package: "vorbis-tools")
                try ProcessRunner.runChecked("oggenc", [
                    "-Q", "--managed", "-b", "\(bitRate)", "-m", "\(bitRate - 8)", "-M", "\(bitRate + 8)",
                    "-o", output.path, wav.path,
                ], timeout: .seconds(120))
            default:
                throw ToolkitError("a station's show is an MP3 or an Ogg Vorbis, not \(format)")
            }
        }
    }
}
