import ArgumentParser
import CacheWarden

/// `cachewarden check`: validate a config and print the settings as parsed (exit 0), or the error (exit 2).
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate the settings and print them as parsed (exit 0), or print the error (exit 2)."
    )

    @OptionGroup var source: SettingsOptions

    func run() throws {
        let s = try source.load()
        print("size_basis = \(s.sizeBasis.rawValue)")
        if let e = s.expireInterval { print("expire_interval = \(e)s") }
        if let t = s.lowDiskFree { print("low_disk_free = \(Self.describe(t))") }
        print("low_disk_action = \(s.lowDiskAction.rawValue)")
        print("low_disk_interval = \(s.lowDiskInterval)s")
        for d in s.directories {
            let p = "dir.\(d.name)."
            print("\(p)path = \(d.path)")
            print("\(p)quota = \(d.quota)B")
            print("\(p)max_age = \(d.maxAge.map { "\($0)s" } ?? "manual")")
            print("\(p)order = \(d.order.rawValue)")
            if !d.protect.isEmpty { print("\(p)protect = \(d.protect.joined(separator: ", "))") }
            if !d.exclude.isEmpty { print("\(p)exclude = \(d.exclude.joined(separator: ", "))") }
            print("\(p)one_file_system = \(d.oneFileSystem)")
            print("\(p)prune_dirs = \(d.pruneDirs)")
            if let t = d.lowDiskFree { print("\(p)low_disk_free = \(Self.describe(t))") }
        }
    }

    static func describe(_ t: FreeSpaceThreshold) -> String {
        switch t {
        case .percent(let p): "\(p)%"
        case .bytes(let b): "\(b)B"
        }
    }
}
