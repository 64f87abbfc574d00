/// A backend's word, asked right before each deletion of a trim, that the ledger still knows every name in the
/// victim's directory: nothing has changed under the watched trees since the ledger's last batch except the
/// deletions this trim announced. While it vouches, `SafeRemover` skips its per-file re-check (`fstatat`): the
/// name cannot have been renamed over, replaced or removed without the change being queued. The check is as close
/// to the `unlinkat` as the re-check was, so the window left for a client's rename is the same few microseconds.
///
/// Once it cannot vouch (anything else queued, a directory the backend does not watch, a filesystem whose changes
/// it may not see) it says so for the rest of the trim, and every later victim is re-checked.
protocol DeletionWitness {
    /// Whether nothing but the announced deletions changed since the last batch; `dir` is the victim's directory.
    mutating func nothingElseChanged(in dir: NodeID) -> Bool
    /// The deleter unlinked one file (name `nameLength` bytes long) while the witness vouched.
    mutating func deleted(nameLength: Int)
    /// The deleter changed the trees otherwise (it removed a directory): vouch for nothing more in this trim.
    mutating func withdraw()
}
