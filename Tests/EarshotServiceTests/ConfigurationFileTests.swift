// The configuration file: defaults, every key, and every way a file is refused (with the key and the path).
import AudioPipeline
import EarshotCore
import Foundation
import Testing

@testable import EarshotService
@testable import EarshotStorage

@Suite("Configuration file")
struct ConfigurationFileTests {
    /// Writes `text` as `earshot/config.json` under a fresh XDG_CONFIG_HOME; returns the environment and path.
    private func configHome(with text: String?) throws -> (environment: [String: String], path: String) {
        let home = try TemporaryDirectory.make()
        let environment = ["XDG_CONFIG_HOME": home, "HOME": "/nonexistent"]
        let path = ConfigurationFile.path(environment: environment)
        if let text {
            try FileManager.default.createDirectory(atPath: home + "/earshot", withIntermediateDirectories: true)
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        }
        return (environment, path)
    }

    private func load(_ text: String) throws -> PlayerConfiguration {
        let (environment, _) = try configHome(with: text)
        return try ConfigurationFile.load(environment: environment)
    }

    /// Loads `text`, expecting a refusal; returns the error.
    private func refusal(_ text: String) throws -> ConfigurationError {
        let (environment, path) = try configHome(with: text)
        do {
            _ = try ConfigurationFile.load(environment: environment)
        } catch {
            #expect(error.path == path)
            #expect(error.description.hasSuffix(" in \(path)") || error.description.contains(" in \(path) ("))
            return error
        }
        Issue.record("the file was accepted: \(text)")
        return ConfigurationError(.invalidJSON, path: "")
    }

