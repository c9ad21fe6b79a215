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
