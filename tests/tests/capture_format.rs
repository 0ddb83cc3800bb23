//! The capture format on real captures: a version-1 capture and a version-3 capture (chunks in
//! files of their own) made by earlier cltraps still list, show and replay, and a writer
//! continuing the latter upgrades it; large contents are stored in shared compressed chunks,
//! packed; the compact launch log reads back to the same records, also when cut mid-record.

use cltrap_e2e::*;
use std::ffi::OsStr;

/// `tests/fixtures/capture-v1`: the bundled demo app captured by the build before format 2
/// (whole blobs, one whole JSON record per line), copied so the test may write next to it.
fn old_capture() -> TestDir {
    bundled_capture("v1")
}

/// A capture of `tests/fixtures/capture-<version>`, copied so the test may write to it.
fn bundled_capture(version: &str) -> TestDir {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(format!("capture-{version}"));
    let dir = fresh_capture_dir(version);
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

/// Files under `dir/blobs` whose names end with `suffix`.
fn blob_files(dir: &std::path::Path, suffix: &str) -> usize {
    std::fs::read_dir(dir.join("blobs"))
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .filter(|f| f.file_name().to_string_lossy().ends_with(suffix))
        .count()
}

/// `tests/fixtures/capture-v3`: the bundled demo app captured by the build before format 4
/// (`e219c7b`: each compressed chunk a file of its own, indexes `cltrap-chunks 1`).
#[test]
fn a_version_3_capture_replays_and_a_writer_continuing_it_upgrades_it_to_packs() {
    let dir = bundled_capture("v3");
    let cap = open_capture(&dir);
    assert_eq!(cap.manifest.version, 3);
    assert_eq!(
        kernel_sequence(&cap),
        ["vec_add", "reduce_sum", "reduce_sum", "blur3x3"]
    );
    assert!(
        blob_files(&dir, ".chunk") >= 5,
        "the fixture stores chunk files"
    );
    assert_eq!(blob_files(&dir, ".pack"), 0);
    assert_list_shows(&dir, &cap);
    assert_replays_ok(&dir, 4);
    // This build continues it: the manifest becomes the current version, the new contents go into
    // packs, and the old and new launches all replay.
    let exe = fixture("large");
    let none: [&str; 0] = [];
    let native = run_native(&exe, &none).expect_success();
    let captured = run_captured(&dir, &none, &exe, &none);
    assert_same_behaviour(&native, &captured);
    let cap = open_capture(&dir);
    assert_eq!(cap.manifest.version, cltrap_capture::FORMAT_VERSION);
    assert!(cap.launches.len() > 4, "{} launches", cap.launches.len());
    assert!(
        blob_files(&dir, ".pack") >= 1,
        "the new contents are packed"
    );
    assert_replays_ok(&dir, cap.launches.len());
}

#[test]
fn contents_rewritten_at_every_launch_are_stored_in_chunks_and_replay() {
    // `budget` rewrites a whole 1 MiB buffer per launch with incompressible words: every
    // version is new, stored as chunks, and must read back verified for the replay.
    let (dir, cap) = round_trip("budget", &[], &[]);
    let chunked = blob_files(&dir, ".chunks");
    assert!(chunked >= 24, "{chunked} chunked contents");
    // New chunks go into packs (compaction gathers several contents' into one), not a file
    // per chunk: at most a pack per content.
    let packs = blob_files(&dir, ".pack");
    assert!((1..=26).contains(&packs), "{packs} packs");
    assert_eq!(blob_files(&dir, ".chunk"), 0);
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
