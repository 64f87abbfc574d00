import CWardenShims
import Glibc

/// This process's environment variables and usable processors, read from the C library. Not FoundationEssentials'
/// `ProcessInfo`: its class keeps a share of FoundationEssentials (host names, OS versions, thermal state) in the
/// static binary for two figures the C library gives directly.
package enum ProcessEnvironment {
    /// Every `NAME=value` of `environ` (the first of a repeated name, as `getenv` finds it).
    package static var variables: [String: String] {
        var out: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                let name = String(text[..<equals])
                if out[name] == nil { out[name] = String(text[text.index(after: equals)...]) }
            }
            entry += 1
        }
        return out
    }

    /// The processors this process may run on (its CPU affinity mask, as `nproc` counts), at least 1.
    package static var processorCount: Int {
        let usable = Int(cwsys_usable_processors())
        return max(1, usable > 0 ? usable : sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }
}
