//! `--buffers full` spools large contents raw in the application's process and a `cltrap`
//! process compacts them: a spooled capture is readable and replays bit-exact before and after
//! compaction, compaction is idempotent and loses nothing when interrupted, the first command
//! compacts once and says so, a tiny spool bound makes the application wait (and finish
//! correctly), and a hostile spool gives a clear error.

use cltrap_capture::spool::{self, SPOOL_DIR};
use cltrap_capture::{Capture, Content};
use cltrap_e2e::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Rounds of the `budget` fixture: each makes 1 MiB of new incompressible contents.
const ROUNDS: &str = "6";

/// A capture of the `budget` fixture made under a bare `LD_PRELOAD` (nobody compacts it).
fn spooled(label: &str) -> TestDir {
    let exe = fixture("budget");
    let dir = fresh_capture_dir(label);
    let native = run_native(&exe, &[ROUNDS]).expect_success();
    let captured = run_preloaded(&dir, &[], &exe, &[ROUNDS]);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    dir
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    spool::segments(dir)
        .expect("a readable spool")
        .into_iter()
        .map(|n| dir.join(SPOOL_DIR).join(n))
        .collect()
}

/// Files of the store with this suffix (`.pack`, `.chunks`).
fn store_files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in std::fs::read_dir(dir.join("blobs"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for f in std::fs::read_dir(d.path()).into_iter().flatten().flatten() {
            if f.file_name().to_string_lossy().ends_with(suffix) {
                out.push(f.path());
            }
        }
    }
    out
}

/// Every stored buffer content of the capture, by digest, read back (checked on reading).
fn all_contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let cap = Capture::open(dir).expect("the capture opens");
    let mut out = Vec::new();
    for l in &cap.launches {
        for a in &l.args {
            if let Some((before, after)) = contents(a) {
                for c in [before, after] {
                    if let Content::Blob { hash, .. } = c {
                        let bytes = cap.content(c, "a content").expect("a content reads back");
                        out.push((hash.clone(), bytes));
                    }
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn cltrap_on(cmd: &str, dir: &Path) -> Outcome {
    cltrap(&[OsStr::new(cmd), dir.as_os_str()])
}

/// The compactor's lock, held by the test: commands then read the spool as it is.
fn hold_compaction(dir: &Path) -> spool::CompactorLock {
    spool::try_lock_compactor(dir, cltrap_capture::writer_fs::Access::PRIVATE)
        .expect("the lock file")
        .expect("no other compactor")
}

#[test]
fn a_full_capture_is_spooled_and_replays_bit_exact_before_and_after_compaction() {
    let dir = spooled("spooled");
    // The application wrote no packs and no chunk indexes: its large contents are spooled.
    assert!(!segments(&dir).is_empty(), "no spool segment");
    assert!(
        store_files(&dir, ".pack").is_empty(),
        "{:?}",
        store_files(&dir, ".pack")
    );
    assert!(store_files(&dir, ".chunks").is_empty());
    replays_before_and_after_compaction(&dir);
    assert!(!store_files(&dir, ".pack").is_empty(), "no pack written");
}

/// A spooled capture of `dir` holds a large content, every launch replays bit-exact while a
/// compactor holds the lock (the spool read as it is, left alone), `cltrap compact` empties
/// the spool without changing any content, and every launch replays bit-exact again.
fn replays_before_and_after_compaction(dir: &Path) {
    let launches = open_capture(dir).launches.len();
    let before = all_contents(dir);
    assert!(
        before.iter().any(|(_, b)| b.len() >= 1 << 20),
        "no large content"
    );
    {
        let _held = hold_compaction(dir);
        assert_replays_ok(dir, launches);
        assert!(
            !segments(dir).is_empty(),
            "compacted although a compactor held the lock"
        );
    }
    let out = cltrap_on("compact", dir);
    assert!(out.success(), "{}", out.describe());
    assert!(segments(dir).is_empty(), "segments left after compaction");
    assert_eq!(all_contents(dir), before, "contents changed by compaction");
    assert_replays_ok(dir, launches);
}

#[test]
fn compaction_is_idempotent_and_an_interrupted_one_loses_nothing() {
    let dir = spooled("interrupted");
    let launches = open_capture(&dir).launches.len();
    let before = all_contents(&dir);
    let saved: Vec<(PathBuf, Vec<u8>)> = segments(&dir)
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).expect("segment");
            (p, b)
        })
        .collect();
    // A compactor killed while writing a pack leaves it under a temporary name, and one that
    // renamed a pack but had not written its index yet leaves a pack nothing names.
    let junk = dir.join("blobs").join("ab");
    std::fs::create_dir_all(&junk).expect("folder");
    std::fs::write(junk.join(".tmp-999999-0-half.pack"), b"half a pack").expect("junk");
    std::fs::write(junk.join(format!("{}.pack", "ab".repeat(32))), b"unnamed").expect("junk");
    // And one killed for real, at whatever point it reached.
    let mut child = std::process::Command::new(&tools().cltrap)
        .arg("compact")
        .arg(dir.as_os_str())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("cltrap compact starts");
    std::thread::sleep(std::time::Duration::from_millis(30));
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        all_contents(&dir),
        before,
        "a killed compaction lost contents"
    );
    let first = cltrap_on("compact", &dir);
    assert!(first.success(), "{}", first.describe());
    assert!(segments(&dir).is_empty());
    // A crash after the store was written but before the segments were dropped: the spool
    // comes back; compacting again stores nothing twice and drops it.
    let packs = store_files(&dir, ".pack").len();
    for (p, b) in &saved {
        std::fs::write(p, b).expect("segment restored");
    }
    assert_eq!(all_contents(&dir), before);
    let again = cltrap_on("compact", &dir);
    assert!(again.success(), "{}", again.describe());
    assert!(
        again.stderr.contains(" 0 content(s)"),
        "{}",
        again.describe()
    );
    assert_eq!(
        store_files(&dir, ".pack").len(),
        packs,
        "packs written twice"
    );
    assert!(segments(&dir).is_empty());
    assert_eq!(all_contents(&dir), before);
    assert_replays_ok(&dir, launches);
}

