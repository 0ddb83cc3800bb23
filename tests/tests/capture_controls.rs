//! The capture controls select exactly the launches and the buffer detail they promise, and
//! identical contents are stored once.

use cltrap_capture::replayable::{ReplayIndex, Replayability};
use cltrap_capture::Content;
use cltrap_e2e::*;

/// The `sequence` fixture enqueues fill, accumulate, scale four times: enqueues 0..11.
fn capture_sequence(label: &str, flags: &[&str]) -> (TestDir, cltrap_capture::Capture) {
    let exe = fixture("sequence");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let dir = fresh_capture_dir(label);
    let captured = run_captured(&dir, flags, &exe, &[] as &[&str]);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    let cap = open_capture(&dir);
    (dir, cap)
}

#[test]
fn kernel_name_globs_keep_only_matching_kernels() {
    let (dir, cap) = capture_sequence("kernels", &["--kernels", "fill,sc*"]);
    assert_eq!(
        kernel_sequence(&cap),
        ["fill", "scale", "fill", "scale", "fill", "scale", "fill", "scale"]
    );
    let seqs: Vec<u64> = cap.launches.iter().map(|l| l.seq).collect();
    assert_eq!(
        seqs,
        [0, 2, 3, 5, 6, 8, 9, 11],
        "seq counts every enqueue, filtered or not"
    );
    assert_replays_ok(&dir, 8);
}

#[test]
fn a_launch_window_keeps_only_enqueues_inside_it() {
    let (dir, cap) = capture_sequence("window", &["--launches", "3..7"]);
    assert_eq!(
        kernel_sequence(&cap),
        ["fill", "accumulate", "scale", "fill"]
    );
    let seqs: Vec<u64> = cap.launches.iter().map(|l| l.seq).collect();
    assert_eq!(seqs, [3, 4, 5, 6]);
    let ids: Vec<u64> = cap.launches.iter().map(|l| l.id).collect();
    assert_eq!(ids, [0, 1, 2, 3], "ids number the captured launches");
    assert_replays_ok(&dir, 4);
}

#[test]
fn per_kernel_limit_keeps_the_first_n_of_each_kernel() {
    let (dir, cap) = capture_sequence("per-kernel", &["--per-kernel", "2"]);
    assert_eq!(
        kernel_sequence(&cap),
        ["fill", "accumulate", "scale", "fill", "accumulate", "scale"]
    );
    let fills: Vec<i32> = launches_of(&cap, "fill")
        .iter()
        .map(|l| scalar_i32(&l.args[1]).expect("fill's value argument"))
        .collect();
    assert_eq!(fills, [1, 11], "the first two fills (v = 1, 11)");
    assert_replays_ok(&dir, 6);
}

#[test]
fn hash_mode_records_digests_only_and_replay_compares_them() {
    let (dir, cap) = capture_sequence("hash", &["--buffers", "hash"]);
    assert_eq!(cap.launches.len(), 12);
    assert_eq!(cap.manifest.buffer_mode, "hash");
    for l in &cap.launches {
        for a in &l.args {
            if let Some((before, after)) = contents(a) {
                assert!(
                    matches!(after, Content::Digest { .. }),
                    "launch {}: after = {after:?}",
                    l.id
                );
                assert!(
                    !matches!(before, Content::Blob { .. }),
                    "launch {}: before = {before:?}",
                    l.id
                );
            }
        }
    }
    // No buffer contents on disk: everything left is sources and small records.
    let blobs = dir_size(&dir.join("blobs"));
    assert!(blobs < 64 * 1024, "hash mode stored {blobs} bytes of blobs");
    // `fill`'s only buffer is cleared before each launch: an all-zero input is restorable
    // from its digest, and its output is checked against the recorded after-digest.
    let fills: Vec<u64> = launches_of(&cap, "fill").iter().map(|l| l.id).collect();
    assert_replay_ids_ok(&dir, &fills);
}

#[test]
fn none_mode_reads_no_buffers_but_still_lists_every_launch() {
    let (dir, cap) = capture_sequence("none", &["--buffers", "none"]);
    assert_eq!(cap.launches.len(), 12);
    for l in &cap.launches {
        for a in &l.args {
            if let Some((before, after)) = contents(a) {
                assert!(matches!(before, Content::Missing { .. }), "{before:?}");
                assert!(matches!(after, Content::Missing { .. }), "{after:?}");
            }
        }
    }
    assert_list_shows(&dir, &cap);
    // Replay cannot check anything here; it must say so clearly rather than claim `ok`.
    let out = cltrap(&[std::ffi::OsStr::new("replay"), dir.as_os_str()]);
    out.assert_no_panic();
    assert_eq!(
        ok_lines(&out.stdout_text()),
        0,
        "nothing was recorded, nothing can be ok\n{}",
        out.describe()
    );
}

