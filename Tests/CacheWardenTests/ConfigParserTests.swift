import Testing
@testable import CacheWarden

/// The `key = value` parser: syntax, units, and compiler-style errors.
@Suite struct ConfigParserTests {
    let tree = TemporaryTree()

    func parse(_ text: String) throws(ConfigError) -> WardenSettings {
        try WardenSettings.parse(text, source: "test.conf", relativeTo: tree.path)
    }

    func error(_ text: String) -> String {
        do { _ = try parse(text); return "no error" } catch { return error.description }
    }

    @Test func commentsBlankLinesAndWhitespace() throws {
        tree.mkdir("a#b")
        let s = try parse(
            """
            # a comment line
               
              size_basis   =   apparent    # trailing comment
            dir.one.path = a#b
            dir.one.quota = 500MB\t# tab before the comment
            """)
        #expect(s.sizeBasis == .apparent)
        #expect(s.directories.count == 1)
        #expect(s.directories[0].path == tree.path + "/a#b")
        #expect(s.directories[0].quota == 500_000_000)
    }

    @Test func sizeUnitsArePowersOf1000And1024() {
        #expect(ValueParsers.size("0") == 0)
        #expect(ValueParsers.size("100B") == 100)
        #expect(ValueParsers.size("1KB") == 1000)
        #expect(ValueParsers.size("1.5MB") == 1_500_000)
        #expect(ValueParsers.size("2GB") == 2_000_000_000)
        #expect(ValueParsers.size("1TB") == 1_000_000_000_000)
        #expect(ValueParsers.size("1KiB") == 1024)
        #expect(ValueParsers.size("3MiB") == 3_145_728)
        #expect(ValueParsers.size("1GiB") == 1 << 30)
        #expect(ValueParsers.size("1TiB") == 1 << 40)
        #expect(ValueParsers.size("12XB") == nil)
        #expect(ValueParsers.size("-1MB") == nil)
        #expect(ValueParsers.size("MB") == nil)
    }

    @Test func agesTakeSecondsMinutesHoursDaysWeeksAndMonths() {
        #expect(ValueParsers.age("30s", allowMonths: false) == 30)
        #expect(ValueParsers.age("5m", allowMonths: false) == 300)
        #expect(ValueParsers.age("2h", allowMonths: false) == 7200)
        #expect(ValueParsers.age("3d", allowMonths: true) == 259_200)
        #expect(ValueParsers.age("2w", allowMonths: true) == 1_209_600)
        #expect(ValueParsers.age("1mo", allowMonths: true) == 2_592_000)
        #expect(ValueParsers.age("1mo", allowMonths: false) == nil)
        #expect(ValueParsers.age("10", allowMonths: true) == nil)
    }

    @Test func relativePathsResolveAgainstTheConfigFolder() throws {
        tree.mkdir("cache/images")
        let s = try parse("dir.img.path = cache/images\n")
        #expect(s.directories[0].path == tree.path + "/cache/images")
    }

