import CacheWarden
import CacheWardenCommandLine
import CacheWardenService
import Glibc

/// One subcommand of `cachewarden`: what its help and completions show (`spec`), how it reads its command line
/// (`init`, whose errors name the option) and what it does.
protocol CLICommand: Sendable {
    static var spec: CommandSpec { get }
    init(_ arguments: ParsedArguments) throws
    func run() throws
}

/// `cachewarden`: the command-line client of the CacheWarden library.
enum CacheWardenCommand {
    static let commands: [any CLICommand.Type] = [
        RunCommand.self, CheckCommand.self, StatusCommand.self, TrimCommand.self, ClearCommand.self,
        ReloadCommand.self, EventsCommand.self, DiscoverCommand.self, KeysCommand.self, ManualCommand.self,
    ]

    static let spec = CommandSpec(
        "cachewarden",
        abstract: "Keep cache directories under their quotas in real time (inotify), reporting JSON lines on stdout.",
        subcommands: commands.map { $0.spec },
        version: CacheWardenVersion.current
    )
}

/// Every failure of the CLI ends in one line on stderr and a non-zero exit: 2 for bad input (config, paths,
/// flags, a request the daemon refused), 1 for run-time failures (no daemon answering, a lost connection). Help
/// and version go to stdout with status 0.
@main
enum Main {
    static func main() {
        do {
            switch try CommandLineParser(root: CacheWardenCommand.spec).parse(Array(CommandLine.arguments.dropFirst()))
            {
            case .print(let text):
                StandardStreams.write(Array(text.utf8), to: .standardOutput)
            case .run(let arguments):
                let name = arguments.commandPath.last
                guard let type = CacheWardenCommand.commands.first(where: { $0.spec.name == name }) else {
                    fail("no command \(arguments.command)", status: 2)
                }
                try type.init(arguments).run()
            }
        } catch let error as UsageError {
            fail(error.description, status: 2)
        } catch let error as ConfigError {
            fail(error.description, status: 2)
        } catch let error as WardenError {
            if case .invalidSettings(let c) = error { fail(c.description, status: 2) }
            fail(error.description, status: Self.isBadInput(error) ? 2 : 1)
        } catch let error as CLIUsageError {
            fail(error.message, status: 2)
        } catch let error as DaemonUnavailable {
            fail(error.message, status: 1)
        } catch let error as LockWaitEnded {
            fail(error.message, status: 1)
        } catch let error as ControlClientError {
            fail(error.description, status: error.refused ? 2 : 1)
        } catch {
            fail("\(error)", status: 1)
        }
    }

    static func isBadInput(_ error: WardenError) -> Bool {
        switch error {
        case .pathMissing, .notADirectory, .invalidSettings, .unknownDirectory, .duplicateDirectory: true
        default: false
        }
    }

    static func fail(_ message: String, status: Int32) -> Never {
        StandardStreams.error("cachewarden: \(message)\n")
        exit(status)
    }
}

/// A command-line mistake the argument parser cannot see (e.g. `--config` together with `--dir`).
struct CLIUsageError: Error {
    var message: String
}
