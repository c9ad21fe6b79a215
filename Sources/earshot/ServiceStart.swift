// Starting the service for `earshot play --start-service`, the command earshot.desktop gives a file manager's "Open
// with" and a launcher: a desktop launch has no terminal to play in the foreground, and the files belong in the
// user's service (its queue is saved, MPRIS and media keys reach it). The service is started the way the package
// installs it, through its systemd user unit, so that it runs with the unit's sandbox and restarts as the unit says.
import EarshotClients
import EarshotService
import Glibc
import SystemSupport

/// Makes sure the service answers on its control socket, starting its systemd user unit when it does not.
enum ServiceStart {
    /// The user unit the package installs (/usr/lib/systemd/user/earshot.service).
    static let unitName = "earshot.service"

    /// How long the service may take to answer after systemd started it (it restores its queue and connects to the
    /// sound server first; a loaded machine is slow).
    static let answerTimeoutMilliseconds = 10_000

    /// Returns once the service at `socketPath` answers; starts the unit first when it does not. Exits with a
    /// message naming what failed when systemd cannot start it or it does not answer in time.
    static func ensureRunning(socketPath: String) {
        if ControlClient.isAnswering(path: socketPath) { return }
        let status = run(["systemctl", "--user", "start", unitName])
        guard status == 0 else {
            fail("the service is not running and `systemctl --user start \(unitName)` failed "
                + (status < 0 ? "(systemctl could not be run)" : "(exit status \(status))"),
                code: ExitStatus.failure)
        }
        // Type=simple: systemctl returns once the process is forked, before the socket is bound.
        var waited = 0
        while !ControlClient.isAnswering(path: socketPath) {
            guard waited < answerTimeoutMilliseconds else {
                fail("systemd started \(unitName), but it did not answer within \(answerTimeoutMilliseconds / 1000) s "
                    + "(see `journalctl --user -u earshot`)", code: ExitStatus.failure)
            }
            usleep(50_000)
            waited += 50
        }
    }

    /// Runs `arguments` (the program looked up on PATH) and returns its exit status; -1 when it could not be run or
    /// was killed by a signal.
    private static func run(_ arguments: [String]) -> Int32 {
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawnp(&pid, arguments[0], nil, nil, &argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return -1 }
        }
        // WIFEXITED and WEXITSTATUS, which are macros Swift does not import.
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : -1
    }
}
