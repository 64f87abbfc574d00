import Glibc

/// The one reader of small text files: config files, and what discovery looks at (`.bazelrc`, nginx's
/// configuration, `CACHEDIR.TAG`). Only a regular file is read, and at most `limit` bytes of it, so that a FIFO, a
/// device or a huge file named by mistake cannot stall a command.
package enum FileContents {
    /// The file's text (invalid UTF-8 replaced), or nil when it cannot be opened or read.
    package static func read(_ path: String, limit: Int = Int.max) -> String? {
        // O_NONBLOCK: opening a FIFO must not wait for a writer; only a regular file is read.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, let f = fdopen(fd, "rb") else { Glibc.close(fd); return nil }
        defer { fclose(f) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count < limit {
            let n = fread(&chunk, 1, min(chunk.count, limit - bytes.count), f)
            if n > 0 { bytes.append(contentsOf: chunk[0..<n]) }
            if n == 0 || ferror(f) != 0 || feof(f) != 0 { break }
        }
        if ferror(f) != 0 { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
