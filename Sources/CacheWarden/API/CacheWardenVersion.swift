/// The version of this build of CacheWarden (also `cachewarden --version`, `check` and the metrics' build info).
public enum CacheWardenVersion {
    public static let current = "0.2.0"
}
