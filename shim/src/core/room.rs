//! Host memory that one in-queue read of the capture lands in: a chunk of pinned memory
//! ([`super::pinned`]) where the driver profits from it, else a heap vector, and the large
//! heap vectors kept for reuse ([`spare`]); or, for a side digested in place
//! ([`super::inplace`]), only the slot its digest lands in.
//!
//! Job: own the bytes a read writes until the landing stage takes them. It must not enqueue
//! anything, look at a launch or its record, or know the registry of launches in flight.
//!
//! Invariants:
//! * Nobody reads a landing's bytes before the read into it completed (the `unsafe`
//!   accessors say so): the driver writes them, and only the completion of the launch's
//!   final event (or a marker, a `clFinish`) says it is done.
//! * A heap landing dropped unread goes back to [`spare`]; a pinned chunk goes back to its
//!   pool when dropped (the pool's own `Drop`).
//! * [`spare`] holds at most [`spare::MAX_BYTES`], and gives everything back when unused for
//!   the writer's trim interval.

use super::pinned::{Chunk, Pool};

/// Where one read lands: host memory with room for the object's bytes, filled by the driver.
pub(in crate::core) struct Landing {
    room: Room,
    /// Why the read could not even be enqueued (None: enqueued).
    pub err: Option<String>,
}

impl Drop for Landing {
    /// A large heap landing goes back to [`spare`] for the next launch's read.
    fn drop(&mut self) {
        if let Room::Heap(v) = &mut self.room {
            spare::give(std::mem::take(v));
        }
    }
}

/// Large heap landings kept for reuse. Why: a read of a multi-megabyte buffer into fresh
/// memory page-faults on every page as the driver writes it (the kernel zeroes each one
/// first): a tenth of the capture's time for a 16 MB buffer read at every launch on a CPU
/// device. Bounded ([`spare::MAX_BYTES`]) and given back when unused for the writer's trim
/// interval ([`spare::trim`]).
pub(in crate::core) mod spare {
    use crate::core::track::lock;
    use std::sync::Mutex;
    use std::time::Instant;

    /// Landings smaller than this are not kept (the allocator serves them well).
    const MIN_BYTES: usize = 1 << 20;
    /// Most bytes kept.
    pub(in crate::core) const MAX_BYTES: usize = 256 << 20;

    struct Spares {
        vecs: Vec<Vec<u8>>,
        bytes: usize,
        used: Option<Instant>,
    }

    static SPARES: Mutex<Spares> = Mutex::new(Spares {
        vecs: Vec::new(),
        bytes: 0,
        used: None,
    });

    /// An empty vector with room for `n` bytes: a kept one, else fresh room whose pages
    /// several threads touched first. Why: a driver copies a read into pageable memory on
    /// one thread, and in fresh memory every page faults there first (on the H200,
    /// buffer-heavy's snapshots came back at about 2.6 GB/s, where a read into mapped memory
    /// runs at 10–12 GB/s). For the threads that write the capture (the writer, a snapshot
    /// reader, an application's thread inside its `clFinish`), never for a launching thread:
    /// the touching would cost it what it saves the driver.
    pub(in crate::core) fn mapped(n: usize) -> Vec<u8> {
        use cltrap_capture::parallel::{map_each, PARALLEL_MIN};
        const PIECE: usize = 1 << 20;
        if let Some(v) = take(n) {
            return v;
        }
        let mut v: Vec<u8> = Vec::with_capacity(n);
        let base = v.as_mut_ptr() as usize;
        map_each(n.div_ceil(PIECE), n >= PARALLEL_MIN, |i| {
            let at = i * PIECE;
            // SAFETY: bytes `at..at + len` lie in `v`'s allocation of `n` bytes; each piece
            // is written by one thread.
            unsafe { std::ptr::write_bytes((base + at) as *mut u8, 0, PIECE.min(n - at)) };
        });
        v
    }

    /// An empty vector with room for `n` bytes (at most twice that), when one is kept.
    pub(in crate::core) fn take(n: usize) -> Option<Vec<u8>> {
        if n < MIN_BYTES {
            return None;
        }
        let mut s = lock(&SPARES);
        let i = (0..s.vecs.len())
            .filter(|i| (n..=n.saturating_mul(2)).contains(&s.vecs[*i].capacity()))
            .min_by_key(|i| s.vecs[*i].capacity())?;
        let v = s.vecs.swap_remove(i);
        s.bytes -= v.capacity();
        s.used = Some(Instant::now());
        Some(v)
    }

    /// Keeps `v` for a later landing when it is large and there is room.
    pub(in crate::core) fn give(mut v: Vec<u8>) {
        let cap = v.capacity();
        if cap < MIN_BYTES {
            return;
        }
        v.clear();
        let mut s = lock(&SPARES);
        if s.bytes + cap <= MAX_BYTES {
            s.bytes += cap;
            s.vecs.push(v);
        }
    }

