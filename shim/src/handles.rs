//! Hash maps keyed by OpenCL handles and ticket numbers, with a cheap hash.
//!
//! Why: every recorded launch looks up its kernel, queue, memory objects and in-flight
//! tickets in several maps, and the writer thread walks the tickets in flight on every
//! poll. The standard library's SipHash (built against adversarial keys) was a third of the
//! writer thread's instructions in a launch storm. Handles are pointers the driver chose and
//! tickets are counters, never attacker-controlled, so one multiplication (Fx-style, which
//! spreads low bits into the high bits hashbrown's control bytes use) is enough.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for integer keys: one multiply-rotate per word.
#[derive(Default, Clone, Copy)]
pub struct HandleHasher(u64);

const K: u64 = 0x517c_c1b7_2722_0a95;

impl Hasher for HandleHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..b.len()].copy_from_slice(b);
            self.write_u64(u64::from_ne_bytes(w));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(K);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn finish(&self) -> u64 {
        // The product's low bits depend only on the key's low bits (zero in aligned
        // pointers): rotate its well-mixed middle bits into the bucket index.
        self.0.rotate_left(26)
    }
}

/// A map keyed by handles or tickets (build it with `Default::default()`).
pub type HandleMap<K, V> = HashMap<K, V, BuildHasherDefault<HandleHasher>>;
/// A set of handles or tickets (build it with `Default::default()`).
pub type HandleSet<K> = HashSet<K, BuildHasherDefault<HandleHasher>>;

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