#[test]
fn the_first_command_that_opens_a_spooled_capture_compacts_it_once_and_says_so() {
    let dir = spooled("implicit");
    let said = |o: &Outcome| {
        cltrap_lines(&o.stderr)
            .into_iter()
            .filter(|l| l.contains("compacted the spool"))
            .count()
    };
    let first = cltrap_on("list", &dir);
    assert!(first.success(), "{}", first.describe());
    assert_eq!(said(&first), 1, "{}", first.describe());
    assert!(segments(&dir).is_empty());
    let second = cltrap_on("list", &dir);
    assert_eq!(said(&second), 0, "{}", second.describe());
    assert_eq!(first.stdout, second.stdout, "the listing changed");
}

#[test]
fn past_a_tiny_spool_bound_the_application_waits_for_compaction_and_finishes() {
    let exe = fixture("budget");
    // Also with four spool lanes and launches enqueued without waiting: several lanes wait
    // for room at once, each sealing the others' segments for the compactor.
    for (label, lanes, args) in [
        ("bound", "auto", vec![ROUNDS]),
        ("bound-lanes", "4", vec!["12", "storm"]),
    ] {
        let native = run_native(&exe, &args).expect_success();
        let dir = fresh_capture_dir(label);
        let flags = ["--spool-max-mb", "1", "--spool-lanes", lanes];
        let (captured, stats) = run_captured_with_stats(&dir, &flags, &exe, &args);
        captured.assert_no_panic();
        assert_same_behaviour(&native, &captured);
        let spool = &stats["spool"];
        assert_eq!(spool["bound"].as_u64(), Some(1 << 20), "{stats}");
        assert!(
            spool["waits"].as_u64().unwrap_or(0) >= 1 && spool["wait_ns"].as_u64().unwrap_or(0) > 0,
            "{label}: the application never waited for compaction: {stats}\n{}",
            captured.describe()
        );
        // `cltrap run` compacted everything after the application exited.
        assert!(segments(&dir).is_empty(), "{}", captured.describe());
        assert!(
            captured.stderr.contains("compacted the spool"),
            "{}",
            captured.describe()
        );
        let launches = open_capture(&dir).launches.len();
        assert_replays_ok(&dir, launches);
    }
}

#[test]
fn a_child_forked_without_exec_does_not_keep_the_parent_waiting_for_room() {
    // The child (a forking server, Python's multiprocessing) lives, calling no OpenCL, until
    // the parent has finished all its rounds; it inherited the parent's open segment, whose
    // lock goes with the open file. Were the child still holding it, no compactor could take
    // that segment and the parent, past the tiny bound, would wait for it for ever (the
    // harness kills it after its timeout and the test fails).
    let exe = fixture("budget");
    let args = ["6", "fork"];
    let native = run_native(&exe, &args).expect_success();
    let dir = fresh_capture_dir("forked");
    let flags = ["--spool-max-mb", "1"];
    let (captured, stats) = run_captured_with_stats(&dir, &flags, &exe, &args);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    // Not rescued by the writer's stall check: the compactor took every segment.
    assert_waited_for_compaction(&captured, Some(&stats));
    assert!(segments(&dir).is_empty(), "{}", captured.describe());
    let launches = open_capture(&dir).launches.len();
    assert_eq!(launches, 8, "six rounds and two folds, all the parent's");
    assert_replays_ok(&dir, launches);
}

/// `cltrap ARGS` with the free space compaction leaves set past any disk's.
fn cltrap_short_of_space(args: &[&OsStr]) -> Outcome {
    let t = tools();
    run_with_env(
        &t.cltrap,
        args,
        &[
            ("CLTRAP_SHIM", t.shim.as_os_str()),
            ("CLTRAP_TRUST_BINARIES", OsStr::new("1")),
            ("CLTRAP_COMPACT_KEEP_FREE_MB", OsStr::new("1000000000")),
        ],
        None,
    )
}

