// swift-tools-version:6.0
// Earshot: a polite background music player service for the Linux desktop.
// Layers, bottom up: C system libraries, the pure rulebook (EarshotCore), the audio pipeline,
// the libpulse adapter, the service (serial owner), and the thin `earshot` executable.
import PackageDescription

let package = Package(
    name: "Earshot",
    products: [
        .executable(name: "earshot", targets: ["earshot"]),
    ],
    targets: [
        // C libraries, each a module map plus a shim header that only includes the system one.
        // No pkgConfig: the module maps `link` the libraries, which avoids SwiftPM's "prohibited flag"
        // warning for pkg-config's -pthread; the headers live in the default include path on Debian.
        .systemLibrary(name: "CPulse", providers: [.apt(["libpulse-dev"])]),
        .systemLibrary(name: "CMPG123", providers: [.apt(["libmpg123-dev"])]),
        .systemLibrary(name: "CSystemd", providers: [.apt(["libsystemd-dev"])]),
        // gettid, RLIMIT_RTTIME and SCHED_RESET_ON_FORK, which Swift's Glibc module does not expose.
        .target(name: "CThreadShim"),
        // The MPRIS object's sd-bus vtables: C macros Swift cannot express, forwarding to Swift callbacks.
        .target(name: "CMPRISShim", linkerSettings: [.linkedLibrary("systemd")]),

        // The rulebook: events, state, commands and one `apply`. Standard library only.
        .target(name: "EarshotCore"),

        // File paths as the kernel sees them (bytes, not necessarily UTF-8), for every layer above the core.
        .target(name: "TrackPaths"),

        // Decoding (libmpg123) and the lock-free ring buffer the real-time side drains.
        .target(name: "AudioPipeline", dependencies: ["CMPG123", "TrackPaths"]),

        // The libpulse adapter: mainloop, context, stream, subscription, translation to events.
        .target(name: "PulseOutput", dependencies: ["CPulse", "CThreadShim", "AudioPipeline", "EarshotCore"]),

        // The serial owner of the state, the control socket, the event log, persistence and MPRIS.
        .target(
            name: "EarshotService",
            dependencies: [
                "EarshotCore", "TrackPaths", "AudioPipeline", "PulseOutput", "CSystemd", "CMPRISShim", "CThreadShim",
            ]
        ),

        // Wiring and argument handling only.
        .executableTarget(name: "earshot", dependencies: ["EarshotService", "EarshotCore", "TrackPaths"]),

        // The demo's picture (scripts/run --tour): records sink monitors with their timing and draws the
        // timeline SVG. Foundation only; not part of the player.
        .target(name: "TourTimeline"),
        .executableTarget(name: "earshot-timeline", dependencies: ["TourTimeline"]),

        // The one test toolkit the test targets share (STYLE.md): child processes, the private session bus, the
        // sound server's control, monitor recordings, test tones and their analysis. Foundation only; test-only,
        // never a dependency of a product target.
        .target(name: "EarshotTestSupport", path: "Tests/EarshotTestSupport"),

        .testTarget(name: "EarshotCoreTests", dependencies: ["EarshotCore"]),
        .testTarget(name: "TrackPathsTests", dependencies: ["TrackPaths"]),
        .testTarget(name: "AudioPipelineTests", dependencies: ["AudioPipeline", "TrackPaths", "EarshotTestSupport"]),
        // Configuration, state file and MPRIS (against a private dbus-daemon, driven by playerctl).
        .testTarget(
            name: "EarshotServiceTests",
            dependencies: ["EarshotService", "EarshotCore", "AudioPipeline", "TrackPaths", "EarshotTestSupport"]
        ),
        // Test-only: counts allocations and lock calls on armed threads by interposing malloc and the pthread locks
        // in the test executable (never linked into `earshot`).
        .target(name: "CRealtimeAudit", path: "Tests/CRealtimeAudit"),
        // Integration tests: need the private sound server that scripts/test starts.
        .testTarget(
            name: "PulseOutputTests",
            dependencies: ["PulseOutput", "AudioPipeline", "EarshotCore", "CRealtimeAudit", "EarshotTestSupport"]
        ),
        // End-to-end tests: run the built `earshot` binary against the private server and record sinks.
        // The phone-call flood places its calls through PulseOutput from inside the test process.
        .testTarget(
            name: "EndToEndTests", dependencies: ["earshot", "PulseOutput", "AudioPipeline", "EarshotTestSupport"]
        ),
        // The tour's timeline picture, from small recordings made in the test.
        .testTarget(name: "TourTimelineTests", dependencies: ["TourTimeline"]),
    ],
    swiftLanguageModes: [.v6]
)
