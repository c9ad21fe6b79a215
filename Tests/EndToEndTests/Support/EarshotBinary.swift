// Where the end-to-end tests find the package and the built `earshot` binary, and how they start it.

import EarshotTestSupport
import Foundation

extension TestEnvironment {
    /// The package root (the folder holding Package.swift), derived from this file's location.
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Support
        .deletingLastPathComponent()  // EndToEndTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()

    /// The built `earshot` executable.
    ///
    /// The first that exists of: `$EARSHOT_BINARY`; `earshot` beside the running test binary (the same
    /// build configuration as the tests); `<package root>/.build/debug/earshot`; and the folder that
    /// `swift build --show-bin-path` names. Computed once per process.
    static var earshotBinary: URL {
        get throws { try earshotBinaryLookup.get() }
    }

    /// Starts the earshot binary with `arguments`; its output is captured in files (see `ChildProcess`).
    ///
    /// - Parameters:
    ///   - environment: variables set on top of this process's (which holds PULSE_SERVER and XDG_RUNTIME_DIR).
    ///   - unsetting: variables earshot must not see.
    static func launchEarshot(
        _ arguments: [String], environment: [String: String] = [:], unsetting: Set<String> = []
    ) throws -> ChildProcess {
        try ChildProcess(try earshotBinary.path, arguments, environment: environment, unsetting: unsetting)
    }
}

/// The outcome of looking for the earshot binary, computed once.
private let earshotBinaryLookup: Result<URL, ToolkitError> = {
    var tried: [String] = []
    func existing(_ url: URL) -> URL? {
        tried.append(url.path)
        return FileManager.default.isExecutableFile(atPath: url.path) ? url : nil
    }
    if let explicit = ProcessInfo.processInfo.environment["EARSHOT_BINARY"], !explicit.isEmpty {
        // An explicit choice that does not exist is a mistake to report, not to paper over.
        if let url = existing(URL(fileURLWithPath: explicit)) { return .success(url) }
        return .failure(ToolkitError("EARSHOT_BINARY=\(explicit) is not an executable file"))
    }
    let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    if let url = existing(testBinary.deletingLastPathComponent().appendingPathComponent("earshot")) {
        return .success(url)
    }
    let root = TestEnvironment.packageRoot
    if let url = existing(root.appendingPathComponent(".build/debug/earshot")) { return .success(url) }
    if let result = try? ProcessRunner.run(
        "swift", ["build", "--package-path", root.path, "--show-bin-path"], timeout: .seconds(300)),
        result.succeeded,
        let url = existing(URL(fileURLWithPath: result.standardOutput.trimmed).appendingPathComponent("earshot"))
    {
        return .success(url)
    }
    return .failure(ToolkitError("the earshot binary is not built (looked at: \(tried.joined(separator: ", ")))"))
}()