#[test]
fn compaction_short_of_free_space_stops_says_so_and_leaves_a_readable_spool() {
    // What compaction writes is not bounded by what the spool holds (patches over large
    // contents), so it leaves free space on the capture's filesystem; here more than any disk
    // has, so it stores nothing.
    let dir = spooled("keep-free");
    let before = segments(&dir);
    assert!(!before.is_empty());
    let out = cltrap_short_of_space(&[OsStr::new("compact"), dir.as_os_str()]);
    out.assert_no_panic();
    assert_eq!(out.code, Some(2), "{}", out.describe());
    let line = cltrap_line(&out, "compacted the spool");
    assert!(
        line.contains("; stopped: ") && line.contains("CLTRAP_COMPACT_KEEP_FREE_MB"),
        "{line}"
    );
    assert_eq!(segments(&dir), before, "the spool is kept as it was");
    assert!(store_files(&dir, ".pack").is_empty(), "nothing was stored");
    // Read from the spool (the implicit compaction stops too, and says so).
    let launches = open_capture(&dir).launches.len();
    let replay = cltrap_short_of_space(&[OsStr::new("replay"), dir.as_os_str()]);
    assert!(replay.success(), "{}", replay.describe());
    assert_eq!(
        ok_lines(&replay.stdout_text()),
        launches,
        "{}",
        replay.describe()
    );
    assert!(
        replay.stderr.contains("; stopped: "),
        "{}",
        replay.describe()
    );
    // With room, compaction goes on.
    let again = cltrap_on("compact", &dir);
    assert!(again.success(), "{}", again.describe());
    assert!(segments(&dir).is_empty(), "{}", again.describe());
    assert_replays_ok(&dir, launches);
}

#[test]
fn an_application_past_its_spool_bound_does_not_wait_for_a_compactor_short_of_space() {
    // `cltrap run`'s compactor stops short of free space and lets go of the compactor lock,
    // so the application, past a tiny spool bound, goes on instead of waiting for it for
    // ever (the harness would kill it after its timeout and the test fail).
    let exe = fixture("budget");
    let native = run_native(&exe, &[ROUNDS]).expect_success();
    let dir = fresh_capture_dir("keep-free-run");
    let mut args: Vec<&OsStr> = ["run", "--spool-max-mb", "1", "--out"]
        .iter()
        .map(OsStr::new)
        .collect();
    args.extend([
        dir.as_os_str(),
        OsStr::new("--"),
        exe.as_os_str(),
        OsStr::new(ROUNDS),
    ]);
    let captured = cltrap_short_of_space(&args);
    captured.assert_no_panic();
    assert_eq!(captured.code, native.code, "{}", captured.describe());
    assert!(
        captured.stderr.contains("; stopped: "),
        "{}",
        captured.describe()
    );
    // Not rescued by the writer's stall check: the compactor let go of its lock.
    assert_waited_for_compaction(&captured, None);
    assert!(!segments(&dir).is_empty(), "{}", captured.describe());
    let launches = open_capture(&dir).launches.len();
    assert_eq!(launches, 8, "{}", captured.describe());
    assert_replays_ok(&dir, launches);
}

#[test]
fn an_application_past_its_spool_bound_stops_waiting_for_a_compactor_that_frees_nothing() {
    // A compactor that holds its lock and frees nothing (one on NFS, which cannot lock the
    // segments; here this test holding the lock) must not hang the application: past its
    // bound it waits for it a while, says so once, and goes on.
    let exe = fixture("budget");
    let native = run_native(&exe, &[ROUNDS]).expect_success();
    let dir = fresh_capture_dir("stalled");
    std::fs::create_dir_all(&*dir).expect("the capture folder");
    let held = spool::lock_compactor(&dir, cltrap_capture::writer_fs::Access::PRIVATE)
        .expect("the compactor lock");
    let bound = OsStr::new("1");
    let captured = run_preloaded(&dir, &[("CLTRAP_SPOOL_MAX_MB", bound)], &exe, &[ROUNDS]);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    let said = captured
        .stderr
        .lines()
        .filter(|l| l.contains("compactor showed no progress"))
        .count();
    assert_eq!(said, 1, "{}", captured.describe());
    drop(held);
    let launches = open_capture(&dir).launches.len();
    assert_eq!(launches, 8, "{}", captured.describe());
    assert_replays_ok(&dir, launches);
}

/// The spool's first segment and its records.
fn first_segment(dir: &Path) -> (PathBuf, spool::Scan) {
    let seg = segments(dir).into_iter().next().expect("a segment");
    let scan = spool::scan(&std::fs::File::open(&seg).expect("open")).expect("scan");
    assert!(!scan.records.is_empty());
    (seg, scan)
}

/// The last record of `scan` that holds a launch's pre-launch contents that no launch left:
/// what every replay reads from the capture (an output equal to its recorded digest is never
/// read back, and an in-order replay hands it on to the launch that reads it next).
fn input_record<'a>(dir: &Path, scan: &'a spool::Scan) -> &'a spool::Record {
    let capture = open_capture(dir);
    let (mut inputs, mut outputs) = (Vec::new(), Vec::new());
    for a in capture.launches.iter().flat_map(|l| l.args.iter()) {
        if let cltrap_capture::ArgRecord::Buffer { before, after, .. } = a {
            if let Content::Blob { hash, .. } = before {
                inputs.push(hash.clone());
            }
            if let Content::Blob { hash, .. } = after {
                outputs.push(hash.clone());
            }
        }
    }
    scan.records
        .iter()
        .rev()
        .find(|r| inputs.contains(&r.hash) && !outputs.contains(&r.hash))
        .expect("a spooled pre-launch content no launch left")
}

/// Replay and compaction of a damaged spool: neither panics, both say `expect`.
fn assert_clear_error(dir: &Path, expect: &str) {
    {
        let _held = hold_compaction(dir);
        let replay = cltrap_on("replay", dir);
        replay.assert_no_panic();
        let text = format!("{}{}", replay.stdout_text(), replay.stderr);
        assert!(
            text.contains(expect),
            "replay: expected {expect:?}\n{}",
            replay.describe()
        );
    }
    let compact = cltrap_on("compact", dir);
    compact.assert_no_panic();
    assert!(
        compact.stderr.contains(expect) || compact.code != Some(0),
        "compact: expected {expect:?}\n{}",
        compact.describe()
    );
}

