// Where the control socket lives: the configuration's default (PlayerConfiguration), the server (EarshotClients) and
// the command line all ask here.
import Glibc
import SystemSupport

/// Where the control socket lives: `$EARSHOT_SOCKET`, else `$XDG_RUNTIME_DIR/earshot/control.sock`, else
/// `/tmp/earshot-<uid>/control.sock`.
public func controlSocketPath(environment: [String: String] = ProcessEnvironment.current) -> String {
    if let path = environment["EARSHOT_SOCKET"], !path.isEmpty { return path }
    if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return runtime + "/earshot/control.sock" }
    return "/tmp/earshot-\(getuid())/control.sock"
}

/// Where MPD's protocol is served by default: the loopback port 6600 and `mpd.socket` beside the control socket
/// (`$XDG_RUNTIME_DIR/earshot/mpd.socket`). An instance given a control socket of its own (`$EARSHOT_SOCKET`: a test,
/// a second player) serves only its socket, and leaves MPD's well-known port to the user's own player.
public func defaultMPDListen(environment: [String: String] = ProcessEnvironment.current) -> [String] {
    let control = controlSocketPath(environment: environment)
    let socket = PathText.directory(of: control) + "/mpd.socket"
    if let path = environment["EARSHOT_SOCKET"], !path.isEmpty { return [socket] }
    return ["127.0.0.1:6600", socket]
}
