//! An in-order replay keeps each launch's verified outputs on the device and binds them to
//! the next launch that reads them instead of uploading them again; the verdicts are the
//! ones a replay that uploads every input gives, and a launch that mismatches or fails
//! hands nothing wrong on: the next launch restores its inputs from the capture.
//!
//! The fixture is a Gaussian elimination (Fan1/Fan2 per pivot over the buffers m, a, b):
//! every launch reads exactly what the previous one left.

use cltrap_capture::{ArgRecord, BlobStore, Content};
use cltrap_e2e::*;
use std::path::Path;

/// Matrix order: 2 * 31 = 62 launches.
const N: &str = "32";
const LAUNCHES: u64 = 62;

/// `cltrap replay DIR [ids] --timing`: the outcome and (bound, uploaded) buffer inputs from
/// the timing line.
fn replay_timed(dir: &Path, ids: &[String]) -> (Outcome, u64, u64) {
    let mut args = vec![
        "replay".to_string(),
        dir.display().to_string(),
        "--timing".into(),
    ];
    args.extend(ids.iter().cloned());
    let out = cltrap(&args);
    out.assert_no_panic();
    let line = replay_timing_line(&out);
    let count = |word: &str| count_before(&line, word);
    // The host time of the launches, by phase, on a line of its own.
    let phases = cltrap_line(&out, "replay time per launch:");
    for phase in [
        "restore ",
        "run ",
        "kernel object ",
        "memory objects ",
        "arguments and enqueues ",
        "waiting ",
        "verify ",
        "compare ",
        "outside the launches: ",
    ] {
        assert!(phases.contains(phase), "no {phase:?} in {phases}");
    }
    let bound = count(" bound on the device");
    let uploaded = count(" uploaded (");
    (out, bound, uploaded)
}

/// The per-launch lines of a replay, by launch id (the summary excluded).
fn verdicts(out: &Outcome) -> Vec<String> {
    let mut lines: Vec<String> = out
        .stdout_text()
        .lines()
        .filter(|l| l.starts_with("launch "))
        .map(str::to_string)
        .collect();
    lines.sort_by_key(|l| {
        l.split_whitespace()
            .nth(1)
            .and_then(|n| n.parse::<u64>().ok())
    });
    lines
}

fn summary(out: &Outcome) -> String {
    out.stdout_text()
        .lines()
        .find(|l| l.starts_with("replayed "))
        .unwrap_or_else(|| panic!("no summary\n{}", out.describe()))
        .to_string()
}

/// Replaces the recorded contents *before* launch `id` of argument `arg` by `edit(bytes)`.
fn alter_before(dir: &Path, id: u64, arg: usize, edit: impl FnOnce(&mut Vec<u8>)) {
    let cap = open_capture(dir);
    let launch = cap.launch(id).expect("launch exists");
    let Some((Content::Blob { hash, .. }, _)) = contents(&launch.args[arg]) else {
        panic!("argument {arg} of launch {id} has no stored input")
    };
    let mut bytes = cap.blob(hash).expect("input blob");
    edit(&mut bytes);
    let new_hash = BlobStore::new(dir).put(&bytes).expect("store altered blob");
    let size = bytes.len() as u64;
    rewrite_launch(dir, id, |l| match &mut l.args[arg] {
        ArgRecord::Buffer { before, .. } => {
            *before = Content::Blob {
                hash: new_hash,
                size,
            }
        }
        other => panic!("not a buffer argument: {other:?}"),
    });
}

/// The ids of all launches, last first: no launch's inputs are what the one replayed just
/// before it left, so every input is uploaded (the replay without a chain).
fn reversed() -> Vec<String> {
    (0..LAUNCHES).rev().map(|i| i.to_string()).collect()
}

#[test]
fn an_in_order_replay_binds_the_previous_outputs_and_judges_as_uploading_everything() {
    let (dir, cap) = round_trip("gauss", &[N], &[]);
    assert_eq!(cap.launches.len() as u64, LAUNCHES);
    let (chained, bound, uploaded) = replay_timed(&dir, &[]);
    assert_eq!(chained.code, Some(0), "{}", chained.describe());
    // Every launch after the first binds its three buffers (m, a, b) from the one before.
    assert_eq!(
        (bound, uploaded),
        (3 * (LAUNCHES - 1), 3),
        "{}",
        chained.describe()
    );
    let (unchained, bound_r, uploaded_r) = replay_timed(&dir, &reversed());
    assert_eq!(unchained.code, Some(0), "{}", unchained.describe());
    assert!(
        uploaded_r >= 3 * LAUNCHES - 2 * 2 && bound_r + uploaded_r == 3 * LAUNCHES,
        "replayed last first, (nearly) every input is uploaded: {bound_r} bound, {uploaded_r} uploaded"
    );
    assert_eq!(verdicts(&chained), verdicts(&unchained));
    assert_eq!(summary(&chained), summary(&unchained));
    assert!(summary(&chained).contains(&format!("{LAUNCHES} matched")));
}