#[test]
fn a_hostile_spool_gives_a_clear_error() {
    use std::os::unix::fs::FileExt;
    // Truncated: the last record cut in its middle.
    let dir = spooled("hostile-cut");
    let (seg, scan) = first_segment(&dir);
    let last = input_record(&dir, &scan);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .expect("open");
    f.set_len(last.offset + last.len / 2).expect("cut");
    drop(f);
    assert_clear_error(&dir, "cut off or forged");

    // A content that no longer matches its digest.
    let dir = spooled("hostile-hash");
    let (seg, scan) = first_segment(&dir);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .expect("open");
    let r = input_record(&dir, &scan);
    f.write_all_at(b"forged!", r.offset + 100).expect("forge");
    drop(f);
    assert_clear_error(&dir, "no longer match their digest");

    // A length far past the file.
    let dir = spooled("hostile-length");
    let (seg, scan) = first_segment(&dir);
    let last = input_record(&dir, &scan);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .expect("open");
    f.write_all_at(&(u64::MAX / 2).to_le_bytes(), last.offset - 8)
        .expect("forge");
    drop(f);
    assert_clear_error(&dir, "cut off or forged");

    // A segment that is a link elsewhere: refused, never followed.
    let dir = spooled("hostile-link");
    let (seg, _) = first_segment(&dir);
    let elsewhere = dir.parent().expect("parent").join("elsewhere.spool");
    std::fs::rename(&seg, &elsewhere).expect("move");
    std::os::unix::fs::symlink(&elsewhere, &seg).expect("link");
    assert_clear_error(&dir, "symbolic link");
    assert!(elsewhere.exists(), "the link's target was removed");
}

/// Rounds of the `slices` fixture: each rewrites 64 KiB of one 4 MiB buffer.
const SLICE_ROUNDS: u64 = 24;
/// Bytes of the `slices` fixture's buffer.
const SLICES_BUFFER: u64 = 4 << 20;

/// A capture of the `slices` fixture under a bare `LD_PRELOAD` (nobody compacts it), with
/// its `CLTRAP_STATS` counters.
fn sliced(label: &str) -> (TestDir, serde_json::Value) {
    let rounds = SLICE_ROUNDS.to_string();
    captured_with_stats(label, "slices", &[&rounds], &[])
}

/// A capture of fixture `exe` run with `args` under a bare `LD_PRELOAD` (nobody compacts it)
/// and the controls `env`, behaving as natively, with its `CLTRAP_STATS` counters.
fn captured_with_stats(
    label: &str,
    exe: &str,
    args: &[&str],
    env: &[(&str, &OsStr)],
) -> (TestDir, serde_json::Value) {
    let exe = fixture(exe);
    let dir = fresh_capture_dir(label);
    let native = run_native(&exe, args).expect_success();
    let stats = dir.with_extension("stats.json");
    let mut env = env.to_vec();
    env.push(("CLTRAP_STATS", stats.as_os_str()));
    let captured = run_preloaded(&dir, &env, &exe, args);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    let counters = std::fs::read_to_string(&stats)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    (dir, counters)
}

/// The derive threshold counts a spooled content at its whole size, not at the bytes of its
/// patch record: a buffer changed in a slice per launch starts deriving after as many versions
/// as one spooled whole (else compaction would rebuild every version the small patches kept).
#[test]
fn the_derive_threshold_counts_patched_versions_at_their_whole_size() {
    let exe = fixture("slices");
    let dir = fresh_capture_dir("slices-derive");
    let rounds = SLICE_ROUNDS.to_string();
    // 16 MB: four whole 4 MiB versions; the patches of all the rounds spool far less.
    let captured = run_preloaded(
        &dir,
        &[("CLTRAP_DERIVE_AFTER_MB", std::ffi::OsStr::new("16"))],
        &exe,
        &[&rounds],
    );
    captured.assert_no_panic();
    assert!(captured.success(), "{}", captured.describe());
    assert!(
        captured
            .stderr
            .contains("MB of contents (derive threshold 16 MB,"),
        "the capture never started deriving: {}",
        captured.describe()
    );
    let spooled: u64 = segments(&dir)
        .iter()
        .filter_map(|s| std::fs::metadata(s).ok())
        .map(|m| m.len())
        .sum();
    assert!(
        spooled < 16 << 20,
        "{spooled} bytes spooled: the test needs patches smaller than the threshold"
    );
}

