extension WardenSettings {
    /// Refuses a duration outside its kind's bounds (`DurationKind`), a negative size and a weight outside 1 to
    /// 1,000,000: what the config file's parser refuses at the line, refused in settings built in code too, so that
    /// whatever `validate()` accepts runs.
    func validateLimits() throws(ConfigError) {
        var durations: [(key: String, seconds: Int64?, kind: DurationKind)] = [
            ("expire_interval", expireInterval, .interval), ("low_disk_interval", lowDiskInterval, .interval),
            ("metrics_interval", metricsInterval, .interval), ("poll_interval", pollInterval, .interval),
            ("client_lock_wait", clientLockWait, .interval),
        ]
        for d in directories {
            let p = "dir.\(d.name)."
            guard d.quota >= 0 else {
                throw ConfigError(key: p + "quota", message: "\(p)quota is negative; expected a size ≥ 0")
            }
            guard (1...1_000_000).contains(d.weight) else {
                throw ConfigError(
                    key: p + "weight", message: "\(p)weight is \(d.weight); expected a whole number from 1 to 1000000")
            }
            durations += [
                (p + "max_age", d.maxAge, .age), (p + "min_age", d.minAge, .age),
                (p + "trim_after_idle", d.trimAfterIdle, .interval), (p + "poll_interval", d.pollInterval, .interval),
            ]
        }
        for (key, seconds, kind) in durations {
            guard let seconds, !kind.admits(seconds) else { continue }
            throw ConfigError(key: key, message: "\(key) is \(seconds) s; expected 1 s to \(kind.limitText)")
        }
    }
}
