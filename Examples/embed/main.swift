// Examples/embed — CacheWarden embedded as a library: register a folder with a quota, write files into it,
// print the callbacks, stop cleanly. This file is the README's "Use it as a library" snippet, compiled by CI.
import CacheWarden
import Dispatch
import Foundation

let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cachewarden-embed-\(getpid())").path
try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: folder) }

// Settings in code: the same type the config-file loader returns.
let settings = WardenSettings(
    directories: [
        DirectorySettings(name: "thumbnails", path: folder, quota: 200_000,   // 200 kB; trims to 100 kB
                          shouldEvict: { candidate in !candidate.file.hasSuffix(".keep") })
    ],
    sizeBasis: .apparent
)

// Callbacks arrive in order on the queue you choose.
let callbacks = DispatchQueue(label: "example.callbacks")
let watcher = Watcher(settings: settings, callbackQueue: callbacks) { event in
    switch event.kind {
    case .write(let w): print("write  \(w.file) \(w.size) B → total \(w.total) B")
    case .evict(let e): print("evict  \(e.file) (\(e.reason.rawValue))")
    case .trim(let t): print("trim   freed \(t.freed) B in \(t.removed) files, now \(t.total) B")
    default: print(event.jsonLine(), terminator: "")   // the exact line `cachewarden run` prints
    }
}

do {
    try watcher.start()
} catch {
    print("cannot start: \(error)")   // a WardenError that says what to fix
    exit(1)
}

// Write 30 files of 10 kB: the quota is crossed at the 21st, and the oldest go.
for i in 1...30 {
    let data = Data(repeating: UInt8(i), count: 10_000)
    _ = FileManager.default.createFile(atPath: "\(folder)/image-\(i).jpg", contents: data)
    usleep(2_000)
}

// Wait (with a deadline) until the watcher has seen every write, then read the totals from memory.
let deadline = Date().addingTimeInterval(10)
while Date() < deadline, watcher.totals().first?.files ?? 0 < 10 || watcher.totals().first!.total > 200_000 {
    usleep(10_000)
}
for t in watcher.totals() { print("totals \(t.dir): \(t.total) B in \(t.files) files (quota \(t.quota) B)") }

watcher.stop()   // emits `stop`, waits until every callback ran
