import Foundation
import Glibc

/// A free TCP port on 127.0.0.1 (bound to port 0, read back, closed).
func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
        }
    }
    return bound ? Int(UInt16(bigEndian: addr.sin_port)) : 0
}

/// The body of an HTTP GET on loopback, fetched by Python's urllib (an independent client, told to ignore any
/// proxy the machine's environment names); nil on any failure.
func httpGet(_ url: String) -> String? {
    let script = """
        import sys, urllib.request
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        sys.stdout.write(opener.open(sys.argv[1], timeout=10).read().decode())
        """
    guard let r = try? runProcess(which("python3") ?? "/usr/bin/python3", ["-c", script, url]), r.status == 0 else {
        return nil
    }
    return r.out
}
