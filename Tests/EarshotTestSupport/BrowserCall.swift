// A call as a browser meeting makes one: headless Chromium opens a page that asks for the microphone
// (getUserMedia({audio: true})), plays the far end's voice with WebAudio, keeps the track for a few seconds and then
// stops it. No role, no cork request: only a running capture from the default source by "Chromium input"
// (PLATFORM.md, "Calls as real applications make them"). A second page only enumerates the devices and asks the
// permission state, as a meeting's lobby does before the call, and must not look like a call.
//
// The page reports what it did through its title, which the test reads from Chromium's DevTools endpoint
// (`curl 127.0.0.1:PORT/json/list`; the port Chromium picked is in the profile's DevToolsActivePort file). Times in
// the title are the page's `Date.now()`: wall-clock milliseconds, comparable with `Date()` in the test.
//
// Chromium finds the private sound server through the inherited PULSE_SERVER and XDG_RUNTIME_DIR, and gets a private
// session bus of its own (without one it complains and may stall). One profile folder serves a test's browser
// starts one after another (the first start in a fresh profile is the slow one); two at once cannot share it.

import Foundation
import Glibc

/// What a page loaded in `BrowserCall` does.
public enum BrowserPage: Sendable, Equatable {
    /// A call: getUserMedia({audio: true}), the far end's voice (the dial tone's two frequencies, faint) through
    /// WebAudio, the tracks stopped after `seconds`.
    case call(seconds: Double)
    /// A lobby: `enumerateDevices()` and `permissions.query({name: "microphone"})`, no getUserMedia.
    case enumerateDevices
}

/// The state a page reported in its title: a word (`requesting`, `capturing`, `ended`, `failed`, `enumerated`)
/// and the wall-clock moments it named.
public struct BrowserPageState: Sendable, CustomStringConvertible {
    /// The first word of the title.
    public let state: String
    /// The moments the title named (`requested`, `granted`, `stopped`, `asked`), as wall-clock dates.
    public let moments: [String: Date]
    /// The whole title, for messages.
    public let title: String

    /// Reads a title of the form `WORD key=MILLISECONDS ...`; any other word is kept as it is, with no moments.
    public init(title: String) {
        self.title = title
        let words = title.split(separator: " ")
        state = words.first.map(String.init) ?? ""
        var moments: [String: Date] = [:]
        for word in words.dropFirst() {
            let parts = word.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let milliseconds = Double(parts[1]) {
                moments[String(parts[0])] = Date(timeIntervalSince1970: milliseconds / 1000)
            }
        }
        self.moments = moments
    }

    /// The page's title as it read.
    public var description: String { title }
}

/// Headless Chromium running one page against the private sound server.
public final class BrowserCall: Sendable {
    /// The browser's main process.
    public let browser: ChildProcess
    /// The profile folder (`--user-data-dir`).
    public let profile: URL
    /// The page's file.
    public let page: URL
    /// The private session bus Chromium talks to.
    private let bus: PrivateSessionBus

    /// The application name Chromium's capture streams carry.
    public static let captureApplicationName = "Chromium input"

    /// Writes the page for `kind` into `profile` (created if missing) and starts Chromium on it; does not wait for
    /// the page.
    ///
    /// - Throws: when Chromium, curl or dbus-daemon is missing, or Chromium cannot be started.
    public init(_ kind: BrowserPage, profile: URL) throws {
        let program = try ProcessRunner.requireTool("chromium", package: "chromium")
        _ = try ProcessRunner.requireTool("curl", package: "curl")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        self.profile = profile
        // A port file left by an earlier browser on this profile would name a port nobody listens on.
        try? FileManager.default.removeItem(at: profile.appendingPathComponent("DevToolsActivePort"))
        page = profile.appendingPathComponent("page-\(UUID().uuidString.prefix(8)).html")
        try Data(Self.html(for: kind).utf8).write(to: page)
        bus = try PrivateSessionBus()
        let home = profile.appendingPathComponent("home", isDirectory: true)
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        browser = try ChildProcess(
            program,
            [
                "--headless=new", "--no-sandbox", "--use-fake-ui-for-media-stream",
                "--autoplay-policy=no-user-gesture-required", "--disable-gpu", "--no-first-run",
                "--user-data-dir=\(profile.path)", "--remote-debugging-port=0", page.absoluteString,
            ],
            environment: [
                "DBUS_SESSION_BUS_ADDRESS": bus.address, "HOME": home.path,
                "XDG_CONFIG_HOME": home.appendingPathComponent("config").path,
                "XDG_CACHE_HOME": home.appendingPathComponent("cache").path,
            ],
            unsetting: ["DISPLAY", "WAYLAND_DISPLAY"])
    }

