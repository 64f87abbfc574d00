extension TrimRun {
    /// Takes the unit's own client locks (`client_lock` paths with `{unit}`: huggingface_hub's per-blob locks of a
    /// repository) just before it is deleted; false when the client holds one: the unit stays, counted as in use,
    /// and the trim goes on with the next unit. A dry run takes none.
    mutating func takeUnitLocks(_ unit: Unit, _ state: inout PipelineState) -> Bool {
        guard !dryRun else { return true }
        guard state.takeUnitClientLocks(root, runtime, unit: PathBytes.display(unit.path)) else {
            spared.inUse += 1
            return false
        }
        return true
    }
}
