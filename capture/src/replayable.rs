//! Whether a recorded launch can be replayed, and how — one rule for `cltrap list`,
//! `cltrap show`, the replay's input resolver and the capture's own tests.
//!
//! Why here: past half its disk budget a capture stores only the contents before a launch
//! that no earlier launch re-creates (see the shim's `contents` module); the others are
//! digests that a replay *derives* by re-executing the launch that left them (checked
//! against the digest). So replayability is a property of the whole capture, not of one
//! record: [`ReplayIndex`] holds it for every launch. A digest-only content is also restorable
//! when it is the digest of all zeros, as the analyzer's executor does.

use crate::model::{ArgRecord, Content, DigestKind, Hash, LaunchRecord};
use std::collections::HashMap;
use std::sync::Mutex;

/// `CL_MEM_WRITE_ONLY`: a buffer the kernel may only write. A replay fills one whose contents
/// before were not kept with a stand-in (the kernel cannot read them), so it does not block.
const CL_MEM_WRITE_ONLY: u64 = 1 << 1;

/// Largest digest-only content checked against the digest of zeros (what a replay restores).
const MAX_ZERO_CHECK: u64 = 1 << 30;

/// Whether `content` can be put back into its object before a replay: its bytes were
/// stored, or only its digest was, and that is the digest of as many zero bytes.
pub fn restorable(content: &Content) -> bool {
    match content {
        Content::Blob { .. } => true,
        Content::Digest { hash, size, algo } => zero_digest(*algo, *size).as_deref() == Some(hash),
        Content::Missing { .. } => false,
    }
}

/// The digest of `size` zero bytes (cached: `cltrap list` asks once per launch).
fn zero_digest(algo: DigestKind, size: u64) -> Option<String> {
    static CACHE: Mutex<Option<HashMap<(DigestKind, u64), String>>> = Mutex::new(None);
    if size > MAX_ZERO_CHECK {
        return None;
    }
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let map = cache.get_or_insert_with(HashMap::new);
    Some(
        map.entry((algo, size))
            .or_insert_with(|| algo.digest(&vec![0u8; size as usize]))
            .clone(),
    )
}

impl LaunchRecord {
    /// Why this launch cannot be replayed from its own record (empty: it can): its
    /// `not_replayable` notes, a failed enqueue, and every buffer or image whose contents
    /// before the launch were not kept (but for write-only buffers, which a replay fills with a
    /// stand-in, as the executor does). Inputs that earlier launches re-create are counted as
    /// blockers here; [`ReplayIndex`] is the rule with the whole capture in view.
    pub fn replay_blockers(&self) -> Vec<String> {
        self.blockers(|_, _| None)
    }

    /// Whether this launch can be replayed from its own record (see [`ReplayIndex`] for the
    /// rule that counts derived inputs).
    pub fn replayable(&self) -> bool {
        self.replay_blockers().is_empty()
    }

    /// [`Self::replay_blockers`], with `derive(arg index, content before)` asked about every
    /// input that is not stored: `Some` when an earlier launch re-creates it.
    fn blockers(&self, mut derive: impl FnMut(u32, &Content) -> Option<()>) -> Vec<String> {
        let mut why = self.not_replayable.clone();
        if self.status != 0 {
            why.push(format!(
                "the application's enqueue failed (status {}), so the kernel never ran",
                self.status
            ));
        }
        for (i, a) in self.args.iter().enumerate() {
            let (before, write_only) = match a {
                ArgRecord::Buffer { flags, before, .. } => (before, flags & CL_MEM_WRITE_ONLY != 0),
                ArgRecord::Image { before, .. } => (before, false),
                _ => continue,
            };
            if restorable(before) {
                continue;
            }
            if derive(i as u32, before).is_some() || write_only {
                continue;
            }
            let info = a.info();
            let name = if info.name.is_empty() {
                format!("argument {}", info.index)
            } else {
                format!("argument {} ({})", info.index, info.name)
            };
            why.push(match before {
                Content::Digest { .. } => format!(
                    "{name}: only the digest of its contents before the launch was kept (buffer mode `hash`, or past the disk budget), and no earlier replayable launch left contents with that digest"
                ),
                Content::Missing { note } if !note.is_empty() => format!("{name}: {note}"),
                _ => format!("{name}: its contents before the launch were not recorded"),
            });
        }
        why
    }
}

