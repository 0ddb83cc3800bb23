//! The capture format on real captures: a version-1 capture made by an earlier cltrap still
//! lists, shows and replays; large contents are stored in shared compressed chunks; the
//! compact launch log reads back to the same records, also when cut mid-record.

use cltrap_e2e::*;
use std::ffi::OsStr;

/// `tests/fixtures/capture-v1`: the bundled demo app captured by the build before format 2
/// (whole blobs, one whole JSON record per line), copied so the test may write next to it.
fn old_capture() -> TestDir {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/capture-v1");
    let dir = fresh_capture_dir("v1");
    let copy = std::process::Command::new("cp")
        .arg("-r")
        .arg(&src)
        .arg(dir.as_os_str())
        .status()
        .expect("cp runs");
    assert!(copy.success());
    dir
}

#[test]
fn a_version_1_capture_lists_shows_and_replays() {
    let dir = old_capture();
    let cap = open_capture(&dir);
    assert_eq!(cap.manifest.version, 1);
    assert_eq!(
        kernel_sequence(&cap),
        ["vec_add", "reduce_sum", "reduce_sum", "blur3x3"]
    );
    assert_list_shows(&dir, &cap);
    let show = cltrap(&[OsStr::new("show"), dir.as_os_str(), OsStr::new("3")]);
    assert!(show.success(), "{}", show.describe());
    assert!(
        show.stdout_text().contains("replayable: yes"),
        "{}",
        show.describe()
    );
    assert_replays_ok(&dir, 4);
}

#[test]
fn contents_rewritten_at_every_launch_are_stored_in_chunks_and_replay() {
    // `budget` rewrites a whole 1 MiB buffer per launch with incompressible words: every
    // version is new, stored as chunks, and must read back verified for the replay.
    let (dir, cap) = round_trip("budget", &[], &[]);
    let chunked = std::fs::read_dir(dir.join("blobs"))
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .filter(|f| f.file_name().to_string_lossy().ends_with(".chunks"))
        .count();
    assert!(chunked >= 24, "{chunked} chunked contents");
    assert_eq!(cap.launches.len(), 26);
}

#[test]
fn the_launch_log_of_a_real_capture_is_compact_and_a_cut_keeps_every_whole_launch() {
    let (dir, cap) = round_trip("dedup", &[], &[]);
    let log = dir.join(cltrap_capture::LAUNCHES_FILE);
    let bytes = std::fs::read(&log).unwrap();
    let whole: usize = cap
        .launches
        .iter()
        .map(|l| serde_json::to_vec(l).unwrap().len() + 1)
        .sum();
    assert!(
        bytes.len() * 4 <= whole,
        "the log takes {} bytes; whole records would take {whole}",
        bytes.len()
    );
    // Cut in the middle of the last line: every launch before it is still there.
    let last = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap()
        + 1;
    std::fs::write(&log, &bytes[..last + (bytes.len() - last) / 2]).unwrap();
    let cut = open_capture(&dir);
    assert!(cut.truncated);
    assert_eq!(cut.launches.len(), cap.launches.len() - 1);
    assert_replays_ok(&dir, cap.launches.len() - 1);
}