    @Test func errorsNameTheFileAndLine() {
        tree.mkdir("d")
        // The message lists every key there is (the list grows with the keys).
        #expect(
            error("dir.a.path = d\nbogus = 1\n")
                == "test.conf:2: unknown key bogus; expected one of backend, client_lock_wait, control_socket, control_socket_mode, events_to, expire_interval, low_disk_action, low_disk_free, low_disk_interval, low_disk_target, metrics_file, metrics_interval, poll_interval, size_basis, dir.<name>.<allow_any_path|backend|client_lock|count_directories|create|delete_rate|evict_pointers|evict_unit|exclude|group|hard_quota|low_disk_free|low_disk_target|max_age|max_files|min_age|one_file_system|order|path|poll_interval|profile|protect|prune_dirs|quota|spare_open|trim_after_idle|trim_at|trim_to|weight> or group.<name>.<quota|trim_to>"
        )
        #expect(
            error("dir.a.path = d\ndir.a.quota = 1MB\n\ndir.a.quota = 2MB\n")
                == "test.conf:4: duplicate key dir.a.quota (first set on line 2); keep one of them")
        #expect(
            error("dir.a.path = d\ndir.a.quota = lots\n").hasPrefix(
                "test.conf:2: bad value `lots` for dir.a.quota: expected a size"))
        #expect(
            error("dir.a.path = nowhere\n")
                == "test.conf:1: dir.a.path: \(tree.path)/nowhere does not exist; expected an existing directory")
        #expect(error("dir.a.quota = 1MB\n") == "test.conf:1: dir.a has no path; add `dir.a.path = /some/folder`")
        #expect(error("just words\n") == "test.conf:1: expected `key = value`, found `just words`")
        #expect(
            error("size_basis = blocks\ndir.a.path = d\n")
                == "test.conf:1: bad value `blocks` for size_basis: expected allocated or apparent")
        #expect(error("dir.a.path =\n") == "test.conf:1: dir.a.path has no value; expected `dir.a.path = <value>`")
        #expect(
            error("dir.a.order = newest\ndir.a.path = d\n")
                == "test.conf:1: bad value `newest` for dir.a.order: expected mtime, atime, ctime, btime or opened")
        #expect(
            error("# nothing\n")
                == "test.conf:1: no directory registered; expected at least one `dir.<name>.path = /some/folder`")
    }

    @Test func onlyNewlineEndsALineAndOtherLineBreaksAreErrorsNamingTheLine() throws {
        tree.mkdir("d")
        // Each used to end the line: `dir.a.quota` became a key of its own, and the lines after it were numbered one
        // too far.
        for breaker in ["\u{0B}", "\u{0C}", "\u{85}", "\u{2028}", "\u{2029}", "\r"] {
            let code = String(breaker.unicodeScalars.first!.value, radix: 16, uppercase: true)
            let expected =
                "test.conf:2: line break U+\(String(repeating: "0", count: 4 - code.count) + code) in the line; only \\n ends a line (an editor may show this one as two)"
            #expect(
                error("dir.a.path = d\ndir.a.max_age = 1d\(breaker)dir.a.quota = 1MB\n") == expected,
                "\(breaker.debugDescription)")
            #expect(
                error("dir.a.path = d\n# a comment\(breaker)dir.a.quota = 1MB\n") == expected,
                "in a comment: \(breaker.debugDescription)")
        }
        // `\r\n` line ends are read as `\n`, and lines keep their numbers.
        #expect(
            error("dir.a.path = d\r\n\r\ndir.a.quota = lots\r\n").hasPrefix(
                "test.conf:3: bad value `lots` for dir.a.quota"))
        let s = try parse("dir.a.path = d\r\ndir.a.quota = 1MB\r\n")
        #expect(s.directories[0].quota == 1_000_000 && s.directories[0].path == tree.path + "/d")
    }

    @Test func aSymlinkOrAFileIsNotARoot() {
        tree.write("file", size: 1)
        symlinkAt(tree.path, tree.url("link"))
        #expect(error("dir.a.path = file\n").contains("is not a directory"))
        #expect(error("dir.a.path = link\n").contains("is a symlink"))
    }

    @Test func nestedRootsAreRefused() {
        tree.mkdir("outer/inner")
        #expect(
            error("dir.a.path = outer\ndir.b.path = outer/inner\n").hasPrefix(
                "test.conf:2: dir.b.path overlaps dir.a.path"))
    }

    @Test func codeBuiltSettingsGetTheSameValidation() {
        let bad = WardenSettings(directories: [DirectorySettings(name: "x y", path: tree.path)])
        #expect(throws: ConfigError.self) { try bad.validate() }
        let twice = WardenSettings(directories: [
            DirectorySettings(name: "a", path: tree.path), DirectorySettings(name: "a", path: "/tmp"),
        ])
        #expect(throws: ConfigError.self) { try twice.validate() }
    }
}

import Glibc
func symlinkAt(_ target: String, _ link: String) { _ = Glibc.symlink(target, link) }
