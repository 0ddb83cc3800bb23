//! The capture controls select exactly the launches and the buffer detail they promise, and
//! identical contents are stored once.

use cltrap_capture::replayable::{ReplayIndex, Replayability};
use cltrap_capture::Content;
use cltrap_e2e::*;
use std::ffi::OsStr;

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
fn a_hash_mode_input_no_launch_leaves_is_skipped_saying_it_cannot_be_re_created() {
    // `dedup` uploads its buffer from the host: in hash mode only its digest is recorded,
    // and no launch before the first one leaves it.
    let exe = fixture("dedup");
    let dir = fresh_capture_dir("hash-host-input");
    run_captured(&dir, &["--buffers", "hash"], &exe, &[] as &[&str]).expect_success();
    let out = cltrap(&[OsStr::new("replay"), dir.as_os_str(), OsStr::new("0")]);
    let text = out.stdout_text();
    assert!(
        text.contains("launch 0 ")
            && text.contains("skipped:")
            && text.contains("only their digest was captured")
            && text.contains("no launch before this one in the capture leaves them")
            && !text.contains("this command does not"),
        "{}",
        out.describe()
    );
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

/// Permission bits of `path` (the link itself, never what it names).
fn mode_of(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// Every file and folder below `dir` (not `dir` itself).
fn entries(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).expect("readable").flatten() {
        let p = e.path();
        if p.is_dir() {
            all.extend(entries(&p));
        }
        all.push(p);
    }
    all
}

/// This process's umask (what `--share` leaves to decide), from `/proc/self/status`.
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        .expect("a Umask line")
}

/// A capture holds the application's data: only its user may read it (files 0600, folders
/// 0700), whatever the umask, unless `--share` asks for the umask's usual modes.
#[test]
fn a_capture_is_readable_by_its_user_only_unless_shared() {
    let (dir, cap) = capture_sequence("private", &[]);
    assert!(!cap.launches.is_empty());
    assert_eq!(mode_of(&dir), 0o700);
    let all = entries(&dir);
    assert!(all.len() > 5, "{all:?}");
    for p in &all {
        let want = if p.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode_of(p), want, "{}", p.display());
    }
    let (dir, _) = capture_sequence("shared", &["--share"]);
    let mask = umask();
    assert_eq!(mode_of(&dir), 0o755 & !mask);
    for p in entries(&dir) {
        let want = if p.is_dir() { 0o755 } else { 0o644 } & !mask;
        assert_eq!(mode_of(&p), want, "{}", p.display());
    }
}

/// `cltrap run --coverage` writes its report into the capture's `coverage/` folder, which
/// follows the capture's rule: only its user may enter it (0700) unless `--share`.
#[test]
fn the_live_coverage_report_is_as_private_as_its_capture() {
    let (dir, _) = capture_sequence("live-coverage-private", &["--coverage"]);
    let report = dir.join("coverage");
    assert!(
        report.join("coverage.json").is_file(),
        "{}",
        report.display()
    );
    assert_eq!(mode_of(&report), 0o700);
    let (dir, _) = capture_sequence("live-coverage-shared", &["--coverage", "--share"]);
    let report = dir.join("coverage");
    assert!(
        report.join("coverage.json").is_file(),
        "{}",
        report.display()
    );
    assert_eq!(mode_of(&report), 0o755 & !umask());
}

/// Runs the `ndrange` fixture preloaded on a capture folder someone prepared, checks that
/// the application behaves as natively and that the shim said exactly one line about it.
fn run_on_prepared(dir: &std::path::Path) -> Outcome {
    let exe = fixture("ndrange");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let pre = run_preloaded(dir, &[], &exe, &[] as &[&str]);
    pre.assert_no_panic();
    assert_same_behaviour(&native, &pre);
    assert_eq!(cltrap_lines(&pre.stderr).len(), 1, "{}", pre.describe());
    pre
}

