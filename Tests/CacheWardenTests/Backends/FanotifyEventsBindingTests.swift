import Testing
@testable import CacheWarden
@testable import CacheWardenLedger

/// How the fanotify backend files the directories it follows by key, checked against a model made of two
/// standard-library dictionaries (key → node, node → key), with no filesystem and no kernel.
@Suite struct FanotifyEventsBindingTests {
    /// A key of `length` bytes made from `n` (lengths past 40 take the long path).
    static func key(_ n: Int, length: Int = 28) -> DirectoryKey {
        bytes(n, length: length).withUnsafeBytes { DirectoryKey($0) }
    }

    static func bytes(_ n: Int, length: Int) -> [UInt8] {
        (0..<length).map { UInt8(truncatingIfNeeded: n >> (($0 % 4) * 8)) &+ UInt8(truncatingIfNeeded: $0) }
    }

    /// The random test's key lengths: every fifth key takes the long path.
    static func length(_ n: Int) -> Int { n % 5 == 0 ? 60 : 20 + n % 9 }

    @Test func randomBindsAndUnbindsMatchTheModel() {
        var g = ModelBasedTotalsTests.Generator(state: 11)
        let keys = (0..<800).map { Self.key($0, length: Self.length($0)) }
        var events = FanotifyEvents()
        var byKey: [Int: UInt32] = [:], byNode: [UInt32: Int] = [:], opens: [UInt32: Bool] = [:]
        for step in 0..<40_000 {
            let node = UInt32(g.below(600))
            // One bind in eight is of the node's own key again (a directory walked again), with opens changed.
            let k = g.below(8) == 0 ? byNode[node] ?? g.below(keys.count) : g.below(keys.count)
            if g.below(4) == 0 {
                events.unbind(NodeID(node))
                if let old = byNode.removeValue(forKey: node) { byKey[old] = nil }
                #expect(!events.tracksOpens(NodeID(node)))
            } else {
                let tracks = g.below(2) == 0
                let displaced = events.bind(keys[k], opens: tracks, to: NodeID(node))
                #expect(events.tracksOpens(NodeID(node)) == tracks)
                let other = byKey[k]
                #expect(displaced == (other == node ? nil : other.map(NodeID.init)), "step \(step)")
                if let other, other != node { byNode[other] = nil }
                if let old = byNode[node], old != k { byKey[old] = nil }
                byKey[k] = node
                byNode[node] = k
                opens[node] = tracks
            }
            // As events look keys up: the same key twice in a row is answered from the last lookup, which every
            // bind and unbind must forget.
            let probe = g.below(2) == 0 ? k : g.below(keys.count)
            let bytes = Self.bytes(probe, length: Self.length(probe))
            for _ in 0..<2 {
                let found = bytes.withUnsafeBytes { events.node(named: $0) }
                #expect(found == byKey[probe].map(NodeID.init), "lookup of key \(probe) at step \(step)")
            }
            if step % 500 == 0 {
                #expect(events.count == byKey.count)
                for (i, key) in keys.enumerated() {
                    #expect(events.node(for: key) == byKey[i].map(NodeID.init), "key \(i) at step \(step)")
                }
                for node in UInt32(0)..<600 {
                    #expect(events.tracksOpens(NodeID(node)) == (byNode[node] != nil && opens[node] == true))
                }
            }
        }
    }

    @Test func keysDifferingInOneByteOrInLengthAreDistinct() {
        let a = Self.key(1), longer = Self.key(1, length: 29)
        var bytes = (0..<28).map { UInt8($0) }
        let b = bytes.withUnsafeBytes { DirectoryKey($0) }
        bytes[27] ^= 1
        let c = bytes.withUnsafeBytes { DirectoryKey($0) }
        #expect(a != longer && b != c)
        var events = FanotifyEvents()
        _ = events.bind(b, opens: true, to: NodeID(3))
        #expect(events.node(for: b) == NodeID(3))
        #expect(events.node(for: c) == nil)
        #expect(events.tracksOpens(NodeID(3)))
        #expect(events.bind(b, opens: false, to: NodeID(3)) == nil)
        #expect(!events.tracksOpens(NodeID(3)))
        #expect(events.bind(b, opens: false, to: NodeID(4)) == NodeID(3))
        #expect(events.node(for: b) == NodeID(4) && events.count == 1)
    }
}
