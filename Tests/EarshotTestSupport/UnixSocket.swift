// The tests' one way to open a Unix stream socket to a path: the control socket for clients that misbehave on
// purpose, and PulseAudio's command line for the fake card's module.
import Glibc

/// Connects to Unix stream sockets by path.
public enum UnixSocket {
    /// A connected descriptor (close-on-exec, blocking) to the socket at `path`; the caller closes it.
    ///
    /// - Throws: when the path is too long for a socket address, or the socket cannot be made or reached.
    public static func connect(path: String) throws -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw ToolkitError("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ToolkitError("socket(): \(String(cString: strerror(errno)))") }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw ToolkitError("connect(\(path)): \(reason)")
        }
        return descriptor
    }
}
