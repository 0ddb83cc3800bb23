//! Hash maps keyed by OpenCL handles and ticket numbers, with a cheap hash.
//!
//! Why: every recorded launch looks up its kernel, queue, memory objects and in-flight
//! tickets in several maps, and the writer thread walks the tickets in flight on every
//! poll. The standard library's SipHash (built against adversarial keys) was a third of the
//! writer thread's instructions in a launch storm. Handles are pointers the driver chose and
//! tickets are counters, never attacker-controlled, so rustc's Fx hash (one multiply per
//! word, its high bits rotated into the bucket index) is enough.

/// A map keyed by handles or tickets (build it with `Default::default()`).
pub type HandleMap<K, V> = rustc_hash::FxHashMap<K, V>;
/// A set of handles or tickets (build it with `Default::default()`).
pub type HandleSet<K> = rustc_hash::FxHashSet<K>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_maps_hold_pointer_like_and_sequential_keys() {
        let mut m: HandleMap<usize, usize> = Default::default();
        for i in 0..10_000usize {
            m.insert(0x5555_0000_0000 + i * 16, i);
            m.insert(i, i);
        }
        assert_eq!(m.len(), 20_000);
        assert!((0..10_000usize).all(|i| m[&(0x5555_0000_0000 + i * 16)] == i && m[&i] == i));
    }
}