/// The derive threshold counts the contents that launches still in flight will store: a
/// storm of launches that each rewrite a 1 MiB buffer, enqueued without waiting, spools about
/// the threshold's worth of whole versions, not every version the in-flight read cap lets
/// through before the first derived launch is written (48 of 48 before the threshold counted
/// them), and every launch stays replayable.
#[test]
fn the_derive_threshold_counts_the_contents_of_launches_in_flight() {
    let exe = fixture("budget");
    let dir = fresh_capture_dir("storm-derive");
    let args = ["48", "storm"];
    let native = run_native(&exe, &args).expect_success();
    let captured = run_preloaded(
        &dir,
        &[("CLTRAP_DERIVE_AFTER_MB", std::ffi::OsStr::new("4"))],
        &exe,
        &args,
    );
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    let versions = all_records(&dir).len();
    // Four 1 MiB versions reach the threshold. A launch planned while an earlier one is being
    // written may count that one's contents twice (stored, and still reserved) and derive
    // sooner, or add one more when planned at the same moment as the fourth: never dozens.
    assert!(
        (1..=6).contains(&versions),
        "{versions} versions spooled under a 4 MB derive threshold\n{}",
        captured.describe()
    );
    let list = cltrap_on("list", &dir).expect_success().stdout_text();
    assert!(
        list.contains("50 of 50 launch(es) can be replayed"),
        "{list}"
    );
    let replay = cltrap_on("replay", &dir).expect_success().stdout_text();
    assert!(
        replay.contains("50 matched, 0 mismatched, 0 skipped, 0 failed"),
        "{replay}"
    );
}

/// Every record of every segment of the spool of `dir`, with its segment.
fn all_records(dir: &Path) -> Vec<(PathBuf, spool::Record)> {
    let mut out = Vec::new();
    for seg in segments(dir) {
        let scan = spool::scan(&std::fs::File::open(&seg).expect("open")).expect("scan");
        out.extend(scan.records.into_iter().map(|r| (seg.clone(), r)));
    }
    out
}

#[test]
fn a_buffer_changed_in_a_slice_per_launch_spools_only_the_slices_and_replays_bit_exact() {
    let (dir, stats) = sliced("slices");
    let spool = &stats["spool"];
    let bytes = spool["bytes"].as_u64().unwrap_or(u64::MAX);
    // Whole versions would be 4 MiB per launch; the changed slices are 64 KiB each, plus
    // a whole version at the start.
    assert!(
        bytes < SLICES_BUFFER * SLICE_ROUNDS / 4,
        "{bytes} bytes spooled for {SLICE_ROUNDS} versions of a {SLICES_BUFFER}-byte buffer: {stats}"
    );
    assert!(
        spool["patches"].as_u64().unwrap_or(0) >= SLICE_ROUNDS / 2,
        "{stats}"
    );
    let records = all_records(&dir);
    assert!(
        records.iter().any(|(_, r)| r.patch.is_some()),
        "no patch record"
    );
    let launches = open_capture(&dir).launches.len();
    // Every content reads back (patch records rebuilt and checked against their digest).
    let before = all_contents(&dir);
    assert!(
        before
            .iter()
            .filter(|(_, b)| b.len() as u64 == SLICES_BUFFER)
            .count() as u64
            > SLICE_ROUNDS / 2,
        "too few versions of the buffer"
    );
    {
        let _held = hold_compaction(&dir);
        assert_replays_ok(&dir, launches);
    }
    let out = cltrap_on("compact", &dir);
    assert!(out.success(), "{}", out.describe());
    assert!(
        out.stderr.contains("patch record(s) rebuilt"),
        "{}",
        out.describe()
    );
    assert!(segments(&dir).is_empty(), "segments left after compaction");
    assert_eq!(all_contents(&dir), before, "contents changed by compaction");
    assert_replays_ok(&dir, launches);
}

/// Writes `bytes` over segment `seg` at offset `at` (a forged record).
fn forge(seg: &Path, at: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(seg)
        .expect("open");
    f.write_all_at(bytes, at).expect("forge");
}

/// The error reading every content of `dir` gives (through the library, as every command
/// reads them), and what `cltrap compact` says; neither panics. Both must say `expect`.
fn assert_patch_error(dir: &Path, expect: &str) {
    assert_spool_error(dir, expect, "the segment is kept");
}

/// [`assert_patch_error`], compaction saying `compacted` of the segment.
fn assert_spool_error(dir: &Path, expect: &str, compacted: &str) {
    {
        let _held = hold_compaction(dir);
        let cap = open_capture(dir);
        let mut errors = Vec::new();
        for l in &cap.launches {
            for a in &l.args {
                if let Some((before, after)) = contents(a) {
                    for c in [before, after] {
                        if let Err(e) = cap.content(c, "a content") {
                            errors.push(e.to_string());
                        }
                    }
                }
            }
        }
        assert!(
            errors.iter().any(|e| e.contains(expect)),
            "reading: expected {expect:?} in {errors:#?}"
        );
    }
    let compact = cltrap_on("compact", dir);
    compact.assert_no_panic();
    assert!(compact.code == Some(2), "compact: {}", compact.describe());
    assert!(
        compact.stderr.contains(compacted),
        "compact: {}",
        compact.describe()
    );
}

