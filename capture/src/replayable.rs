//! Whether a recorded launch can be replayed, and why not — one rule for `cltrap list`,
//! `cltrap show` and the capture's own tests.
//!
//! Why here: past its disk budget a capture keeps full contents only for some launches (see
//! the shim's `contents` module), so replayability is a property of the recorded contents, not
//! only of the launch's `not_replayable` notes; the analyzer's executor restores inputs by the
//! same rule (a digest-only content is restorable when it is the digest of all zeros).

use crate::model::{ArgRecord, Content, DigestKind, LaunchRecord};
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
    /// Why this launch cannot be replayed from its capture (empty: it can): its
    /// `not_replayable` notes, a failed enqueue, and every buffer or image whose contents
    /// before the launch were not kept (but for write-only buffers, which a replay fills with a
    /// stand-in, as the executor does).
    pub fn replay_blockers(&self) -> Vec<String> {
        let mut why = self.not_replayable.clone();
        if self.status != 0 {
            why.push(format!(
                "the application's enqueue failed (status {}), so the kernel never ran",
                self.status
            ));
        }
        for a in &self.args {
            let before = match a {
                ArgRecord::Buffer { flags, .. } if flags & CL_MEM_WRITE_ONLY != 0 => continue,
                ArgRecord::Buffer { before, .. } | ArgRecord::Image { before, .. } => before,
                _ => continue,
            };
            if restorable(before) {
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
                    "{name}: only the digest of its contents before the launch was kept (buffer mode `hash`, or past the disk budget)"
                ),
                Content::Missing { note } if !note.is_empty() => format!("{name}: {note}"),
                _ => format!("{name}: its contents before the launch were not recorded"),
            });
        }
        why
    }

    /// Whether this launch can be replayed from its capture.
    pub fn replayable(&self) -> bool {
        self.replay_blockers().is_empty()
    }
}