    /// Gives every kept landing back when none was taken for `idle`.
    pub(in crate::core) fn trim(idle: std::time::Duration) {
        let freed = {
            let mut s = lock(&SPARES);
            if s.used.is_some_and(|t| t.elapsed() < idle) {
                return;
            }
            s.bytes = 0;
            std::mem::take(&mut s.vecs)
        };
        drop(freed);
    }
}

/// Copies `n` bytes from `from` to `to` in pieces of `piece` bytes, each piece on one of the
/// capture's hashing threads when `parallel` (fresh memory faults in on several cores, and
/// one core copies at a fraction of the memory's bandwidth).
///
/// # Safety
/// `from` and `to` are valid for `n` bytes each and do not overlap; nothing else writes
/// `to`'s bytes meanwhile.
pub(in crate::core) unsafe fn copy_in_pieces(
    from: *const u8,
    to: *mut u8,
    n: usize,
    piece: usize,
    parallel: bool,
) {
    let (from, to) = (from as usize, to as usize);
    cltrap_capture::parallel::map_each(n.div_ceil(piece), parallel, |i| {
        let at = i * piece;
        // SAFETY: bytes `at..at + len` lie within both ranges (the caller's promise); each
        // piece is copied by one thread.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (from + at) as *const u8,
                (to + at) as *mut u8,
                piece.min(n - at),
            )
        };
    });
}

/// What a digest computed in place leaves ([`super::inplace`]): the digest, and a copy of the
/// bytes where the side is stored and the capture did not hold that content yet.
pub(in crate::core) struct InPlaced {
    pub hash: cltrap_capture::Hash,
    /// Shared with later launches that left the same new content before it was stored.
    pub bytes: Option<std::sync::Arc<Vec<u8>>>,
}

/// Where a digest computed in place lands: set once by the native kernel on a driver thread,
/// taken by the landing stage once the launch's final event completed.
pub(in crate::core) type DigestSlot = std::sync::Arc<std::sync::Mutex<Option<InPlaced>>>;

/// Pinned memory where the driver profits from it ([`super::pinned`]), else the heap; or no
/// bytes at all, only the slot of a digest computed in place.
enum Room {
    /// Capacity = the object's size; the length is set once the read completed.
    Heap(Vec<u8>),
    Pinned(Chunk),
    /// The slot, and whether a new content's bytes are copied into it (the side is stored).
    Digest(DigestSlot, bool),
}

impl Landing {
    /// Room for `n` bytes (not initialised: the driver writes all of them before we look),
    /// from `pool` when it has some.
    pub(in crate::core) fn with_room(n: usize, pool: Option<&std::sync::Arc<Pool>>) -> Landing {
        let room = match pool.and_then(|p| p.take(n)) {
            Some(chunk) => Room::Pinned(chunk),
            None => Room::Heap(spare::take(n).unwrap_or_else(|| Vec::with_capacity(n))),
        };
        Landing { room, err: None }
    }

    /// No room: the side's digest is computed in place ([`super::inplace`]) into a slot,
    /// with a copy of its bytes when `copy_new` and the capture does not hold them yet.
    pub(in crate::core) fn digest_in_place(copy_new: bool) -> Landing {
        Landing {
            room: Room::Digest(Default::default(), copy_new),
            err: None,
        }
    }

    /// The slot of a side digested in place and whether new bytes are copied into it (None:
    /// its bytes are read back).
    pub(in crate::core) fn digest_slot(&self) -> Option<(&DigestSlot, bool)> {
        match &self.room {
            Room::Digest(slot, copy_new) => Some((slot, *copy_new)),
            _ => None,
        }
    }

    /// Where the driver writes (null for a side digested in place).
    pub(in crate::core) fn as_mut_ptr(&mut self) -> *mut u8 {
        match &mut self.room {
            Room::Heap(v) => v.as_mut_ptr(),
            Room::Pinned(c) => c.as_mut_ptr(),
            Room::Digest(..) => std::ptr::null_mut(),
        }
    }

    /// The heap memory holding the `n` bytes the read wrote, taken out (None: pinned memory,
    /// which goes back to its pool).
    ///
    /// # Safety
    /// A read of `n` bytes into this landing has completed.
    pub(in crate::core) unsafe fn take_filled(&mut self, n: usize) -> Option<Vec<u8>> {
        match &mut self.room {
            Room::Heap(v) => {
                // SAFETY: the caller's read of `n` bytes (at most the capacity) completed.
                unsafe { v.set_len(n) };
                Some(std::mem::take(v))
            }
            Room::Pinned(_) | Room::Digest(..) => None,
        }
    }

    /// The `n` bytes the read wrote.
    ///
    /// # Safety
    /// A read of `n` bytes into this landing has completed.
    pub(in crate::core) unsafe fn filled(&mut self, n: usize) -> &[u8] {
        match &mut self.room {
            Room::Heap(v) => {
                // SAFETY: the caller's read of `n` bytes (the capacity) completed.
                unsafe { v.set_len(n) };
                v
            }
            // SAFETY: as above.
            Room::Pinned(c) => unsafe { c.bytes(n) },
            Room::Digest(..) => &[],
        }
    }
}
