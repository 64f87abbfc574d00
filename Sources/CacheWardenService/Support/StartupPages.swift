import CWardenShims

/// Lets the code and read-only data that only start-up used (argument and config parsing, the first scan, the
/// tree walkers) leave the daemon's resident set once it is ready.
///
/// The kernel maps a program's file pages 64 KiB around each one touched (fault-around), so start-up leaves
/// several megabytes of the binary mapped that the idle daemon never uses again; they count in its RSS, and a
/// mapped executable page is the last the kernel reclaims. `MADV_DONTNEED` on the program's never-written
/// segments unmaps them: they stay in the page cache, and what the running daemon touches comes back on its
/// next access as a minor fault (no I/O). Writable segments (data, relocated read-only data) are left alone.
package enum StartupPages {
    /// Bytes of address space advised, or nil when `madvise` failed (nothing is lost then: the pages stay).
    @discardableResult
    package static func release() -> Int? {
        let advised = cwsys_drop_clean_program_pages()
        return advised < 0 ? nil : advised
    }
}
