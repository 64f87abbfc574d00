import CInotify

/// Decodes the records of one `read(2)` of an inotify descriptor (with the C shim: `struct inotify_event` ends in
/// a flexible array Swift does not import) and translates each into a `Change` about a ledger node.
struct InotifyRecords {
    /// One decoded record; `name` points into the read buffer.
    struct Record {
        var wd: Int32
        var mask: UInt32
        var cookie: UInt32
        var name: UnsafeRawBufferPointer

        func has(_ bit: UInt32) -> Bool { mask & bit != 0 }
        var isDirectory: Bool { has(CINOTIFY_IN_ISDIR) }
        /// Readable mask ("CREATE,ISDIR") via libinotifytools, for `--debug`. Call from one thread only.
        var maskDescription: String { String(cString: cinotify_mask_names(mask)) }
    }

    /// Calls `body` for every complete record in `bytes`.
    static func forEach(in bytes: UnsafeRawBufferPointer, _ body: (Record) -> Void) {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        var offset = 0
        var raw = cinotify_event()
        while true {
            let next = cinotify_next_event(base, bytes.count, offset, &raw)
            if next < 0 { break }
            let name = UnsafeRawBufferPointer(start: raw.name, count: Int(raw.name_len))
            body(Record(wd: raw.wd, mask: raw.mask, cookie: raw.cookie, name: name))
            offset = next
        }
    }

    /// The change a record of the main instance about a name in a watched directory means (`nil` for records
    /// without one). Opens and closes come from `InotifyOpens`.
    static func kind(of r: Record) -> Change.Kind? {
        if r.has(CINOTIFY_IN_CREATE) { return .created }
        if r.has(CINOTIFY_IN_DELETE) { return .deleted }
        if r.has(CINOTIFY_IN_MOVED_FROM) { return .movedFrom }
        if r.has(CINOTIFY_IN_MOVED_TO) { return .movedTo }
        if r.has(CINOTIFY_IN_CLOSE_WRITE) { return .closedAfterWrite }
        if r.has(CINOTIFY_IN_MODIFY) { return .modified }
        if r.has(CINOTIFY_IN_ATTRIB) { return .attributes }
        return nil
    }

    static func isOverflow(_ r: Record) -> Bool { r.has(CINOTIFY_IN_Q_OVERFLOW) }
    static func isIgnored(_ r: Record) -> Bool { r.has(CINOTIFY_IN_IGNORED) }
    static func isSelfGone(_ r: Record) -> Bool { r.has(CINOTIFY_IN_DELETE_SELF) || r.has(CINOTIFY_IN_MOVE_SELF) }
}
