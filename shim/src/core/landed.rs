//! Contents read back, wherever they landed: in the heap, or in host memory the driver copies
//! into directly (a device-digest engine's mapped buffers, [`super::digest`]).
//!
//! Why a type of its own: landing, the versions kept for the next launch's comparison and the
//! spool lanes all hold contents without caring where they live, and host memory of an
//! engine must go back to that engine (its `Drop`), never to the heap's spare room.
//!
//! Job: a leaf; it knows nothing of engines, only that some holder gives its bytes back when
//! dropped ([`Held`]).

/// Bytes in host memory some holder gives back when dropped.
pub trait Held: Send + Sync {
    /// The contents.
    fn bytes(&self) -> &[u8];
    /// Bytes of memory it holds (at least the contents': a pooled buffer may be larger).
    fn footprint(&self) -> usize {
        self.bytes().len()
    }
}

/// A content read back.
pub enum Landed {
    Heap(Vec<u8>),
    Held(Box<dyn Held>),
}

impl Landed {
    /// The heap vector, for reuse as spare room (None: held memory, which goes back to its
    /// holder when dropped).
    pub fn into_vec(self) -> Option<Vec<u8>> {
        match self {
            Landed::Heap(v) => Some(v),
            Landed::Held(_) => None,
        }
    }

    /// Bytes of memory it takes (a vector's capacity).
    pub fn footprint(&self) -> usize {
        match self {
            Landed::Heap(v) => v.capacity(),
            Landed::Held(h) => h.footprint(),
        }
    }
}

impl std::ops::Deref for Landed {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Landed::Heap(v) => v,
            Landed::Held(h) => h.bytes(),
        }
    }
}
