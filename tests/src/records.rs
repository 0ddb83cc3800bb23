//! Reading captures back through the format crate, and editing them the way a user or a
//! tool would.

use cltrap_capture::{ArgRecord, BlobStore, Capture, Content, LaunchRecord};
use std::collections::HashMap;
use std::path::Path;

/// Opens a capture with the format crate, failing the test with the reader's own sentence.
pub fn open_capture(dir: &Path) -> Capture {
    Capture::open(dir).unwrap_or_else(|e| panic!("capture {} cannot be read: {e}", dir.display()))
}

/// Rewrites launch `id` of the capture in `dir` in place (as a user or tool editing a
/// capture would): the log is written back with one whole record per line (the shim writes
/// most launches as changes of an earlier one), every other record unchanged.
pub fn rewrite_launch(dir: &Path, id: u64, edit: impl FnOnce(&mut LaunchRecord)) {
    let log = dir.join(cltrap_capture::LAUNCHES_FILE);
    let mut records = open_capture(dir).launches;
    let record = records
        .iter_mut()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("launch {id} is not in {}", log.display()));
    edit(record);
    let mut out = String::new();
    for record in &records {
        out.push_str(&serde_json::to_string(record).expect("a record encodes"));
        out.push('\n');
    }
    std::fs::write(&log, out).unwrap_or_else(|e| panic!("cannot write {}: {e}", log.display()));
}

/// Launch counts per kernel name, for exact comparisons.
pub fn kernel_counts(cap: &Capture) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for l in &cap.launches {
        *m.entry(l.kernel.clone()).or_insert(0) += 1;
    }
    m
}

/// Kernel names in capture order.
pub fn kernel_sequence(cap: &Capture) -> Vec<String> {
    cap.launches.iter().map(|l| l.kernel.clone()).collect()
}

/// Every (launch's enqueue number, argument, side) content of a capture, in its launches'
/// order.
pub fn content_sides(cap: &Capture) -> Vec<(u64, u32, &'static str, &Content)> {
    let mut v = Vec::new();
    for l in &cap.launches {
        for a in &l.args {
            if let Some((before, after)) = contents(a) {
                v.push((l.seq, a.info().index, "before", before));
                v.push((l.seq, a.info().index, "after", after));
            }
        }
    }
    v
}

/// The launches of one kernel, in capture order.
pub fn launches_of<'a>(cap: &'a Capture, kernel: &str) -> Vec<&'a LaunchRecord> {
    cap.launches.iter().filter(|l| l.kernel == kernel).collect()
}

/// Decodes a scalar argument's recorded bytes (hex, with or without the `0x` that suites
/// write) into bytes, by the capture format's own rule.
pub fn scalar_bytes(arg: &ArgRecord) -> Option<Vec<u8>> {
    match arg {
        ArgRecord::Scalar { bytes, .. } => cltrap_capture::hex::decode(bytes),
        _ => None,
    }
}

/// A scalar `int` argument's value (little-endian, as the host passed it).
pub fn scalar_i32(arg: &ArgRecord) -> Option<i32> {
    let b = scalar_bytes(arg)?;
    Some(i32::from_le_bytes(b.get(..4)?.try_into().ok()?))
}

/// The `before` and `after` contents of a buffer or image argument.
pub fn contents(arg: &ArgRecord) -> Option<(&Content, &Content)> {
    match arg {
        ArgRecord::Buffer { before, after, .. } | ArgRecord::Image { before, after, .. } => {
            Some((before, after))
        }
        _ => None,
    }
}

/// Total size in bytes of all regular files under `dir` (0 if it does not exist).
pub fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => total += dir_size(&p),
                Ok(t) if t.is_file() => total += e.metadata().map(|m| m.len()).unwrap_or(0),
                _ => {}
            }
        }
    }
    total
}

/// Replaces (in place, as a user editing a capture would) the recorded `after` contents of argument `arg` of launch `id` by `edit(bytes)`.
pub fn alter_after(dir: &Path, id: u64, arg: usize, edit: impl FnOnce(&mut Vec<u8>)) {
    let cap = open_capture(dir);
    let launch = cap.launch(id).expect("launch exists");
    let Some((_, Content::Blob { hash, .. })) = contents(&launch.args[arg]) else {
        panic!(
            "argument {arg} of launch {id} has no stored result: {:?}",
            launch.args[arg]
        )
    };
    let mut bytes = cap.blob(hash).expect("result blob");
    edit(&mut bytes);
    let new_hash = BlobStore::new(dir).put(&bytes).expect("store altered blob");
    let size = bytes.len() as u64;
    rewrite_launch(dir, id, |l| match &mut l.args[arg] {
        ArgRecord::Buffer { after, .. } | ArgRecord::Image { after, .. } => {
            *after = Content::Blob {
                hash: new_hash,
                size,
            }
        }
        other => panic!("not a memory argument: {other:?}"),
    });
}
