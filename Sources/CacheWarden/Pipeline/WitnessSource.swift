/// Hands each trim's deleter the backend's `DeletionWitness`. The evictor is built with the engine, before the
/// backend exists (and each start makes a new backend), so its deleters reach the backend through this.
/// Confined to the engine's queue, like the engine.
final class WitnessSource {
    weak var backend: (any ChangeBackend)?

    func witness(for root: RootID, in ledger: SizeLedger) -> (any DeletionWitness)? {
        guard let backend, let account = ledger.account(root) else { return nil }
        return backend.deletionWitness(forRootAt: PathBytes.display(account.path))
    }
}