#[test]
fn hostile_patch_records_give_clear_errors() {
    // The header fields of a patch record, from the start of its region bytes.
    let base_at = |r: &spool::Record| {
        let table = 16 * r.patch.as_ref().expect("patch").ranges.len() as u64;
        r.offset - table - spool::PATCH_HEADER as u64 + 72
    };
    // The offset of its last range (the last entry of its table of ranges).
    let region_at = |r: &spool::Record| r.offset - 16;
    let patches = |dir: &Path| -> Vec<(PathBuf, spool::Record)> {
        all_records(dir)
            .into_iter()
            .filter(|(_, r)| r.patch.is_some())
            .collect()
    };

    // Its base is in neither the spool nor the store.
    let (dir, _) = sliced("patch-no-base");
    let (seg, r) = patches(&dir).pop().expect("a patch record");
    forge(&seg, base_at(&r), "ab".repeat(32).as_bytes());
    assert_patch_error(&dir, "neither spooled nor stored");

    // Its base is itself.
    let (dir, _) = sliced("patch-self");
    let (seg, r) = patches(&dir).pop().expect("a patch record");
    forge(&seg, base_at(&r), r.hash.as_bytes());
    assert_patch_error(&dir, "names itself as its base");

    // Two patch records, each the other's base.
    let (dir, _) = sliced("patch-cycle");
    let mut p = patches(&dir);
    let (seg_b, b) = p.pop().expect("a patch record");
    let (seg_a, a) = p.pop().expect("two patch records");
    forge(&seg_a, base_at(&a), b.hash.as_bytes());
    forge(&seg_b, base_at(&b), a.hash.as_bytes());
    assert_patch_error(&dir, "form a cycle");

    // Its region reaches past the content's end.
    let (dir, _) = sliced("patch-past-end");
    let (seg, r) = patches(&dir).pop().expect("a patch record");
    let patch = r.patch.as_ref().expect("patch");
    let (_, last) = *patch.ranges.last().expect("a range");
    forge(&seg, region_at(&r), &(patch.total - last / 2).to_le_bytes());
    assert_patch_error(&dir, "past its end");

    // Its region forged: the rebuilt content does not match its digest.
    let (dir, _) = sliced("patch-digest");
    let (seg, r) = patches(&dir).pop().expect("a patch record");
    forge(&seg, r.offset + 10, b"forged!");
    assert_patch_error(&dir, "no longer match their digest");
}

/// Forged part records: parts that disagree about their content's length, a part's bytes
/// changed, a part moved so that the parts leave a gap. Reading names what is wrong, and
/// compaction says why (exit status 2), never a panic: it keeps a damaged segment, and drops
/// parts that leave a gap as those of a writer that died while writing them.
#[test]
fn hostile_part_records_give_clear_errors() {
    // A part record's header ends with the content's length, the part's offset and length.
    let field = |r: &spool::Record, i: u64| r.offset - 24 + 8 * i;
    let cases: [(&str, &str, &str); 3] = [
        (
            "parts-length",
            "disagree about its length",
            "the segment is kept",
        ),
        (
            "parts-bytes",
            "no longer match their digest",
            "the segment is kept",
        ),
        ("parts-gap", "do not cover it", "dropped with the segment"),
    ];
    for (label, expect, compacted) in cases {
        let (dir, _) = with_lanes(label, "4", "gauss", &["1024"]);
        let parts: Vec<(PathBuf, spool::Record)> = all_records(&dir)
            .into_iter()
            .filter(|(_, r)| r.part.is_some_and(|p| p.at > 0 && p.at + r.len < p.total))
            .collect();
        let (seg, r) = parts.first().expect("a part in the middle of its content");
        let part = r.part.expect("a part");
        match label {
            "parts-length" => forge(seg, field(r, 0), &(part.total + 4096).to_le_bytes()),
            "parts-bytes" => forge(seg, r.offset + 100, b"forged!"),
            _ => forge(seg, field(r, 1), &(part.at + 4096).to_le_bytes()),
        }
        assert_spool_error(&dir, expect, compacted);
    }
}

/// The application's process only spools: cutting (FastCDC) and compressing (zstd) belong to
/// compaction in a `cltrap` process, and the shim is built without them (cltrap-capture's
/// `compact` feature), so none of that code can run, or cost memory, in an application.
/// Built together with the CLI (`cargo build --workspace` unifies features), the shim holds
/// them only if it calls them, which this test also catches.
#[test]
fn the_shim_library_contains_no_compressor_and_no_chunker() {
    let shim = &tools().shim;
    let out = std::process::Command::new("nm")
        .arg(shim)
        .output()
        .expect("nm (binutils) runs");
    assert!(out.status.success(), "nm {}: {out:?}", shim.display());
    let symbols = String::from_utf8_lossy(&out.stdout);
    // A listing that works: the shim's own entry points are in it.
    assert!(
        symbols.contains("clEnqueueNDRangeKernel"),
        "nm listed no symbols"
    );
    let found: Vec<&str> = symbols
        .lines()
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("zstd") || l.contains("fastcdc")
        })
        .take(5)
        .collect();
    assert!(
        found.is_empty(),
        "the shim links zstd or FastCDC: {found:?}"
    );
}

/// Where the spool cannot be opened (here a file stands where its folder goes), the
/// application still does no compression: large contents are stored whole, said once on
/// stderr, and the capture replays bit-exact.
#[test]
fn without_a_spool_large_contents_are_stored_whole_and_replay_bit_exact() {
    let exe = fixture("budget");
    let dir = fresh_capture_dir("no-spool");
    std::fs::create_dir_all(&*dir).expect("the capture folder");
    std::fs::write(dir.join(SPOOL_DIR), b"not a folder").expect("a file in the spool's place");
    let native = run_native(&exe, &[ROUNDS]).expect_success();
    let captured = run_preloaded(&dir, &[], &exe, &[ROUNDS]);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    let said = captured
        .stderr
        .matches("large contents are stored whole and uncompressed")
        .count();
    assert_eq!(said, 1, "{}", captured.describe());
    assert!(
        store_files(&dir, ".pack").is_empty(),
        "the application compressed"
    );
    assert!(
        store_files(&dir, ".chunks").is_empty(),
        "the application cut contents"
    );
    let whole = all_contents(&dir)
        .iter()
        .filter(|(_, b)| b.len() >= 1 << 20)
        .count();
    assert!(whole > 0, "no large content stored");
    assert_replays_ok(&dir, open_capture(&dir).launches.len());
}