    private func expectDefaults(_ configuration: PlayerConfiguration) {
        #expect(configuration.sinkName == nil)
        #expect(configuration.targetLatencyMilliseconds == 1000)
        #expect(configuration.mediaRole == "music")
        #expect(configuration.triggerRoles == ["phone"])
        #expect(configuration.interruptionScope == .session)
        #expect(configuration.policy == ResumePolicy(resumeAfterInterruption: true,
                                                     resumeWindowMilliseconds: 30 * 60 * 1000,
                                                     inhibitIdleSuspend: true))
        #expect(configuration.debugLogging == false)
        #expect(configuration.callDetection == .microphone)
        #expect(configuration.callIgnoreApplications.isEmpty)
        #expect(configuration.policy.pauseOnLock == false)
        #expect(configuration.fadeMilliseconds == 50)
        #expect(configuration.duckRoles == ["a11y", "event"])
        #expect(configuration.duckLevelDecibels == -12)
        #expect(configuration.replayGain == ReplayGainSettings(mode: .auto, preampDb: 0, fallbackDb: 0))
    }

    @Test("replayGain, replayGainPreampDb and replayGainFallbackDb are applied")
    func replayGainKeys() throws {
        let configuration = try load(#"{"replayGain": "album", "replayGainPreampDb": 3, "replayGainFallbackDb": -6.5}"#)
        #expect(configuration.replayGain == ReplayGainSettings(mode: .album, preampDb: 3, fallbackDb: -6.5))
        #expect(try load(#"{"replayGain": "off"}"#).replayGain.mode == .off)
    }

    @Test("fadeMs, duckRoles and duckLevel are applied; 0 turns fades and ducking off")
    func edgeKeys() throws {
        let configuration = try load(#"{"fadeMs": 120, "duckRoles": ["a11y"], "duckLevel": -20.5}"#)
        #expect(configuration.fadeMilliseconds == 120)
        #expect(configuration.duckRoles == ["a11y"])
        #expect(configuration.duckLevelDecibels == -20.5)
        let off = try load(#"{"fadeMs": 0, "duckLevel": 0}"#)
        #expect(off.fadeMilliseconds == 0 && off.duckGain == 1)
        // -12 dB is a quarter of the amplitude.
        #expect(abs(PlayerConfiguration().duckGain - 0.2512) < 0.0001)
    }

    @Test("callDetection and callIgnoreApplications are applied")
    func callKeys() throws {
        for detection in CallDetection.allCases {
            let configuration = try load(#"{"callDetection": "\#(detection.rawValue)", "#
                + #""callIgnoreApplications": ["nerd-dictation", "Audacity"]}"#)
            #expect(configuration.callDetection == detection)
            #expect(configuration.callIgnoreApplications == ["nerd-dictation", "Audacity"])
        }
        let error = try refusal(#"{"callDetection": "browsers"}"#)
        #expect(error.key == "callDetection")
        #expect(error.description.contains(#"one of "microphone", "knownApps", "roles""#), "\(error)")
    }

    @Test("a missing file means the defaults")
    func missingFileMeansDefaults() throws {
        let (environment, path) = try configHome(with: nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        expectDefaults(try ConfigurationFile.load(environment: environment))
    }

    @Test("an empty object means the defaults")
    func emptyObjectMeansDefaults() throws {
        expectDefaults(try load("{}"))
    }

    @Test("Config/config.json documents exactly the defaults")
    func shippedFileIsTheDefaults() throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let shipped = try Data(contentsOf: repository.appendingPathComponent("Config/config.json"))
        let configuration = try ConfigurationFile.parse(shipped, path: "Config/config.json")
        expectDefaults(configuration)
        // Every key is documented.
        let object = try #require(try JSONSerialization.jsonObject(with: shipped) as? [String: Any])
        #expect(Set(object.keys) == Set(ConfigurationFile.knownKeys + [ConfigurationFile.commentKey]))
    }

    @Test("mpdListen: ports and socket paths, [] for off, null for the default; anything else refused by its key")
    func mpdListen() throws {
        #expect(try load(#"{"mpdListen": ["127.0.0.1:6601", "localhost:7000", "/run/user/1/x.socket"]}"#).mpdListen
            == ["127.0.0.1:6601", "localhost:7000", "/run/user/1/x.socket"])
        #expect(try load(#"{"mpdListen": []}"#).mpdListen == [])
        #expect(try load(#"{"mpdListen": null}"#).mpdListen == PlayerConfiguration().mpdListen)
        #expect(defaultMPDListen(environment: ["XDG_RUNTIME_DIR": "/run/user/7"])
            == ["127.0.0.1:6600", "/run/user/7/earshot/mpd.socket"])
        #expect(defaultMPDListen(environment: ["EARSHOT_SOCKET": "/tmp/t/control.sock"]) == ["/tmp/t/mpd.socket"])
        for bad in [#"["6600"]"#, #"["host:6600"]"#, #"["127.0.0.1:0"]"#, #"["127.0.0.1:65536"]"#,
                    #"["relative.sock"]"#, #"["1.2.3:4"]"#, #"[6600]"#, #""127.0.0.1:6600""#] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try load(#"{"mpdListen": \#(bad)}"#) }
        }
        // A non-loopback address only with a password; the stored playlists' folder absolute or ~/.
        #expect(throws: ConfigurationError.self) { try load(#"{"mpdListen": ["192.168.1.2:6600"]}"#) }
        let open = try load(#"{"mpdListen": ["192.168.1.2:6600"], "mpdPassword": "sesame"}"#)
        #expect(open.mpdPassword == "sesame" && open.mpdListen == ["192.168.1.2:6600"])
        #expect(throws: ConfigurationError.self) { try load(#"{"mpdPassword": ""}"#) }
        #expect(try load(#"{"playlistDirectory": "~/lists"}"#).playlistDirectory == "~/lists")
        // MPD's connection_timeout: 60 s by default, whole seconds up to a day.
        #expect(PlayerConfiguration().mpdConnectionTimeoutSeconds == 60)
        #expect(try load(#"{"mpdConnectionTimeoutSeconds": 1}"#).mpdConnectionTimeoutSeconds == 1)
        #expect(try load(#"{"mpdConnectionTimeoutSeconds": 86400}"#).mpdConnectionTimeoutSeconds == 86_400)
        for bad in ["0", "86401", "1.5", #""60""#, "null"] {
            #expect(try refusal(#"{"mpdConnectionTimeoutSeconds": \#(bad)}"#).key == "mpdConnectionTimeoutSeconds",
                    "\(bad)")
        }
        #expect(throws: ConfigurationError.self) { try load(#"{"playlistDirectory": "lists"}"#) }
    }

    @Test("every key is applied")
    func everyKeyIsApplied() throws {
        let configuration = try load("""
            {
              "//": "a comment",
              "triggerRoles": ["phone", "alarm"],
              "interruptionScope": "sameSink",
              "resumeAfterInterruption": false,
              "resumeWindowMinutes": 2.5,
              "mediaRole": "video",
              "targetLatencyMilliseconds": 120,
              "logLevel": "debug",
              "sink": "headphones"
            }
            """)
        #expect(configuration.triggerRoles == ["phone", "alarm"])
        #expect(configuration.interruptionScope == .sameSink)
        #expect(configuration.policy.resumeAfterInterruption == false)
        #expect(configuration.policy.resumeWindowMilliseconds == 150_000)
        #expect(configuration.mediaRole == "video")
        #expect(configuration.targetLatencyMilliseconds == 120)
        #expect(configuration.debugLogging == true)
        #expect(configuration.sinkName == "headphones")
    }

    @Test("musicDirectories: absolute or ~/ paths, null for the default; anything else names the key")
    func musicDirectories() throws {
        #expect(try load(#"{"musicDirectories": ["/srv/music", "~/Musik"]}"#).musicDirectories
            == ["/srv/music", "~/Musik"])
        #expect(try load(#"{"musicDirectories": null}"#).musicDirectories == nil)
        #expect(try load("{}").musicDirectories == nil)
        for wrong in [#"{"musicDirectories": "/srv/music"}"#, #"{"musicDirectories": [3]}"#,
                      #"{"musicDirectories": ["Music"]}"#] {
            #expect(try refusal(wrong).key == "musicDirectories", "\(wrong)")
        }
    }

    @Test("each key alone changes only itself")
    func eachKeyAlone() throws {
        #expect(try load(#"{"triggerRoles": []}"#).triggerRoles == [])
        #expect(try load(#"{"interruptionScope": "session"}"#).interruptionScope == .session)
        #expect(try load(#"{"resumeAfterInterruption": false}"#).policy.resumeAfterInterruption == false)
        #expect(try load(#"{"resumeWindowMinutes": 0}"#).policy.resumeWindowMilliseconds == 0)
        #expect(try load(#"{"resumeWindowMinutes": 1440}"#).policy.resumeWindowMilliseconds == 86_400_000)
        #expect(try load(#"{"liveBufferMinutes": 0.1}"#).liveBufferSeconds == 6)
        #expect(try load(#"{"liveBufferMinutes": 120}"#).liveBufferSeconds == 7_200)
        #expect(try load(#"{"radioReconnectMinutes": 0.25}"#).policy.liveReconnect.giveUpMilliseconds == 15_000)
        #expect(try load(#"{"mediaRole": "video"}"#).mediaRole == "video")
        #expect(try load(#"{"targetLatencyMilliseconds": 10}"#).targetLatencyMilliseconds == 10)
        #expect(try load(#"{"targetLatencyMilliseconds": 2000}"#).targetLatencyMilliseconds == 2000)
        #expect(try load(#"{"logLevel": "info"}"#).debugLogging == false)
        let pausingOnLock = try load(#"{"pauseOnLock": true}"#)
        #expect(pausingOnLock.policy == ResumePolicy(pauseOnLock: true, inhibitIdleSuspend: true))
        #expect(try load(#"{"pauseOnLock": false}"#).policy == ResumePolicy(inhibitIdleSuspend: true))
        // Rule 23: on by default; off when the key says so.
        #expect(try load(#"{"inhibitIdleSuspend": false}"#).policy == ResumePolicy())
        #expect(try load(#"{"sink": null}"#).sinkName == nil)
        let onlySink = try load(#"{"sink": "speakers"}"#)
        #expect(onlySink.sinkName == "speakers")
        #expect(onlySink.targetLatencyMilliseconds == 1000 && onlySink.triggerRoles == ["phone"])
    }

    @Test("an unknown key is refused, naming the key and the file")
    func unknownKey() throws {
        let error = try refusal(#"{"resumeWindow": 10}"#)
        #expect(error.problem == .unknownKeys(["resumeWindow"]))
        #expect(error.key == "resumeWindow")
        #expect(error.description.hasPrefix(#"config.json: unknown key "resumeWindow" in \#(error.path)"#))
    }

    @Test("several unknown keys are all named")
    func severalUnknownKeys() throws {
        let error = try refusal(#"{"zeta": 1, "mediaRole": "music", "Sink": "x"}"#)
        #expect(error.problem == .unknownKeys(["Sink", "zeta"]))
        #expect(error.description.contains(#"unknown keys "Sink", "zeta""#))
    }

    @Test("a wrong type is refused, naming the key", arguments: [
        (#"{"triggerRoles": "phone"}"#, "triggerRoles"),
        (#"{"triggerRoles": ["phone", 3]}"#, "triggerRoles"),
        (#"{"resumeAfterInterruption": "yes"}"#, "resumeAfterInterruption"),
        (#"{"resumeAfterInterruption": 1}"#, "resumeAfterInterruption"),
        (#"{"pauseOnLock": "yes"}"#, "pauseOnLock"),
        (#"{"pauseOnLock": 1}"#, "pauseOnLock"),
        (#"{"inhibitIdleSuspend": "no"}"#, "inhibitIdleSuspend"),
        (#"{"pauseOnLock": null}"#, "pauseOnLock"),
        (#"{"resumeWindowMinutes": "30"}"#, "resumeWindowMinutes"),
        (#"{"resumeWindowMinutes": true}"#, "resumeWindowMinutes"),
        (#"{"liveBufferMinutes": "30"}"#, "liveBufferMinutes"),
        (#"{"mediaRole": 5}"#, "mediaRole"),
        (#"{"interruptionScope": 1}"#, "interruptionScope"),
        (#"{"targetLatencyMilliseconds": 50.5}"#, "targetLatencyMilliseconds"),
        (#"{"targetLatencyMilliseconds": "50"}"#, "targetLatencyMilliseconds"),
        (#"{"logLevel": false}"#, "logLevel"),
        (#"{"sink": ["a"]}"#, "sink"),
        (#"{"logLevel": null}"#, "logLevel"),
        (#"{"//": 1}"#, "//"),
        (#"{"callDetection": true}"#, "callDetection"),
        (#"{"callIgnoreApplications": "zoom"}"#, "callIgnoreApplications"),
        (#"{"callIgnoreApplications": ["zoom", 1]}"#, "callIgnoreApplications"),
        (#"{"fadeMs": 40.5}"#, "fadeMs"),
        (#"{"duckRoles": "a11y"}"#, "duckRoles"),
        (#"{"duckLevel": "-12dB"}"#, "duckLevel"),
        (#"{"replayGain": true}"#, "replayGain"),
        (#"{"replayGainPreampDb": "3 dB"}"#, "replayGainPreampDb"),
    ])
    func wrongType(text: String, key: String) throws {
        let error = try refusal(text)
        guard case .wrongType(let named, _) = error.problem else {
            Issue.record("expected a wrong type, got \(error)")
            return
        }
        #expect(named == key)
        #expect(error.description.hasPrefix(#"config.json: key "\#(key)" must be "#))
    }

    @Test("a value out of range is refused, naming the key", arguments: [
        (#"{"targetLatencyMilliseconds": 9}"#, "targetLatencyMilliseconds"),
        (#"{"targetLatencyMilliseconds": 2001}"#, "targetLatencyMilliseconds"),
        (#"{"resumeWindowMinutes": -1}"#, "resumeWindowMinutes"),
        (#"{"resumeWindowMinutes": 1441}"#, "resumeWindowMinutes"),
        (#"{"liveBufferMinutes": 0.05}"#, "liveBufferMinutes"),
        (#"{"liveBufferMinutes": 121}"#, "liveBufferMinutes"),
        (#"{"radioReconnectMinutes": 0}"#, "radioReconnectMinutes"),
        (#"{"logLevel": "verbose"}"#, "logLevel"),
        (#"{"interruptionScope": "global"}"#, "interruptionScope"),
        (#"{"triggerRoles": [""]}"#, "triggerRoles"),
        (#"{"mediaRole": ""}"#, "mediaRole"),
        (#"{"sink": ""}"#, "sink"),
        (#"{"callDetection": "Microphone"}"#, "callDetection"),
        (#"{"callIgnoreApplications": [""]}"#, "callIgnoreApplications"),
        (#"{"fadeMs": -1}"#, "fadeMs"),
        (#"{"fadeMs": 501}"#, "fadeMs"),
        (#"{"duckLevel": 3}"#, "duckLevel"),
        (#"{"duckLevel": -61}"#, "duckLevel"),
        (#"{"duckRoles": [""]}"#, "duckRoles"),
        (#"{"replayGain": "Track"}"#, "replayGain"),
        (#"{"replayGainPreampDb": 41}"#, "replayGainPreampDb"),
        (#"{"replayGainFallbackDb": -80}"#, "replayGainFallbackDb"),
    ])
    func outOfRange(text: String, key: String) throws {
        let error = try refusal(text)
        guard case .outOfRange(let named, _) = error.problem else {
            Issue.record("expected out of range, got \(error)")
            return
        }
        #expect(named == key)
        #expect(error.description.hasPrefix(#"config.json: key "\#(key)" is out of range"#))
    }

    @Test("the latency range is stated in the message")
    func latencyMessage() throws {
        let error = try refusal(#"{"targetLatencyMilliseconds": 5}"#)
        #expect(error.description.contains("an integer from 10 to 2000"))
    }

    @Test("invalid JSON is refused, naming the file", arguments: [#"{"sink": "#, "", "sink = headphones", "{'a': 1}"])
    func invalidJSON(text: String) throws {
        let error = try refusal(text)
        #expect(error.problem == .invalidJSON)
        #expect(error.description == "config.json: not valid JSON in \(error.path)")
    }

    @Test("JSON that is not an object is refused")
    func notAnObject() throws {
        #expect(try refusal(#"["sink"]"#).problem == .notAnObject)
        #expect(try refusal("42").problem == .notAnObject)
    }

    @Test("a directory in place of the file is reported as unreadable")
    func directoryInPlace() throws {
        let (environment, path) = try configHome(with: nil)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        #expect(throws: ConfigurationError(.unreadable(reason: "not a regular file"), path: path)) {
            try ConfigurationFile.load(environment: environment)
        }
    }

    @Test("the path follows XDG_CONFIG_HOME, else HOME; a relative XDG_CONFIG_HOME is ignored")
    func pathRules() {
        #expect(ConfigurationFile.path(environment: ["XDG_CONFIG_HOME": "/x/conf/", "HOME": "/home/u"])
                    == "/x/conf/earshot/config.json")
        #expect(ConfigurationFile.path(environment: ["HOME": "/home/u"]) == "/home/u/.config/earshot/config.json")
        #expect(ConfigurationFile.path(environment: ["XDG_CONFIG_HOME": "", "HOME": "/home/u"])
                    == "/home/u/.config/earshot/config.json")
        #expect(ConfigurationFile.path(environment: ["XDG_CONFIG_HOME": "conf", "HOME": "/home/u"])
                    == "/home/u/.config/earshot/config.json")
        // No HOME at all (some service managers): the password database's entry.
        #expect(ConfigurationFile.path(environment: [:]).hasSuffix("/.config/earshot/config.json"))
    }
}

/// Fresh directories under the system's temporary directory, for one test each.
enum TemporaryDirectory {
    /// Creates a new empty directory and returns its path.
    static func make() throws -> String {
        var base = NSTemporaryDirectory()
        while base.count > 1 && base.hasSuffix("/") { base.removeLast() }
        var template = Array((base + "/earshot-tests.XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else { throw CocoaError(.fileWriteUnknown) }
        return template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
