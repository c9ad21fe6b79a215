// libFuzzer target for the strict configuration decoder, `ConfigurationFile.parse`. Not a SwiftPM target:
// scripts/fuzz compiles it with ConfigurationFile.swift, PlayerConfiguration.swift and the files they need,
// against EarshotCore built as a module of its own.
//
// Besides "never crash", it checks that an accepted file only ever yields values inside the documented ranges,
// and that every refusal can be worded.
import EarshotCore
import Foundation

/// The path the errors name; never opened.
private let configurationPath = "/fuzz/earshot/config.json"

/// libFuzzer's entry point: decodes `data` as a configuration file.
@_cdecl("LLVMFuzzerTestOneInput")
public func configurationFileFuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Data(UnsafeBufferPointer(start: data, count: data == nil ? 0 : size))
    do {
        let configuration = try ConfigurationFile.parse(bytes, path: configurationPath)
        require(ConfigurationFile.targetLatencyRange.contains(configuration.targetLatencyMilliseconds),
                     "latency out of range was accepted")
        let window = configuration.policy.resumeWindowMilliseconds
        require(window >= 0 && window <= 1440 * 60_000, "resume window out of range was accepted")
        require(!configuration.mediaRole.isEmpty, "an empty media role was accepted")
        require(!configuration.triggerRoles.contains(""), "an empty trigger role was accepted")
        require(configuration.sinkName?.isEmpty != true, "an empty sink name was accepted")
    } catch {
        require(error.description.contains(configurationPath), "a refusal that does not name the file")
        _ = error.key
    }
    return 0
}

/// Stops the process with `message` when `condition` is false (fatalError keeps its message in -O builds).
private func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
