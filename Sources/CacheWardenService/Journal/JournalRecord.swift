import CacheWarden

/// One record of journald's native protocol (systemd's `systemd.journal-fields(7)`, "Native Protocol"): fields
/// one after another, each `NAME=value\n`, or — when the value holds a newline — `NAME\n`, the value's length as
/// 64-bit little-endian, the bytes, `\n`. Names are uppercase letters, digits and `_`, not starting with `_`.
///
/// An event's fields come from the same list as its JSON line (`WardenEvent.writeFields`): each JSON key becomes
/// `CACHEWARDEN_<KEY>` (`dir` → `CACHEWARDEN_DIR`), a nested object's keys are prefixed with its own
/// (`spared.in_use` → `CACHEWARDEN_SPARED_IN_USE`), an array is the same field once per element (journald keeps
/// every value, and `journalctl CACHEWARDEN_DIRS=npm` matches any), numbers and times read as in the JSON line.
struct JournalRecord: EventFieldWriter {
    private(set) var bytes: [UInt8] = []
    private var prefix: [UInt8] = Array("CACHEWARDEN_".utf8)

    init(capacity: Int = 512) { bytes.reserveCapacity(capacity) }

    /// The record of `event`: `MESSAGE`, `PRIORITY`, `SYSLOG_IDENTIFIER`, then the event's own fields.
    init(_ event: WardenEvent, identifier: String = "cachewarden") {
        self.init()
        field("MESSAGE", Array(JournalMessage.sentence(event).utf8))
        field("PRIORITY", Array(String(JournalMessage.priority(event)).utf8))
        field("SYSLOG_IDENTIFIER", Array(identifier.utf8))
        event.writeFields(into: &self)
    }

    /// Appends one field, in the binary form when `value` holds a newline.
    mutating func field(_ name: some Collection<UInt8>, _ value: some Collection<UInt8>) {
        bytes.append(contentsOf: name)
        if value.contains(0x0A) {
            bytes.append(0x0A)
            withUnsafeBytes(of: UInt64(value.count).littleEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: value)
        } else {
            bytes.append(UInt8(ascii: "="))
            bytes.append(contentsOf: value)
        }
        bytes.append(0x0A)
    }

    mutating func field(_ name: StaticString, _ value: [UInt8]) {
        name.withUTF8Buffer { field($0, value) }
    }

    /// `CACHEWARDEN_` (and any nested object's prefix) followed by `key` in uppercase.
    private func fieldName(_ key: StaticString) -> [UInt8] {
        var name = prefix
        key.withUTF8Buffer { raw in
            for b in raw { name.append(b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z") ? b - 32 : b) }
        }
        return name
    }

    mutating func add(_ name: StaticString, _ value: String) { field(fieldName(name), Array(value.utf8)) }

    mutating func add(_ name: StaticString, _ value: Int64) {
        var digits: [UInt8] = []
        JSONLineBuilder.appendInteger(value, to: &digits)
        field(fieldName(name), digits)
    }

    mutating func add(_ name: StaticString, _ value: Bool) {
        field(fieldName(name), Array((value ? "true" : "false").utf8))
    }

    mutating func add(_ name: StaticString, _ value: Double) {
        var digits: [UInt8] = []
        JSONLineBuilder.appendNumber(value, to: &digits)
        field(fieldName(name), digits)
    }

    mutating func add(_ name: StaticString, _ values: [String]) {
        let n = fieldName(name)
        for v in values { field(n, Array(v.utf8)) }
    }

    mutating func addTime(_ name: StaticString, secondsSince1970 t: Double) {
        var text: [UInt8] = []
        RFC3339.append(secondsSince1970: t, to: &text)
        field(fieldName(name), text)
    }

    mutating func addObject(_ name: StaticString, _ fill: (inout JournalRecord) -> Void) {
        let outer = prefix
        prefix = fieldName(name) + [UInt8(ascii: "_")]
        fill(&self)
        prefix = outer
    }
}
