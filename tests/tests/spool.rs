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
    for d in std::fs::read_dir(dir.join("blobs")).into_iter().flatten().flatten() {
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
    assert!(store_files(&dir, ".pack").is_empty(), "{:?}", store_files(&dir, ".pack"));
    assert!(store_files(&dir, ".chunks").is_empty());
    let launches = open_capture(&dir).launches.len();
    let before = all_contents(&dir);
    assert!(before.iter().any(|(_, b)| b.len() >= 1 << 20), "no large content");
    {
        let _held = hold_compaction(&dir);
        assert_replays_ok(&dir, launches);
        assert!(!segments(&dir).is_empty(), "compacted although a compactor held the lock");
    }
    let out = cltrap_on("compact", &dir);
    assert!(out.success(), "{}", out.describe());
    assert!(segments(&dir).is_empty(), "segments left after compaction");
    assert!(!store_files(&dir, ".pack").is_empty(), "no pack written");
    assert_eq!(all_contents(&dir), before, "contents changed by compaction");
    assert_replays_ok(&dir, launches);
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
    assert_eq!(all_contents(&dir), before, "a killed compaction lost contents");
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
    assert!(again.stderr.contains(" 0 content(s)"), "{}", again.describe());
    assert_eq!(store_files(&dir, ".pack").len(), packs, "packs written twice");
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
    let native = run_native(&exe, &[ROUNDS]).expect_success();
    let dir = fresh_capture_dir("bound");
    let (captured, stats) =
        run_captured_with_stats(&dir, &["--spool-max-mb", "1"], &exe, &[ROUNDS]);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    let spool = &stats["spool"];
    assert_eq!(spool["bound"].as_u64(), Some(1 << 20), "{stats}");
    assert!(
        spool["waits"].as_u64().unwrap_or(0) >= 1 && spool["wait_ns"].as_u64().unwrap_or(0) > 0,
        "the application never waited for compaction: {stats}\n{}",
        captured.describe()
    );
    // `cltrap run` compacted everything after the application exited.
    assert!(segments(&dir).is_empty(), "{}", captured.describe());
    assert!(captured.stderr.contains("compacted the spool"), "{}", captured.describe());
    let launches = open_capture(&dir).launches.len();
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
        assert!(text.contains(expect), "replay: expected {expect:?}\n{}", replay.describe());
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
    let f = std::fs::OpenOptions::new().write(true).open(&seg).expect("open");
    f.set_len(last.offset + last.len / 2).expect("cut");
    drop(f);
    assert_clear_error(&dir, "cut off or forged");

    // A content that no longer matches its digest.
    let dir = spooled("hostile-hash");
    let (seg, scan) = first_segment(&dir);
    let f = std::fs::OpenOptions::new().write(true).open(&seg).expect("open");
    let r = input_record(&dir, &scan);
    f.write_all_at(b"forged!", r.offset + 100).expect("forge");
    drop(f);
    assert_clear_error(&dir, "no longer match their digest");

    // A length far past the file.
    let dir = spooled("hostile-length");
    let (seg, scan) = first_segment(&dir);
    let last = input_record(&dir, &scan);
    let f = std::fs::OpenOptions::new().write(true).open(&seg).expect("open");
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
