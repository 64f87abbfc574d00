import ArgumentParser
import CacheWarden
import CacheWardenService
import Glibc

/// `cachewarden`: the command-line client of the CacheWarden library.
struct CacheWardenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cachewarden",
        abstract: "Keep cache directories under their quotas in real time (inotify), reporting JSON lines on stdout.",
        version: CacheWardenVersion.current,
        subcommands: [RunCommand.self, CheckCommand.self, StatusCommand.self, TrimCommand.self, ClearCommand.self,
                      ReloadCommand.self, EventsCommand.self, DiscoverCommand.self, KeysCommand.self],
        defaultSubcommand: nil
    )
}

/// Every failure of the CLI ends in one line on stderr and a non-zero exit: 2 for bad input (config, paths,
/// flags, a request the daemon refused), 1 for run-time failures (no daemon answering, a lost connection). Help
/// and version go to stdout with status 0.
@main
enum Main {
    static func main() {
        do {
            var command = try CacheWardenCommand.parseAsRoot()
            try command.run()
        } catch let error as ConfigError {
            fail(error.description, status: 2)
        } catch let error as WardenError {
            if case .invalidSettings(let c) = error { fail(c.description, status: 2) }
            fail(error.description, status: Self.isBadInput(error) ? 2 : 1)
        } catch let error as CLIUsageError {
            fail(error.message, status: 2)
        } catch let error as DaemonUnavailable {
            fail(error.message, status: 1)
        } catch let error as ControlClientError {
            fail(error.description, status: error.refused ? 2 : 1)
        } catch let code as ExitCode {
            exit(code.rawValue)
        } catch {
            let code = CacheWardenCommand.exitCode(for: error)
            if code == .success {
                print(CacheWardenCommand.fullMessage(for: error))
                exit(0)
            }
            let message = CacheWardenCommand.message(for: error)
                .split(separator: "\n").first.map(String.init) ?? "invalid arguments"
            fail("\(message) (see `cachewarden --help`)", status: 2)
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