/// A capture made under a bare `LD_PRELOAD` with `CLTRAP_SPOOL_LANES` = `lanes` (no spool
/// bound, so that a segment rotates only past 64 MB), and its `CLTRAP_STATS` counters.
/// Only the first 40 launches are recorded (Gaussian elimination makes a thousand).
fn with_lanes(label: &str, lanes: &str, exe: &str, args: &[&str]) -> (TestDir, serde_json::Value) {
    let env = [
        ("CLTRAP_SPOOL_LANES", OsStr::new(lanes)),
        ("CLTRAP_SPOOL_MAX_MB", OsStr::new("0")),
        ("CLTRAP_LAUNCHES", OsStr::new("0..40")),
    ];
    captured_with_stats(label, exe, args, &env)
}

/// Calls of one timed phase in `CLTRAP_STATS` counters.
fn phase_calls(stats: &serde_json::Value, phase: &str) -> u64 {
    stats["time"][phase]["calls"].as_u64().unwrap_or(0)
}

/// With four spool lanes, large new contents are written by the lanes, into a segment per
/// lane, while the writer goes on: Gaussian elimination's two 1 MiB buffers (each memory
/// object has a lane of its own, given in turn), a buffer changed in a slice per launch
/// (patch records after their base, on its lane), and its 4 MiB matrix (each new whole
/// content cut into parts written on four lanes at once, its next versions patches on it)
/// read back before and after compaction, and every launch replays bit-exact. Without lanes
/// the writer writes them all itself, into one segment.
#[test]
fn spool_lanes_write_large_contents_into_separate_segments_and_the_capture_replays_bit_exact() {
    let (alone, stats) = with_lanes("lanes-0", "0", "budget", &["24", "storm"]);
    assert_eq!(phase_calls(&stats, "lane_write"), 0, "{stats}");
    assert_eq!(segments(&alone).len(), 1, "{:?}", segments(&alone));
    for (label, exe, args) in [
        ("lanes-gauss", "gauss", vec!["512"]),
        ("lanes-slices", "slices", vec!["24"]),
        ("lanes-parts", "gauss", vec!["1024"]),
    ] {
        let (dir, stats) = with_lanes(label, "4", exe, &args);
        let records = all_records(&dir);
        assert_eq!(
            phase_calls(&stats, "lane_write") as usize,
            records.len(),
            "every large content written by a lane: {stats}"
        );
        let used: std::collections::BTreeSet<_> = records.iter().map(|(s, _)| s).collect();
        if label == "lanes-parts" {
            // Every part of a content in a segment of its own, and patches on such contents.
            let mut parts: std::collections::BTreeMap<&str, Vec<&PathBuf>> = Default::default();
            for (seg, r) in records.iter().filter(|(_, r)| r.part.is_some()) {
                parts.entry(r.hash.as_str()).or_default().push(seg);
            }
            assert!(!parts.is_empty(), "no part record: {stats}");
            for (hash, segs) in &parts {
                let distinct: std::collections::BTreeSet<_> = segs.iter().collect();
                assert!(
                    segs.len() == 4 && distinct.len() == 4,
                    "content {hash} in {} parts in {} segments",
                    segs.len(),
                    distinct.len()
                );
            }
            assert_eq!(
                stats["spool"]["parts"].as_u64(),
                Some(4 * parts.len() as u64),
                "{stats}"
            );
            assert!(
                records.iter().any(|(_, r)| r
                    .patch
                    .as_ref()
                    .is_some_and(|p| parts.contains_key(p.base.as_str()))),
                "no patch on a content in parts"
            );
        } else if label == "lanes-gauss" {
            assert!(
                used.len() >= 2,
                "{label}: one segment for {} records",
                records.len()
            );
        } else {
            assert!(
                records.iter().any(|(_, r)| r.patch.is_some()),
                "no patch record"
            );
        }
        replays_before_and_after_compaction(&dir);
    }
}

/// Contents read back from device-side snapshots (digests on the device, forced on PoCL's
/// CPU device) are new: with four lanes a 4 MiB matrix is copied as parts while it is hashed,
/// each part's digest written after its bytes. Every part record names its content, the
/// parts of each cover it, and the capture reads back and replays bit-exact before and after
/// compaction.
#[test]
fn new_contents_are_copied_as_parts_while_they_are_hashed_and_replay_bit_exact() {
    let env = [
        ("CLTRAP_SPOOL_LANES", OsStr::new("4")),
        ("CLTRAP_SPOOL_MAX_MB", OsStr::new("0")),
        ("CLTRAP_LAUNCHES", OsStr::new("0..40")),
        ("CLTRAP_DEVICE_DIGEST", OsStr::new("on")),
    ];
    let (dir, stats) = captured_with_stats("parts-hashed", "gauss", &["1024"], &env);
    assert!(
        stats["copied_while_hashed"].as_u64().unwrap_or(0) >= 1,
        "no content copied while hashed: {stats}"
    );
    let mut parts: std::collections::BTreeMap<String, Vec<(u64, u64)>> = Default::default();
    for (_, r) in all_records(&dir) {
        if let Some(p) = r.part {
            parts.entry(r.hash.clone()).or_default().push((p.at, r.len));
            assert_eq!(p.total, 4 << 20);
        }
    }
    assert!(!parts.is_empty(), "no part record: {stats}");
    for (hash, mut ranges) in parts {
        ranges.sort();
        let mut end = 0;
        for (at, len) in ranges {
            assert_eq!(at, end, "content {hash}: a gap or an overlap");
            end += len;
        }
        assert_eq!(end, 4 << 20, "content {hash}: parts do not cover it");
    }
    replays_before_and_after_compaction(&dir);
}