/// A capture folder prepared with links (`launches.jsonl`, `ids` to a file of the victim's,
/// `blobs` to a folder elsewhere): the shim follows none, refuses the capture with one line,
/// and the application runs on; nothing is written through the links.
#[test]
fn links_planted_in_a_capture_folder_are_never_followed() {
    let base = fresh_dir("caps", "planted-links");
    let victim = base.join("victim.txt");
    std::fs::write(&victim, "precious\n").expect("victim");
    for name in ["launches.jsonl", "ids", ".writers.lock"] {
        let dir = base.join(format!("cap-{}", name.trim_start_matches('.')));
        std::fs::create_dir(&dir).expect("dir");
        std::os::unix::fs::symlink(&victim, dir.join(name)).expect("link");
        let pre = run_on_prepared(&dir);
        assert!(pre.stderr.contains("symbolic link"), "{}", pre.describe());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    }
    let dir = base.join("cap-blobs");
    let elsewhere = base.join("elsewhere");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::create_dir_all(&elsewhere).expect("dir");
    std::os::unix::fs::symlink(&elsewhere, dir.join("blobs")).expect("link");
    run_on_prepared(&dir);
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "something was written through the blobs link"
    );
}

/// A FIFO as the launch log hung the application under the shim (a blocking open): it is
/// refused at once, and the application runs as natively.
#[test]
fn a_fifo_in_a_capture_folder_does_not_hang_the_application() {
    let base = fresh_dir("caps", "fifo");
    for name in ["launches.jsonl", "manifest.json"] {
        let dir = base.join(format!("cap-{name}"));
        std::fs::create_dir(&dir).expect("dir");
        let path = dir.join(name);
        let status = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .expect("mkfifo runs");
        assert!(status.success());
        let pre = run_on_prepared(&dir);
        assert!(
            pre.stderr.contains("not a regular file"),
            "{}",
            pre.describe()
        );
    }
}

/// A capture whose manifest says a format version this shim cannot write (8) is refused,
/// not appended to (the launches would be unreadable), and its manifest is left as it was.
#[test]
fn a_capture_of_a_newer_format_is_refused_not_appended_to() {
    let base = fresh_dir("caps", "newer-format");
    let dir = base.join("cap");
    std::fs::create_dir(&dir).expect("dir");
    let manifest = r#"{"format":"cltrap-capture","version":8,"writer":"a later cltrap","pid":1,"argv":[],"started_unix":0,"buffer_mode":"full"}"#;
    std::fs::write(dir.join("manifest.json"), manifest).expect("manifest");
    let pre = run_on_prepared(&dir);
    assert!(pre.stderr.contains("version 8"), "{}", pre.describe());
    assert_eq!(
        std::fs::read_to_string(dir.join("manifest.json")).unwrap(),
        manifest
    );
    assert!(!dir.join("launches.jsonl").exists());
    assert!(!dir.join("blobs").exists());
}

/// The origin of the program of the (one) launch of the `bincache` fixture in `cap`.
fn program_origin(cap: &cltrap_capture::Capture) -> cltrap_capture::ProgramOrigin {
    let launch = cap.launches.first().expect("one launch");
    assert_eq!(launch.kernel, "cached_scale");
    cap.program(&launch.program).expect("program record").origin
}