/// The key under which a content can be found again: same function, same digest, same size.
type Key = (DigestKind, Hash, u64);

fn key(c: &Content) -> Option<Key> {
    match c {
        Content::Digest { hash, size, algo } => Some((*algo, hash.clone(), *size)),
        _ => None,
    }
}

/// One input of a launch that the capture does not store but an earlier launch produced:
/// a replay re-creates it by re-executing `producer` and taking its argument `producer_arg`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DerivedInput {
    /// The argument (position) of the launch whose contents before are derived.
    pub arg: u32,
    /// The launch (id) whose contents after are those contents.
    pub producer: u64,
    /// The producer's argument (position) that holds them.
    pub producer_arg: u32,
}

/// How a launch can be replayed, as `cltrap list`, `cltrap show` and the replay's resolver
/// read it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "replayable", rename_all = "snake_case")]
pub enum Replayability {
    /// Every input is stored in the capture (or needs no bytes).
    Stored,
    /// Some inputs are re-created by re-executing earlier launches.
    Derived {
        /// The inputs re-created, each with its producer.
        inputs: Vec<DerivedInput>,
        /// Launches re-executed one after another back to a launch whose inputs are all
        /// stored (the longest such chain).
        chain: u64,
        /// That launch: where the chain starts from stored contents.
        checkpoint: u64,
    },
    /// Not replayable: why, one sentence per reason.
    Blocked { why: Vec<String> },
}

impl Replayability {
    /// Whether the launch can be replayed (from stored or derived inputs).
    pub fn replayable(&self) -> bool {
        !matches!(self, Replayability::Blocked { .. })
    }

    /// The derived input of argument `arg`, if it is one.
    pub fn derived(&self, arg: u32) -> Option<&DerivedInput> {
        match self {
            Replayability::Derived { inputs, .. } => inputs.iter().find(|d| d.arg == arg),
            _ => None,
        }
    }
}

/// Whether every launch of a capture can be replayed, and how: one pass over the launch log
/// in its order with a map `digest → producing launch`, so `cltrap list` stays linear in the
/// number of launches.
///
/// The rule: a content before a launch that is only a digest is *derivable* when a launch
/// earlier in the log, itself replayable, recorded contents after with the same digest (same
/// function, same size); re-executing that launch re-creates the bytes, which the replay
/// checks against the digest. Earlier-only keeps derivations free of cycles. Among several
/// producers the one with the shortest chain back to stored contents is taken (the latest on
/// a tie).
#[derive(Debug, Clone, Default)]
pub struct ReplayIndex {
    status: Vec<Replayability>,
    by_id: HashMap<u64, usize>,
}

impl ReplayIndex {
    /// The index of `launches`, in the order given (the capture's log order).
    pub fn of(launches: &[LaunchRecord]) -> ReplayIndex {
        // Per digest: (position of the producer, its argument, its chain).
        let mut producers: HashMap<Key, (usize, u32, u64)> = HashMap::new();
        let mut status: Vec<Replayability> = Vec::with_capacity(launches.len());
        let mut by_id = HashMap::with_capacity(launches.len());
        for (pos, l) in launches.iter().enumerate() {
            by_id.insert(l.id, pos);
            let mut inputs = Vec::new();
            let mut chain = 0u64;
            let mut checkpoint = l.id;
            let why = l.blockers(|arg, before| {
                let (p, parg, pchain) = *producers.get(&key(before)?)?;
                let producer = &launches[p];
                if pchain + 1 > chain {
                    chain = pchain + 1;
                    checkpoint = match &status[p] {
                        Replayability::Derived { checkpoint, .. } => *checkpoint,
                        _ => producer.id,
                    };
                }
                inputs.push(DerivedInput {
                    arg,
                    producer: producer.id,
                    producer_arg: parg,
                });
                Some(())
            });
            let s = if !why.is_empty() {
                Replayability::Blocked { why }
            } else if inputs.is_empty() {
                Replayability::Stored
            } else {
                Replayability::Derived {
                    inputs,
                    chain,
                    checkpoint,
                }
            };
            if s.replayable() {
                let chain = match &s {
                    Replayability::Derived { chain, .. } => *chain,
                    _ => 0,
                };
                for (i, a) in l.args.iter().enumerate() {
                    let (ArgRecord::Buffer { after, .. } | ArgRecord::Image { after, .. }) = a
                    else {
                        continue;
                    };
                    if let Some(k) = key(after) {
                        let i = i as u32;
                        let e = producers.entry(k).or_insert((pos, i, chain));
                        if chain <= e.2 {
                            *e = (pos, i, chain);
                        }
                    }
                }
            }
            status.push(s);
        }
        ReplayIndex { status, by_id }
    }