#[test]
fn a_mismatched_or_failed_launch_hands_nothing_on_the_next_restores_from_the_capture() {
    let (dir, cap) = round_trip("gauss", &[N], &[]);
    assert_eq!(cap.launches[9].kernel, "Fan2");
    // Launch 9 (Fan2) runs on a corrupted copy of `a`: its outputs differ from the record,
    // whose contents launch 10 starts from.
    alter_before(&dir, 9, 1, |b| {
        let last = b.len() - 4;
        b[last + 3] ^= 0x40;
    });
    // Launch 21 fails once its buffers are bound: the driver refuses its `n` (argument 3),
    // made two bytes long instead of an int's four.
    rewrite_launch(&dir, 21, |l| match &mut l.args[3] {
        ArgRecord::Scalar { bytes, .. } => *bytes = "2000".into(),
        other => panic!("argument 3 is not a scalar: {other:?}"),
    });
    let (out, bound, uploaded) = replay_timed(&dir, &[]);
    assert_eq!(
        out.code,
        Some(2),
        "a failed launch exits 2\n{}",
        out.describe()
    );
    let lines = verdicts(&out);
    let line = |id: u64| {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("launch {id} ")))
            .unwrap_or_else(|| panic!("no line for launch {id}\n{}", out.describe()))
    };
    assert!(line(9).contains("MISMATCH"), "{}", line(9));
    assert!(line(21).contains("error:"), "{}", line(21));
    for id in (0..LAUNCHES).filter(|id| *id != 9 && *id != 21) {
        assert!(line(id).ends_with(": ok"), "{}", line(id));
    }
    assert!(
        summary(&out).contains(&format!(
            "{} matched, 1 mismatched, 0 skipped, 1 failed",
            LAUNCHES - 2
        )),
        "{}",
        summary(&out)
    );
    // Uploaded: launch 0's three buffers; launch 9's altered `a`; launch 10's `a`, as
    // recorded (launch 9's output `a` differs from it and was not kept; its `m` and `b`
    // match and were); all three of launch 22's (launch 21 failed: nothing is kept).
    assert_eq!(
        (bound, uploaded),
        (3 * LAUNCHES - 8, 8),
        "{}",
        out.describe()
    );
}

/// Reads staged in pinned memory (what a replay does on a GPU; forced here on PoCL's CPU
/// device) give the verdicts and the bytes of reads into their own allocations: a mismatch
/// read back after its device digest differed, and the chain's bound inputs, included.
#[test]
fn staged_reads_judge_as_reads_into_their_own_memory() {
    let (dir, _cap) = round_trip("gauss", &[N], &[]);
    alter_before(&dir, 9, 1, |b| {
        let last = b.len() - 4;
        b[last + 3] ^= 0x40;
    });
    let replay = |staging: &str| {
        let shim = tools().shim.clone();
        let out = run_with_env(
            &tools().cltrap,
            &["replay".as_ref(), dir.as_os_str()],
            &[
                ("CLTRAP_SHIM", shim.as_os_str()),
                ("CLTRAP_TEST_STAGING", staging.as_ref()),
            ],
            None,
        );
        out.assert_no_panic();
        assert_eq!(
            out.code,
            Some(1),
            "one mismatch exits 1\n{}",
            out.describe()
        );
        out
    };
    let (staged, unstaged) = (replay("on"), replay("off"));
    assert_eq!(verdicts(&staged), verdicts(&unstaged));
    assert_eq!(summary(&staged), summary(&unstaged));
    assert!(
        summary(&staged).contains(&format!("{} matched, 1 mismatched", LAUNCHES - 1)),
        "{}",
        summary(&staged)
    );
    // The mismatch names where its bytes differ, as read back through the staging area.
    let nine = |out: &Outcome| {
        verdicts(out)
            .into_iter()
            .find(|l| l.starts_with("launch 9 "))
            .unwrap_or_default()
    };
    assert!(nine(&staged).contains("MISMATCH"), "{}", nine(&staged));
}

/// Two buffers of a launch that hold the same content (a READ_ONLY input and the WRITE_ONLY
/// output it is copied into, as in clpeak's kernel-latency test on a GPU) are both kept and
/// both bound by the next launch: one object per content made the input be uploaded again
/// at every launch (each launch 2.1 MB and a new buffer object on the H200).
#[test]
fn buffers_holding_the_same_content_are_each_bound_by_the_next_launch() {
    const TWINS: u64 = 8;
    let (dir, cap) = round_trip("twins", &[&TWINS.to_string()], &[]);
    assert_eq!(cap.launches.len() as u64, TWINS);
    let first = &cap.launches[0];
    let (Some((a_before, _)), Some((b_before, _))) =
        (contents(&first.args[0]), contents(&first.args[1]))
    else {
        panic!("launch 0 has no contents for a and b: {first:?}")
    };
    assert_eq!(a_before, b_before, "a and b hold the same content");
    let (out, bound, uploaded) = replay_timed(&dir, &[]);
    assert_eq!(out.code, Some(0), "{}", out.describe());
    assert_eq!(
        (bound, uploaded),
        (2 * (TWINS - 1), 2),
        "every launch after the first binds both buffers\n{}",
        out.describe()
    );
    assert!(
        summary(&out).contains(&format!("{TWINS} matched")),
        "{}",
        out.describe()
    );
}
