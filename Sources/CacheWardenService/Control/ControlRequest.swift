import CacheWarden
/// One request on the control socket: a JSON object on one line, as watchman's JSON PDUs. Read into a `JSONValue`
/// (`JSONReader`; requests are small and rare) and checked field by field; replies are written by the same
/// `JSONLineBuilder` as the event lines.
enum ControlRequest: Equatable {
    case status
    case version
    case trim(dir: String, to: Int64?)
    case clear(dirs: [String], dryRun: Bool)
    case reload
    case subscribe(events: Set<String>)

    static let commands = ["status", "trim", "clear", "reload", "subscribe", "version"]

    /// The event names a subscription may filter on.
    static var eventNames: Set<String> { WardenEvent.names }

    /// Parses one line; the error is what the reply says to fix.
    static func parse(_ line: [UInt8]) -> Result<ControlRequest, ControlError> {
        guard line.contains(where: { !JSONReader.isWhitespace($0) }) else {
            return .failure(
                ControlError("empty request line; send one JSON object per line, e.g. {\"command\":\"status\"}"))
        }
        let value: JSONValue
        do throws(JSONReader.Failure) { value = try JSONReader.parse(line) } catch {
            return .failure(
                ControlError(
                    "the request is not a JSON object on one line (\(error.problem) at byte \(error.offset)); send e.g. {\"command\":\"status\"}"
                ))
        }
        guard let fields = value.object else {
            return .failure(
                ControlError("the request is not a JSON object on one line; send e.g. {\"command\":\"status\"}"))
        }
        guard let command = fields["command"]?.string else {
            return .failure(
                ControlError("the request has no \"command\"; expected one of \(commands.joined(separator: ", "))"))
        }
        switch command {
        case "status": return .success(.status)
        case "version": return .success(.version)
        case "reload": return .success(.reload)
        case "trim": return trim(fields)
        case "clear": return clear(fields)
        case "subscribe": return subscribe(fields)
        default:
            return .failure(
                ControlError(
                    "unknown command \(command.debugDescription); expected one of \(commands.joined(separator: ", "))"))
        }
    }

    private static func trim(_ fields: [String: JSONValue]) -> Result<ControlRequest, ControlError> {
        guard let dir = fields["dir"]?.string else {
            return .failure(
                ControlError(
                    command: "trim",
                    "trim needs \"dir\": the directory's name, e.g. {\"command\":\"trim\",\"dir\":\"img\",\"to\":\"100MB\"}"
                ))
        }
        guard let to = fields["to"] else { return .success(.trim(dir: dir, to: nil)) }
        if let text = to.string, let bytes = ValueParsers.size(text) { return .success(.trim(dir: dir, to: bytes)) }
        if case .integer(let number) = to, number >= 0 { return .success(.trim(dir: dir, to: number)) }
        return .failure(
            ControlError(
                command: "trim", "bad \"to\" \(to.jsonText): expected a size like \"500MB\" or a number of bytes"))
    }

    private static func clear(_ fields: [String: JSONValue]) -> Result<ControlRequest, ControlError> {
        guard let names = (fields["dirs"] ?? []).strings else {
            return .failure(
                ControlError(command: "clear", "bad \"dirs\": expected a list of directory names (empty: all)"))
        }
        guard let dryRun = (fields["dry_run"] ?? false).bool else {
            return .failure(ControlError(command: "clear", "bad \"dry_run\": expected true or false"))
        }
        return .success(.clear(dirs: names, dryRun: dryRun))
    }

    private static func subscribe(_ fields: [String: JSONValue]) -> Result<ControlRequest, ControlError> {
        guard let names = (fields["events"] ?? []).strings else {
            return .failure(
                ControlError(command: "subscribe", "bad \"events\": expected a list of event names (empty: all)"))
        }
        let unknown = names.filter { !eventNames.contains($0) }
        guard unknown.isEmpty else {
            return .failure(
                ControlError(
                    command: "subscribe",
                    "unknown event \(unknown[0]); expected some of \(eventNames.sorted().joined(separator: ", "))"))
        }
        return .success(.subscribe(events: Set(names)))
    }
}

/// What a request got wrong, worded as what to do instead; `command` names the request when it got that far (the
/// error reply carries it, as every reply does).
struct ControlError: Error, Equatable {
    var command: String?
    var message: String
    init(command: String? = nil, _ message: String) {
        self.command = command
        self.message = message
    }
}