/// An application that loads its kernels from its own binary cache is captured with a
/// warning naming the kernel (analyses cannot read a binary); with `--refuse-binaries`
/// `clCreateProgramWithBinary` answers `CL_INVALID_BINARY`, the application falls back to
/// source, and the capture holds the source.
#[test]
fn binary_programs_are_said_and_can_be_refused_so_apps_build_from_source() {
    let exe = fixture("bincache");
    let base = fresh_dir("caps", "bincache");
    let cache = base.join("kernels.bin");
    let cache_arg = [cache.as_os_str()];
    let first = run_native(&exe, &cache_arg).expect_success();
    assert!(cache.is_file(), "the fixture wrote its cache");
    let native = run_native(&exe, &cache_arg).expect_success();
    assert!(
        native.stderr.contains("kernels from the cache"),
        "{}",
        native.describe()
    );
    assert_eq!(first.stdout, native.stdout);

    let dir = base.join("cap-binary");
    let pre = run_preloaded(&dir, &[], &exe, &cache_arg);
    pre.assert_no_panic();
    assert_same_behaviour(&native, &pre);
    let said = cltrap_lines(&pre.stderr);
    assert_eq!(said.len(), 1, "{}", pre.describe());
    assert!(
        said[0].contains("'cached_scale'") && said[0].contains("--refuse-binaries"),
        "{}",
        pre.describe()
    );
    let origin = program_origin(&open_capture(&dir));
    assert!(
        matches!(origin, cltrap_capture::ProgramOrigin::Binary { .. }),
        "{origin:?}"
    );

    let dir = base.join("cap-refused");
    let refused = run_captured(&dir, &["--refuse-binaries"], &exe, &cache_arg);
    refused.assert_no_panic();
    assert!(refused.success(), "{}", refused.describe());
    assert_eq!(refused.stdout, native.stdout, "{}", refused.describe());
    assert!(
        refused
            .stderr
            .contains("the cached binary was refused (-42, -42)"),
        "{}",
        refused.describe()
    );
    assert!(
        refused.stderr.contains("refused a program binary"),
        "{}",
        refused.describe()
    );
    let origin = program_origin(&open_capture(&dir));
    assert!(
        matches!(origin, cltrap_capture::ProgramOrigin::Source { .. }),
        "{origin:?}"
    );
}

/// A capture folder that belongs to another user (a world-writable `cltrap-out/` someone
/// prepared) is refused with one line, and the application runs on uncaptured with its own
/// results. Run as root, a folder made here is given to `nobody`; run as anyone else, the
/// folder is one that already exists, that everyone may write to and that belongs to root
/// (`/dev/shm`, `/tmp` or `/var/tmp`, sticky and world-writable), so the rule is checked
/// whoever runs the tests.
#[test]
fn a_capture_folder_of_another_user_is_refused() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let base = fresh_dir("caps", "other-user");
    let probe = base.join("probe");
    std::fs::write(&probe, b"").expect("probe");
    let me = std::fs::metadata(&probe).expect("probe").uid();
    if me == 0 {
        let dir = base.join("cap");
        std::fs::create_dir(&dir).expect("dir");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).expect("chown");
        let pre = run_on_prepared(&dir);
        assert!(
            pre.stderr.contains("belongs to user 65534"),
            "{}",
            pre.describe()
        );
        assert_eq!(std::fs::read_dir(&dir).expect("listed").count(), 0);
        return;
    }
    let shared = ["/dev/shm", "/tmp", "/var/tmp"]
        .iter()
        .map(std::path::Path::new)
        .find(|p| {
            std::fs::symlink_metadata(p)
                .is_ok_and(|m| m.is_dir() && m.uid() != me && m.mode() & 0o002 != 0)
        });
    let Some(shared) = shared else {
        skip(
            "a_capture_folder_of_another_user_is_refused",
            "no world-writable folder of another user (/dev/shm, /tmp, /var/tmp) to point at",
        );
        return;
    };
    let owner = std::fs::metadata(shared).expect("shared folder").uid();
    let capture_files = ["manifest.json", "launches.jsonl", "ids", "blobs"];
    let present = || -> Vec<&str> {
        capture_files
            .iter()
            .filter(|f| shared.join(f).symlink_metadata().is_ok())
            .copied()
            .collect()
    };
    let before = present();
    let pre = run_on_prepared(shared);
    assert!(
        pre.stderr.contains(&format!("belongs to user {owner}")),
        "{}",
        pre.describe()
    );
    assert_eq!(
        present(),
        before,
        "the shim wrote into {}",
        shared.display()
    );
}