    /// How launch `id` can be replayed (None: no such launch).
    pub fn get(&self, id: u64) -> Option<&Replayability> {
        self.by_id.get(&id).map(|p| &self.status[*p])
    }

    /// Launches that can be replayed.
    pub fn count_replayable(&self) -> usize {
        self.status.iter().filter(|s| s.replayable()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ArgInfo, DeviceRecord, LaunchApi};

    fn digest(h: &str, algo: DigestKind) -> Content {
        Content::Digest {
            hash: h.into(),
            size: 64,
            algo,
        }
    }

    /// A launch over one read-write buffer with these contents before and after.
    fn launch(id: u64, before: Content, after: Content) -> LaunchRecord {
        LaunchRecord {
            id,
            seq: id,
            kernel: "k".into(),
            program: "p".into(),
            api: LaunchApi::NdRange,
            work_dim: 1,
            global_offset: None,
            global_size: vec![16],
            local_size: None,
            args: vec![ArgRecord::Buffer {
                info: ArgInfo {
                    index: 0,
                    name: "x".into(),
                    ..Default::default()
                },
                mem: 0,
                flags: 1,
                size: 64,
                sub_of: None,
                before,
                after,
            }],
            device: DeviceRecord::default(),
            queue_properties: 0,
            launch_site: None,
            thread: 0,
            status: 0,
            not_replayable: Vec::new(),
        }
    }

    #[test]
    fn digests_an_earlier_replayable_launch_left_are_derived_along_a_chain() {
        let b3 = DigestKind::Blake3;
        let launches = vec![
            launch(
                0,
                Content::Blob {
                    hash: "h0".into(),
                    size: 64,
                },
                digest("h1", b3),
            ),
            launch(1, digest("h1", b3), digest("h2", b3)),
            launch(2, digest("h2", b3), digest("h3", b3)),
            // Nobody left h9: blocked, and what it leaves derives nothing.
            launch(3, digest("h9", b3), digest("h4", b3)),
            launch(4, digest("h4", b3), digest("h5", b3)),
            // The same digest by another function is another content.
            launch(5, digest("h3", DigestKind::Dd128), digest("h6", b3)),
            // Only earlier launches produce: h7 comes later.
            launch(6, digest("h7", b3), digest("h8", b3)),
            launch(7, digest("h3", b3), digest("h7", b3)),
        ];
        let index = ReplayIndex::of(&launches);
        assert_eq!(index.get(0), Some(&Replayability::Stored));
        let derived = |producer| DerivedInput {
            arg: 0,
            producer,
            producer_arg: 0,
        };
        assert_eq!(
            index.get(1),
            Some(&Replayability::Derived {
                inputs: vec![derived(0)],
                chain: 1,
                checkpoint: 0
            })
        );
        assert_eq!(
            index.get(2),
            Some(&Replayability::Derived {
                inputs: vec![derived(1)],
                chain: 2,
                checkpoint: 0
            })
        );
        for id in [3, 4, 5, 6] {
            assert!(
                !index.get(id).is_some_and(|s| s.replayable()),
                "launch {id}"
            );
        }
        assert_eq!(index.get(7).and_then(|s| s.derived(0)), Some(&derived(2)));
        assert_eq!(index.count_replayable(), 4);
        assert!(index.get(99).is_none());
    }
}
