// swift-tools-version:6.0
// Earshot: a polite background music player service for the Linux desktop.
// Layers, bottom up: C system libraries, the pure rulebook (EarshotCore), the audio pipeline, the adapters (libpulse,
// MPRIS, real-time scheduling), the service (serial owner), its clients and its storage, and the `earshot` executable
// that wires them.
// Only adapter targets import C modules; EarshotService imports none, nor the clients' and storage's targets, which
// may wait (EarshotServiceTests' LayeringTests checks both).
import PackageDescription

// The language settings every Swift target shares, applied below in one place: Swift 6 mode, and complete strict
// concurrency checking (data races are compile errors). Swift 6 mode implies the second; it is named as well so that
// a target that ever has to drop to Swift 5 mode keeps the checking.
let sharedSwiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("StrictConcurrency"),
]

// The pure rulebook and its tests are optimized in debug builds too: the exhaustive checks walk hundreds of thousands
// of states through the reducer: 380 s of the test run unoptimized; optimized, all of EarshotCoreTests takes 77 s
// (`swift test --no-parallel --filter EarshotCoreTests`, 2026-12-05).
// Neither has C, threads or I/O to debug, and the sanitizer builds still instrument them. The test support is
// optimized too: its analysis of recordings (a Goertzel scan of a second of audio for its dominant frequency) took
// 40-50 s of each server's run for one test's 2 s tone unoptimized.
let optimizedInDebug: [SwiftSetting] = [.unsafeFlags(["-O"], .when(configuration: .debug))]

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
        // FLAC, Ogg Vorbis and Ogg Opus (scripts/compare-decoders chose it over the reference libraries).
        .systemLibrary(name: "CSndfile", providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(name: "CSystemd", providers: [.apt(["libsystemd-dev"])]),
        // Internet radio's HTTP(S): libcurl in Debian's OpenSSL flavour, the libcurl4 that Debian's own `curl` uses
        // (one TLS stack with the rest of the desktop, the system's certificates by default; the GnuTLS flavour
        // would be a second TLS library in the process for no gain). CCurl is its header only (no `link`):
        // CCurlLoader loads the library with dlopen when the first stream plays (an idle Earshot stays 6 MB lighter).
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .target(name: "CCurlLoader", dependencies: ["CCurl"]),
        // The music library's database (with FTS5, which Debian's build has).
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CEbur128", providers: [.apt(["libebur128-dev"])]),
        // gettid, RLIMIT_RTTIME and SCHED_RESET_ON_FORK, which Swift's Glibc module does not expose.
        .target(name: "CThreadShim"),
        // The MPRIS object's sd-bus vtables: C macros Swift cannot express, forwarding to Swift callbacks.
        .target(name: "CMPRISShim", linkerSettings: [.linkedLibrary("systemd")]),

        // The rulebook: events, state, commands and one `apply`. Standard library only.
        .target(name: "EarshotCore", swiftSettings: optimizedInDebug),

        // File paths as the kernel sees them (bytes, not necessarily UTF-8), for every layer above the core.
        .target(name: "TrackPaths"),

        // What the product once took from Foundation (a lock, named threads, unbuffered standard streams, path
        // splitting, the environment, directory listings), over Glibc: the product imports neither Foundation, which
        // loads ICU, nor FoundationEssentials, which cost over 1 MiB resident in an idle service.
        .target(name: "SystemSupport", dependencies: ["CThreadShim"]),

        // Decoding (libmpg123 for MP3, libsndfile for FLAC, Vorbis and Opus; internet streams through
        // NetworkStream and libmpg123's feed API) and the lock-free ring buffer the real-time side drains.
        .target(
            name: "AudioPipeline", dependencies: ["CMPG123", "CSndfile", "TrackPaths", "SystemSupport", "NetworkStream"]
        ),

        // Internet radio's fetching: a libcurl handle on a thread of its own reading an http(s) stream into a bounded,
        // counted byte buffer, and the pure readers of what servers answer (the response's head, ICY metadata),
        // fuzzed by scripts/fuzz.
        .target(name: "NetworkStream", dependencies: ["CCurlLoader", "SystemSupport"]),

        // The libpulse adapter: mainloop, context, stream, subscription, translation to events.
        .target(
            name: "PulseOutput",
            dependencies: ["CPulse", "CThreadShim", "AudioPipeline", "EarshotCore", "SystemSupport"]
        ),

        // The MPRIS adapter (sd-bus): the bus thread, the object's properties and methods, and the plain Swift values
        // it exchanges with the player (`MPRISPublishing`, `MPRISCommand`, `MPRISSnapshot`).
        .target(name: "EarshotMPRIS", dependencies: ["CSystemd", "CMPRISShim", "TrackPaths", "SystemSupport"]),

        // The logind adapter (sd-bus, system bus): sleep, the session leaving the seat, the screen lock, translated
        // into rulebook events; and the sleep's delay lock, released when the rules say so.
        .target(name: "EarshotLogind", dependencies: ["CSystemd", "EarshotCore", "SystemSupport"]),

        // The desktop's idle suspend held off while playing (rule 23): sd-bus on the session bus, asking the desktop
        // portal, GNOME's session manager or the freedesktop power management, on its own thread.
        .target(name: "EarshotIdleInhibitor", dependencies: ["CSystemd", "SystemSupport"]),

        // Real-time scheduling of the thread that feeds the sound server: RLIMIT_RTTIME, SCHED_FIFO, else rtkit on the
        // system bus. A target of its own: it is neither sound (PulseOutput stays libpulse only) nor MPRIS (it shares
        // only libsystemd with it), and it keeps the service free of C modules.
        .target(name: "RealtimeScheduling", dependencies: ["CSystemd", "CThreadShim", "SystemSupport"]),

        // JSON trees, read and written by their own code: the control protocol's lines and the files' contents. Pure:
        // no thread, no I/O.
        .target(name: "EarshotJSON"),

        // MPD's protocol as pure values: request lines split as MPD splits them, command lists, idle, `ACK` errors
        // (the parser the MPD front-end's server feeds, fuzzed by scripts/fuzz). Standard library only.
        .target(name: "MPDProtocol"),

        // The music library, an adapter that may wait for the disk: the SQLite database, the scanner on an idle
        // priority thread of its own, the inotify watcher, the query language (pure). The owner never imports it; the
        // executable wires it.
        .target(
            name: "MusicLibrary",
            dependencies: ["CSQLite", "CEbur128", "AudioPipeline", "TrackPaths", "SystemSupport"]
        ),

        // The serial owner: the player's actor on its own thread, its parts, the values it hands over and the small
        // interfaces it hands them through. It never waits, and imports nothing that does: not the clients, not the
        // storage (LayeringTests checks it); the `earshot` executable wires them in.
        .target(
            name: "EarshotService",
            dependencies: [
                "EarshotCore", "TrackPaths", "AudioPipeline", "PulseOutput", "EarshotMPRIS", "RealtimeScheduling",
                "SystemSupport", "EarshotJSON",
            ]
        ),

        // What talks to clients, on threads of their own, each of which may wait for its client: the control socket,
        // the replies it waits for, the event log's followers and their writer, `earshot events`, MPD's protocol.
        .target(
            name: "EarshotClients",
            dependencies: [
                "EarshotService", "EarshotCore", "AudioPipeline", "EarshotJSON", "SystemSupport", "TrackPaths",
                "MPDProtocol",
            ]
        ),

        // The disk, on threads that may wait for it: the state writer, the cover pictures' worker, and what the command
        // line reads before anything starts (the configuration file, the files and playlists a user names).
        .target(
            name: "EarshotStorage",
            dependencies: [
                "EarshotService", "EarshotCore", "EarshotJSON", "AudioPipeline", "SystemSupport", "TrackPaths",
            ]
        ),

        // Argument handling, and the wiring of the owner to its clients and its storage.
        .executableTarget(
            name: "earshot",
            dependencies: [
                "EarshotService", "EarshotClients", "EarshotStorage", "EarshotJSON", "EarshotCore", "EarshotMPRIS",
                "EarshotLogind", "EarshotIdleInhibitor", "AudioPipeline", "TrackPaths", "SystemSupport",
                "MusicLibrary",
            ]
        ),

        // The demo's picture (scripts/run --tour): records sink monitors with their timing and draws the
        // timeline SVG. FoundationEssentials only (not linked into `earshot`, so it may keep it).
        .target(name: "TourTimeline", dependencies: ["SystemSupport"]),
        .executableTarget(name: "earshot-timeline", dependencies: ["TourTimeline", "SystemSupport"]),

        // The one test toolkit the test targets share (STYLE.md): child processes, the private session bus, the
        // sound server's control, monitor recordings, test tones and their analysis, and the waiting list queries on a
        // PulseConnection that the product itself never makes (it lists only with `requestInventory`). Foundation,
        // SystemSupport for LockedValue and PulseOutput; test-only, never a dependency of a product target.
        .target(
            name: "EarshotTestSupport", dependencies: ["SystemSupport", "PulseOutput"],
            path: "Tests/EarshotTestSupport", swiftSettings: optimizedInDebug
        ),

        .testTarget(name: "EarshotCoreTests", dependencies: ["EarshotCore"], swiftSettings: optimizedInDebug),
        .testTarget(name: "TrackPathsTests", dependencies: ["TrackPaths"]),
        .testTarget(name: "AudioPipelineTests", dependencies: ["AudioPipeline", "TrackPaths", "EarshotTestSupport"]),
        // The owner's parts, its clients and its storage: configuration, state files, the control protocol, the
        // player's report, the event log's followers, and the layering rule.
        .testTarget(
            name: "EarshotServiceTests",
            dependencies: [
                "EarshotService", "EarshotClients", "EarshotStorage", "EarshotJSON", "EarshotCore", "AudioPipeline",
                "EarshotMPRIS", "TrackPaths", "EarshotTestSupport", "MPDProtocol", "NetworkStream",
            ]
        ),
        // The music library on generated trees of tagged files: scanning, the database, the query language.
        .testTarget(
            name: "MusicLibraryTests",
            dependencies: ["MusicLibrary", "AudioPipeline", "TrackPaths", "EarshotTestSupport"]
        ),
        // Internet radio's fetching against loopback servers the tests run, and its pure readers.
        .testTarget(name: "NetworkStreamTests", dependencies: ["NetworkStream", "EarshotTestSupport"]),
        // MPD's protocol parser and framing, without a socket.
        .testTarget(name: "MPDProtocolTests", dependencies: ["MPDProtocol"]),
        // MPRIS against a private dbus-daemon, driven by playerctl.
        .testTarget(name: "EarshotMPRISTests", dependencies: ["EarshotMPRIS", "TrackPaths", "EarshotTestSupport"]),
        // The logind adapter against python3-dbusmock's logind on a private bus (no sound server).
        .testTarget(
            name: "EarshotLogindTests", dependencies: ["EarshotLogind", "EarshotCore", "EarshotTestSupport"]
        ),
        // The fallback order of real-time scheduling (the real calls are proven end to end).
        .testTarget(name: "RealtimeSchedulingTests", dependencies: ["RealtimeScheduling"]),
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
    ]
)

// Every Swift target gets the shared settings; the C targets (system libraries and the C shims, all named C...) take
// none.
for target in package.targets where target.type != .system && !target.name.hasPrefix("C") {
    target.swiftSettings = (target.swiftSettings ?? []) + sharedSwiftSettings
}