    /// The page's title now, or `nil` while Chromium does not answer yet (or has no page).
    public func title() -> String? {
        guard let portText = try? String(
            contentsOf: profile.appendingPathComponent("DevToolsActivePort"), encoding: .utf8),
            let port = Int(portText.split(separator: "\n").first ?? "")
        else { return nil }
        guard let result = try? ProcessRunner.run(
            "curl", ["-s", "--max-time", "2", "http://127.0.0.1:\(port)/json/list"], timeout: .seconds(5)),
            result.succeeded,
            let targets = try? JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [[String: Any]]
        else { return nil }
        let pageTarget = targets.first { ($0["type"] as? String) == "page" && ($0["url"] as? String)?
            .hasPrefix("file://") == true }
        return pageTarget?["title"] as? String
    }

    /// Waits until the page reports `state` (or `failed`, which throws) and returns what it reported.
    ///
    /// - Throws: on a timeout or when Chromium exits, quoting the last title and Chromium's errors.
    @discardableResult
    public func waitFor(_ state: String, timeout: Duration = .seconds(30)) async throws -> BrowserPageState {
        var last: BrowserPageState?
        do {
            try await waitUntil("the page reports \(state)", timeout: timeout, interval: .milliseconds(25)) {
                guard browser.isRunning else { throw ToolkitError("chromium exited (\(browser.exitStatus ?? -1))") }
                guard let title = title() else { return false }
                let reported = BrowserPageState(title: title)
                last = reported
                if reported.state == "failed" { throw ToolkitError("the page failed: \(title)") }
                return reported.state == state
            }
        } catch {
            let errors = browser.standardError().split(separator: "\n").suffix(15).joined(separator: "\n")
            throw ToolkitError("\(error); last title: \(last?.title ?? "none"); chromium's last errors:\n\(errors)")
        }
        guard let last else { throw ToolkitError("no title read") }
        return last
    }

    /// Stops Chromium (SIGTERM, then SIGKILL after 5 s), then any of its helper processes still running (found by
    /// this profile's folder on their command line: processes this browser started), and the private bus.
    public func stop() async {
        await browser.terminate(grace: .seconds(5))
        for pid in Self.processes(naming: profile.path) {
            _ = Glibc.kill(pid, SIGKILL)
        }
        bus.stop()
        try? FileManager.default.removeItem(at: page)
    }

    /// The processes whose command line contains `text`.
    private static func processes(naming text: String) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry), pid != getpid(),
                  let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { return nil }
            let commandLine = String(decoding: data.map { $0 == 0 ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
            return commandLine.contains(text) ? pid : nil
        }
    }

    /// The page for `kind`. Titles: `requesting requested=T`, `capturing requested=T granted=T`,
    /// `ended requested=T granted=T stopped=T`, `failed NAME`,
    /// `enumerated asked=T answered=T devices:N permission:STATE`.
    static func html(for kind: BrowserPage) -> String {
        let script: String
        switch kind {
        case .call(let seconds):
            let (low, high) = (Fixtures.phoneCallFrequencies[0], Fixtures.phoneCallFrequencies[1])
            script = """
                async function run() {
                  const requested = Date.now();
                  document.title = 'requesting requested=' + requested;
                  let stream;
                  try { stream = await navigator.mediaDevices.getUserMedia({audio: true}); }
                  catch (error) { document.title = 'failed ' + error.name; return; }
                  const granted = Date.now();
                  // The far end's voice: what a meeting plays while the microphone is open.
                  const context = new AudioContext();
                  const gain = context.createGain();
                  gain.gain.value = 0.15;
                  gain.connect(context.destination);
                  const voices = [\(low), \(high)].map(frequency => {
                    const oscillator = context.createOscillator();
                    oscillator.frequency.value = frequency;
                    oscillator.connect(gain);
                    oscillator.start();
                    return oscillator;
                  });
                  // The microphone feeds the page's graph, as a meeting's level display or encoder would.
                  context.createMediaStreamSource(stream).connect(context.createAnalyser());
                  document.title = 'capturing requested=' + requested + ' granted=' + granted;
                  setTimeout(() => {
                    stream.getTracks().forEach(track => track.stop());
                    voices.forEach(oscillator => oscillator.stop());
                    context.close();
                    document.title = 'ended requested=' + requested + ' granted=' + granted
                      + ' stopped=' + Date.now();
                  }, \(Int(seconds * 1000)));
                }
                """
        case .enumerateDevices:
            script = """
                async function run() {
                  const asked = Date.now();
                  const devices = await navigator.mediaDevices.enumerateDevices();
                  let permission = 'unknown';
                  try { permission = (await navigator.permissions.query({name: 'microphone'})).state; }
                  catch (error) { permission = 'unavailable'; }
                  document.title = 'enumerated asked=' + asked + ' answered=' + Date.now()
                    + ' devices:' + devices.length + ' permission:' + permission;
                }
                """
        }
        return """
            <!doctype html>
            <html><head><meta charset="utf-8"><title>loading</title></head><body><script>
            \(script)
            run();
            </script></body></html>
            """
    }
}
