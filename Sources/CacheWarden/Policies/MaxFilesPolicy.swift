import CacheWardenLedger

/// An inode quota (`max_files`, ccache's `max_files`): a directory with more files than that is trimmed oldest
/// first down to `trim_to` of it when `trim_to` is a share (half by default), or to half of it when `trim_to` is a
/// size.
struct MaxFilesPolicy: CleaningPolicy {
    init?(_ settings: WardenSettings) {
        guard settings.directories.contains(where: { $0.maxFiles != nil }) else { return nil }
    }

    static func needsOrder(_ dir: DirectorySettings, _ settings: WardenSettings) -> Bool { dir.maxFiles != nil }

    var timerInterval: Int64? { nil }

    func decide(_ trigger: PolicyTrigger, roots: [RootID], state: PipelineState) -> PolicyDecision {
        var decision = PolicyDecision()
        for id in roots {
            guard let rt = state.roots[id], rt.lost == nil, let limit = rt.settings.maxFiles,
                let files = state.ledger.account(id)?.files, files > limit
            else { continue }
            let target: Int
            if case .percent(let p) = rt.settings.trimTo {
                target = Int(Double(limit) * p / 100)
            } else {
                target = limit / 2
            }
            decision.goals.append(EvictionGoal(reason: .maxFiles, roots: [id], target: .files(target)))
        }
        return decision
    }
}