#[test]
fn a_hundred_launches_on_one_megabyte_store_it_about_once() {
    let (dir, cap) = round_trip("dedup", &[], &[]);
    assert_eq!(cap.launches.len(), 100);
    let blobs = dir_size(&dir.join("blobs"));
    let mib = 1u64 << 20;
    // Stored once, compressed (its words are a multiplicative hash: zstd saves about 20%).
    assert!(
        blobs >= mib / 2 && blobs < mib + mib / 2,
        "100 launches on one unchanged 1 MiB buffer stored {blobs} bytes of blobs (expected about 1 MiB, once)"
    );
}

#[test]
fn past_the_disk_budget_every_launch_stays_replayable_and_list_marks_derived_ones() {
    let exe = fixture("budget");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let dir = fresh_capture_dir("budget");
    // 24 launches making 1 MiB of new incompressible contents each, then a second kernel.
    let captured = run_captured(&dir, &["--max-mb", "4"], &exe, &[] as &[&str]);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    let said: Vec<&str> = cltrap_lines(&captured.stderr)
        .into_iter()
        .filter(|l| l.contains("CLTRAP_MAX_MB"))
        .collect();
    assert_eq!(
        said.len(),
        1,
        "the budget is said once\n{}",
        captured.describe()
    );
    let cap = open_capture(&dir);
    assert_eq!(cap.launches.len(), 26);
    // Past half the budget each launch's input is what the launch before left: derived, not
    // stored; every launch stays replayable, and most need their chain re-executed.
    let index = ReplayIndex::of(&cap.launches);
    let derived: Vec<u64> = cap
        .launches
        .iter()
        .filter(|l| matches!(index.get(l.id), Some(Replayability::Derived { .. })))
        .map(|l| l.id)
        .collect();
    for l in &cap.launches {
        let s = index.get(l.id);
        assert!(s.is_some_and(|s| s.replayable()), "launch {}: {s:?}", l.id);
    }
    assert!(
        derived.len() >= 16,
        "only {derived:?} have derived inputs: the budget did not bite"
    );
    // The budget held: the derived launches stored no contents of their own.
    let blobs = dir_size(&dir.join("blobs"));
    assert!(
        blobs <= 6 << 20,
        "{blobs} bytes of blobs under a 4 MB budget"
    );

    // `list` marks the derived launches and none as blocked.
    let list = assert_list_shows(&dir, &cap).stdout_text();
    for l in &cap.launches {
        let line = list
            .lines()
            .find(|line| line.split_whitespace().next() == Some(&l.id.to_string()))
            .unwrap_or_else(|| panic!("launch {} not listed\n{list}", l.id));
        assert!(!line.contains("(!)"), "{line}");
        assert_eq!(line.contains("(d)"), derived.contains(&l.id), "{line}");
    }
    assert!(
        list.contains("26 of 26 launch(es) can be replayed"),
        "{list}"
    );
    let show = cltrap(&[
        std::ffi::OsStr::new("show"),
        dir.as_os_str(),
        std::ffi::OsStr::new(&derived[derived.len() - 1].to_string()),
    ]);
    assert!(
        show.stdout_text()
            .contains("replayable: yes, with derived inputs")
            && show
                .stdout_text()
                .contains("re-created by re-executing launch"),
        "{}",
        show.describe()
    );
    // Every launch replays ok.
    assert_replays_ok(&dir, 26);
}

/// `--at-finish hand`: an application that calls `clFinish` after every launch (Gaussian
/// elimination, 126 launches) behaves as natively; its `clFinish` calls write no launch
/// themselves but hand them to the writer thread, which writes every one: all of them in the
/// capture, all replayable and matched. By default the `clFinish` calls write them.
#[test]
fn launches_handed_over_at_clfinish_are_all_written_and_replay_ok() {
    let counters = |label: &str, flags: &[&str]| {
        let stats = fresh_dir("stats", label).join("stats.json");
        let mut all = flags.to_vec();
        let path = stats.to_string_lossy().into_owned();
        all.extend(["--stats", path.as_str()]);
        let (dir, cap) = round_trip("gauss", &[], &all);
        let text = std::fs::read_to_string(&stats).expect("the shim wrote its counters");
        let v: serde_json::Value = serde_json::from_str(&text).expect("counters are JSON");
        let n = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {text}"));
        (dir, cap, n("finish_written"), n("finish_handed"))
    };
    let (_dir, cap, written, handed) = counters("hand", &["--at-finish", "hand"]);
    assert_eq!(cap.launches.len(), 126, "{:?}", kernel_sequence(&cap));
    let seqs: Vec<u64> = cap.launches.iter().map(|l| l.seq).collect();
    assert_eq!(seqs, (0..126).collect::<Vec<_>>(), "every launch, once");
    assert_full_contents(&cap);
    assert_eq!(
        written, 0,
        "a clFinish wrote launches under --at-finish hand"
    );
    assert!(handed > 0, "no launch was handed over at a clFinish");
    let (_dir, cap, written, handed) = counters("write", &[]);
    assert_eq!(cap.launches.len(), 126);
    assert_eq!(handed, 0);
    assert!(
        written > 0,
        "no launch was written at a clFinish by default"
    );
}
