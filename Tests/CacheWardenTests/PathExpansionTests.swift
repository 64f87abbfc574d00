import Testing
@testable import CacheWarden

/// `~` and `$NAME` in the config file's path values (`PathExpansion`), through the parser, with an injected
/// environment: each form, and each error with its file and line.
@Suite struct PathExpansionTests {
    let tree = TemporaryTree()

    /// The tree is the home; `CACHE_ROOT` points into it, `EMPTY` is set but empty.
    var environment: [String: String] { ["HOME": tree.path, "CACHE_ROOT": tree.url("root"), "EMPTY": ""] }

    func parse(_ text: String, _ extra: [String: String?] = [:]) throws(ConfigError) -> WardenSettings {
        var env = environment
        for (k, v) in extra { env[k] = v }
        let parser = ConfigFileParser(file: "test.conf", locations: DefaultLocations(environment: env, euid: 1000))
        return try parser.parse(text, baseDirectory: "/")
    }

    func path(_ value: String, _ extra: [String: String?] = [:]) throws -> String {
        try parse("dir.c.path = \(value)\n", extra).directories[0].path
    }

    func error(_ text: String, _ extra: [String: String?] = [:]) -> String {
        do { _ = try parse(text, extra); return "no error" } catch { return error.description }
    }

    @Test func aLeadingTildeIsTheHome() throws {
        tree.mkdir("c")
        #expect(try path("~/c") == tree.url("c"))
        #expect(try path("~/c/") == tree.url("c"))
        tree.mkdir("x~y")
        #expect(try path("~/x~y") == tree.url("x~y"), "a ~ further on is an ordinary character")
        let home = try parse("control_socket = ~\ndir.c.path = ~/c\n")
        #expect(home.controlSocket == tree.path)
    }

    @Test func homeAndItsBracedFormAndAnySetVariable() throws {
        tree.mkdir("c")
        tree.mkdir("root/pip")
        #expect(try path("$HOME/c") == tree.url("c"))
        #expect(try path("${HOME}/c") == tree.url("c"))
        #expect(try path("$CACHE_ROOT/pip") == tree.url("root/pip"))
        #expect(try path("${CACHE_ROOT}/pip") == tree.url("root/pip"))
        tree.mkdir("rootx")
        #expect(try path("${CACHE_ROOT}x") == tree.url("rootx"), "braces end the name")
    }

    @Test func xdgCacheHomeFallsBackToDotCache() throws {
        tree.mkdir(".cache/pip")
        tree.mkdir("xdg/pip")
        #expect(try path("$XDG_CACHE_HOME/pip") == tree.url(".cache/pip"))
        #expect(try path("${XDG_CACHE_HOME}/pip", ["XDG_CACHE_HOME": ""]) == tree.url(".cache/pip"))
        #expect(try path("${XDG_CACHE_HOME}/pip", ["XDG_CACHE_HOME": tree.url("xdg")]) == tree.url("xdg/pip"))
    }

    @Test func aDoubledDollarIsALiteralOneAndValuesAreNotExpandedAgain() throws {
        tree.mkdir("a$b")
        #expect(try path("~/a$$b") == tree.url("a$b"))
        tree.mkdir("${HOME}")
        #expect(try path("~/$${HOME}") == tree.url("${HOME}"), "`$${HOME}` is `$` then `{HOME}`")
        tree.mkdir("lit")
        #expect(try path("$V/lit", ["V": tree.path + "/$HOME/.."]) == tree.url("lit"), "a value's own $ is kept")
    }

    @Test func everyPathKeyIsExpandedAndNoOtherKey() throws {
        tree.mkdir("c")
        let s = try parse(
            """
            control_socket = ${XDG_RUNTIME_DIR}/cw.sock
            metrics_file = $HOME/cw.prom
            dir.c.path = ~/c
            dir.c.protect = $keep.db
            """, ["XDG_RUNTIME_DIR": "/run/user/1000"])
        #expect(s.controlSocket == "/run/user/1000/cw.sock")
        #expect(s.metricsFile == tree.url("cw.prom"))
        #expect(s.directories[0].protect == ["$keep.db"], "globs are not paths")
    }

    @Test func tildeUserIsAnErrorWithFileAndLine() {
        #expect(
            error("# home\ndir.c.path = ~bob/cache\n")
                == "test.conf:2: dir.c.path: `~bob` is not supported (only `~` or `~/…`, your own home); write the full path"
        )
        #expect(error("metrics_file = ~root\n").hasPrefix("test.conf:1: metrics_file: `~root` is not supported"))
    }

    @Test func anUnsetOrEmptyVariableIsAnErrorNeverAnEmptyString() {
        #expect(
            error("dir.c.path = $NOPE/cache\n")
                == "test.conf:1: dir.c.path: $NOPE is not set; set it in the environment or write the path out")
        #expect(
            error("\n\ncontrol_socket = ${EMPTY}/cw.sock\n")
                == "test.conf:3: control_socket: $EMPTY is empty; set it to a folder or write the path out")
    }

    @Test func aStrayDollarIsAnError() {
        let expected = "a `$` must start $NAME or ${NAME} (a variable) or be doubled ($$, a literal $)"
        for value in ["/a/$", "/a/${HOME", "/a/${}", "/a/$1x", "/a/${A-B}", "/a/$-", "/a/$ b"] {
            #expect(error("dir.c.path = \(value)\n") == "test.conf:1: dir.c.path: \(expected)", "\(value)")
        }
    }

    @Test func withoutAHomeTildeAndHomeAreErrors() {
        // A user the database does not know, and no HOME: nothing for ~ to mean.
        func noHome(_ text: String) -> String {
            let locations = DefaultLocations(environment: [:], euid: 4_000_000_123)
            do {
                _ = try ConfigFileParser(file: "x.conf", locations: locations).parse(text, baseDirectory: "/")
                return "no error"
            } catch { return error.description }
        }
        #expect(noHome("dir.c.path = ~/c\n").hasPrefix("x.conf:1: dir.c.path: no home directory for ~: $HOME is not"))
        #expect(noHome("dir.c.path = $HOME/c\n").hasPrefix("x.conf:1: dir.c.path: no home directory for $HOME"))
        #expect(
            noHome("dir.c.path = $XDG_CACHE_HOME/c\n").hasPrefix(
                "x.conf:1: dir.c.path: $XDG_CACHE_HOME is not set, and its default"))
    }
}
