/// A backend's word, asked right before each deletion of a trim, that the ledger still knows what the victim's
/// name stands for: no name in the victim's directory was created or renamed over since the ledger's last batch.
/// While it vouches, `SafeRemover` skips its per-file re-check (`fstatat`): the name cannot stand for another
/// file without the change being queued. The check is as close to the `unlinkat` as the re-check was, so the
/// window left for a client's rename is the same few microseconds.
///
/// Once it saw a change in a directory it says so for that directory for the rest of the trim, and every later
/// victim there is re-checked; once it cannot tell where changes were (records lost, or the deleter withdrew it),
/// for every directory.
protocol DeletionWitness {
    /// Whether the name about to be deleted in `dir` (open as the verified descriptor `fd`) still stands for the
    /// file the ledger counted.
    mutating func nothingElseChanged(in dir: NodeID, fd: Int32) -> Bool
    /// Makes ready for deletions in `dir` (open as the verified descriptor `fd`, used at once) ahead of them, so
    /// that several directories can be made ready together; false once the witness vouches for nothing more.
    mutating func prepare(_ dir: NodeID, fd: Int32) -> Bool
    /// Completes the preparation of the directories prepared since the last call.
    mutating func commitPrepared()
    /// The deleter unlinked one file of `dir` (name `nameLength` bytes long), vouched for or re-checked.
    mutating func deleted(nameLength: Int, in dir: NodeID)
    /// The deleter changed the trees otherwise (it removed a directory): vouch for nothing more in this trim.
    mutating func withdraw()
}
