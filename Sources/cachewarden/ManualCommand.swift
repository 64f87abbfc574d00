import CacheWarden
import CacheWardenCommandLine

/// `cachewarden manual` (hidden): the `cachewarden(1)` manual page from the commands' own descriptions, what
/// `make man` installs beside `cachewarden.conf(5)`.
struct ManualCommand: CLICommand {
    static let spec = CommandSpec(
        "manual",
        abstract: "Print the cachewarden(1) manual page.",
        hidden: true
    )

    init(_ arguments: ParsedArguments) {}

    func run() {
        let page = ManualPage(
            root: CacheWardenCommand.spec,
            extra: [
                (
                    "Exit status",
                    [
                        "0: success (and help, version). 1: a run-time failure (no daemon answers, a lost connection). "
                            + "2: bad input: a config file, path, flag or request that was refused, "
                            + "with one line on stderr naming the file and line, the flag or the request; nothing is "
                            + "deleted then."
                    ]
                ),
                (
                    "Files",
                    [
                        "`/etc/cachewarden/cachewarden.conf` (root) and `~/.config/cachewarden/cachewarden.conf` (a user): "
                            + "the default config file when neither --config nor --dir is given."
                    ]
                ),
            ],
            seeAlso: ["cachewarden.conf(5)", "inotify(7)", "systemd.service(5)"]
        )
        print(page.text, terminator: "")
    }
}
