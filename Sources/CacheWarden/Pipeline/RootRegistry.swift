import CacheWardenLedger
import CacheWardenFilesystem
import SystemPackage

/// What the pipeline keeps about one registered root besides its ledger account.
struct RootRuntime {
    var id: RootID
    var settings: DirectorySettings
    /// Canonical absolute path (symlinks in its ancestors resolved once, at registration).
    var path: String
    var protect: GlobMatcher
    var exclude: GlobMatcher
    /// The client's lock files in the root (`client_lock`): opening and closing them is no activity, since every
    /// try of a trim opens them itself (`LedgerUpdater`).
    var lockFiles: GlobMatcher
    /// How this root's files are counted.
    var fileStat: FileStat
    /// Why the root is not followed (deleted or replaced, or back in a form that is not taken back): nothing is
    /// counted until it reappears and passes the checks. Nil while it is followed.
    var lost: String?
    /// Which folder of which filesystem the root's path showed when it was registered: a root that comes back
    /// is taken back only there (`MountIdentity`).
    var registeredOn: MountIdentity?
    /// The root's filesystem refuses the move into the trash (FUSE's `EINVAL`): deletions happen in place and units
    /// go file by file (said once by an `unit_not_atomic` error line).
    var renameRefused: Errno?
    /// What was last judged at the path of a lost root that came back refused, and when (uptime nanoseconds): the
    /// same folder is judged again at most every `Engine.rejudgeInterval`.
    var judged: (folder: FolderIdentity, at: UInt64)?
    /// `order = btime` on a filesystem without birth times was reported once.
    var reportedNoBirthTime = false
    /// A directory past inotify's watch limit was reported (once per root).
    var reportedWatchLimit = false
    /// The backend serving the root (resolved at registration; inotify until then).
    var route: WatchRoute

    var name: String { settings.name }
    var pathBytes: [UInt8] { Array(path.utf8) }

    init(id: RootID, settings: DirectorySettings, path: String, basis: SizeBasis) {
        self.id = id
        self.settings = settings
        self.path = path
        protect = Self.protectMatcher(settings)
        exclude = GlobMatcher(settings.exclude)
        lockFiles = GlobMatcher(settings.clientLock?.protectGlobs ?? [])
        fileStat = Self.fileStat(basis: basis, order: settings.order)
        route = WatchRoute(root: id, backend: .inotify, pollInterval: settings.pollInterval ?? 30)
    }

    /// How files are counted under the size basis and the age order, in the filesystem's words: `order = opened`
    /// starts from mtime (the ledger keeps the open times it sees).
    static func fileStat(basis: SizeBasis, order: AgeOrder) -> FileStat {
        let onDisk: FileStat.Order =
            switch order {
            case .mtime, .opened: .mtime
            case .atime: .atime
            case .ctime: .ctime
            case .btime: .btime
            }
        return FileStat(basis: basis == .allocated ? .allocated : .apparent, order: onDisk)
    }

    /// What no trim deletes: the `protect` globs, and the client's lock files in the root (`client_lock`).
    static func protectMatcher(_ settings: DirectorySettings) -> GlobMatcher {
        GlobMatcher(settings.protect + (settings.clientLock?.protectGlobs ?? []))
    }

    /// The optional events this root's watches report: opens and closes for `order = opened` and `spare_open`.
    var watchEvents: WatchEvents { settings.order == .opened || settings.spareOpen ? [.opens] : [] }
}

/// The registered roots, in registration order. IDs are reused (lowest free first), so they stay small. Finding a
/// root by name and the next ID take constant time: registering 16,000 roots searched the names and the IDs in use
/// once per root (see `add`).
struct RootRegistry {
    private var runtimes: [RootID: RootRuntime] = [:]
    private var byName: [String: RootID] = [:]
    /// IDs below `unused` that `remove` released, highest first: the last is the lowest free one.
    private var released: [UInt32] = []
    /// Every ID from here on is free.
    private var unused: UInt32 = 0
    private(set) var order: [RootID] = []

    /// A registered root's runtime; its name stays the one it was added with.
    subscript(_ id: RootID) -> RootRuntime? {
        get { runtimes[id] }
        set {
            guard let newValue else { return remove(id) }
            precondition(runtimes[id]?.name == newValue.name, "a root is renamed only by removing and adding it")
            runtimes[id] = newValue
        }
    }

    var all: [RootRuntime] { order.compactMap { runtimes[$0] } }
    var isEmpty: Bool { order.isEmpty }

    func id(named name: String) -> RootID? { byName[name] }

    /// The lowest unused ID.
    var nextID: RootID { RootID(released.last ?? unused) }

    /// Adds a root under `nextID`.
    mutating func add(_ runtime: RootRuntime) {
        precondition(
            runtime.id == nextID && byName[runtime.name] == nil, "a root is added under nextID, with a new name")
        if released.isEmpty { unused += 1 } else { released.removeLast() }
        runtimes[runtime.id] = runtime
        byName[runtime.name] = runtime.id
        order.append(runtime.id)
    }

    mutating func remove(_ id: RootID) {
        guard let runtime = runtimes.removeValue(forKey: id) else { return }
        byName[runtime.name] = nil
        released.insert(id.raw, at: released.firstIndex { $0 < id.raw } ?? released.endIndex)
        order.removeAll { $0 == id }
    }

    mutating func removeAll() {
        runtimes.removeAll()
        byName.removeAll()
        released.removeAll()
        unused = 0
        order.removeAll()
    }
}

/// Which folder of which filesystem a root's path shows: its device, and its place inside that filesystem (from
/// its mount's line in `/proc/self/mountinfo`). Another filesystem mounted at the path, the folder beneath an
/// unmounted root, and a bind mount of another folder of the same filesystem all differ here; the same folder
/// mounted again (a remount, a new mount ID) does not. `location` is nil where the mount cannot be told: such a
/// root is not taken back.
struct MountIdentity: Equatable {
    var device: UInt64
    var location: String?

    init(_ folder: FolderIdentity, path: String, mounts: MountTable) {
        device = folder.device
        location = folder.mountID.flatMap { id in
            (mounts.location(of: path, mountID: id) ?? MountTable.current().location(of: path, mountID: id)).map {
                "\($0.device) \($0.path)"
            }
        }
    }
}