/// A spool write that fails (here: past the file size limit, `EFBIG`) stops the capture,
/// said once on stderr, and the application carries on unchanged; every launch record that
/// was written names only contents that read back, and replays bit-exact. With spool lanes
/// the failure happens on a lane's thread, and the records of the launches waiting for it are
/// not written. (`SIGXFSZ` is ignored, as an application that writes large files may do, so
/// the limit fails the write instead of killing the process.)
#[test]
fn a_failed_spool_write_stops_the_capture_once_and_every_record_written_reads_back() {
    let exe = fixture("budget");
    // A `clFinish` after each launch: the launches before the failure are written.
    let args = ["48"];
    let native = run_native(&exe, &args).expect_success();
    // The launch log's journal takes 4 MiB; a spool segment holds four 1 MiB records.
    let limited = format!(
        "trap '' XFSZ; exec prlimit --fsize={} \"$0\" \"$@\"",
        5 << 20
    );
    for lanes in ["0", "4"] {
        let dir = fresh_capture_dir(&format!("spool-efbig-{lanes}"));
        let mut argv = vec!["-c", limited.as_str(), exe.to_str().expect("a path")];
        argv.extend(args);
        let captured = run_preloaded(
            &dir,
            &[("CLTRAP_SPOOL_LANES", OsStr::new(lanes))],
            "sh",
            &argv,
        );
        captured.assert_no_panic();
        assert_same_behaviour(&native, &captured);
        assert_eq!(
            captured
                .stderr
                .matches("capture stopped, the application continues unchanged")
                .count(),
            1,
            "lanes {lanes}: {}",
            captured.describe()
        );
        let launches = open_capture(&dir).launches.len();
        assert!(
            (1..50).contains(&launches),
            "lanes {lanes}: {launches} launches recorded"
        );
        let contents = all_contents(&dir);
        assert!(
            contents.iter().any(|(_, b)| b.len() >= 1 << 20),
            "lanes {lanes}: no large content recorded"
        );
        assert_replays_ok(&dir, launches);
    }
}

/// `cltrap run`'s background compactor (its thread `cltrap-compact`) runs at a low CPU
/// priority, nice 10, beside the application, so it takes mostly the cores the application
/// leaves idle.
#[test]
fn the_background_compactor_runs_at_a_low_cpu_priority() {
    let dir = fresh_capture_dir("nice");
    let mut child = std::process::Command::new(&tools().cltrap)
        .args(["run", "--buffers", "full", "--out"])
        .arg(dir.as_os_str())
        .args(["--", "sleep", "3"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("cltrap run starts");
    let tasks = std::path::PathBuf::from(format!("/proc/{}/task", child.id()));
    // The thread starts before the application does, and lowers its priority first thing;
    // looked at until it has, or `cltrap run` ends.
    let mut nice = None;
    while nice != Some(10) && child.try_wait().expect("cltrap run").is_none() {
        for task in std::fs::read_dir(&tasks).into_iter().flatten().flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim() != "cltrap-compact" {
                continue;
            }
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
            // Fields after the command name's closing parenthesis start at field 3 (state);
            // field 19 is the nice value.
            nice = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(16))
                .and_then(|n| n.parse::<i32>().ok());
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let status = child.wait().expect("cltrap run ends");
    assert!(status.success(), "cltrap run: {status}");
    assert_eq!(nice, Some(10), "the background compactor's nice value");
}

/// A buffer too large to keep whole as its last version (264 MiB, over the 256 MB of
/// versions the shim keeps) changed in a slice per launch: its versions are spooled as patches
/// over the 64 KiB leaves that changed, not whole (clpeak's `--global-bandwidth` spooled each
/// new version of its 2 GiB output whole), and every launch replays bit-exact.
#[test]
fn a_buffer_too_large_to_keep_is_spooled_as_patches_over_the_leaves_that_changed() {
    const ROUNDS: u64 = 6;
    const MIB: u64 = 264;
    let big = OsStr::new("65536");
    let (dir, stats) = captured_with_stats(
        "slices-large",
        "slices",
        &[&ROUNDS.to_string(), &MIB.to_string()],
        // Every version stored: no derived inputs past a threshold.
        &[("CLTRAP_DERIVE_AFTER_MB", big), ("CLTRAP_MAX_MB", big)],
    );
    let spool = &stats["spool"];
    let bytes = spool["bytes"].as_u64().unwrap_or(u64::MAX);
    // The first version whole, then one 64 KiB patch per launch.
    assert!(
        bytes < (MIB << 20) + (ROUNDS << 20),
        "{bytes} bytes spooled for {ROUNDS} launches over a {MIB} MiB buffer: {stats}"
    );
    assert!(spool["patches"].as_u64().unwrap_or(0) >= ROUNDS, "{stats}");
    let launches = open_capture(&dir).launches.len();
    assert_eq!(launches as u64, ROUNDS);
    assert_replays_ok(&dir, launches);
}
