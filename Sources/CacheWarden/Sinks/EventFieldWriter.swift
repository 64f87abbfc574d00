/// What an event's fields are written into, one call per field in the contract's order: `JSONLineBuilder` (the
/// JSON line) and the journal's record builder in CacheWardenService (`FIELD=value` pairs). The payload of each
/// event kind is listed once, in WardenEvent+JSON.swift, for both: a field added there reaches every output.
package protocol EventFieldWriter {
    mutating func add(_ name: StaticString, _ value: String)
    mutating func add(_ name: StaticString, _ value: Int64)
    mutating func add(_ name: StaticString, _ value: Bool)
    /// A finite number with up to 3 decimals (`JSONLineBuilder.number`).
    mutating func add(_ name: StaticString, _ value: Double)
    mutating func add(_ name: StaticString, _ values: [String])
    /// A time as RFC 3339 (`RFC3339`).
    mutating func addTime(_ name: StaticString, secondsSince1970 t: Double)
    /// A nested object whose fields `fill` writes.
    mutating func addObject(_ name: StaticString, _ fill: (inout Self) -> Void)
}

extension EventFieldWriter {
    package mutating func add(_ name: StaticString, _ value: String?) {
        if let value { add(name, value) }
    }

    package mutating func add(_ name: StaticString, _ value: Int) { add(name, Int64(value)) }

    package mutating func add(_ name: StaticString, _ value: Double?) {
        if let value { add(name, value) }
    }
}
