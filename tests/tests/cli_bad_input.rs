//! Bad input to the CLI gives one clear sentence and a non-zero exit, never a panic.

use cltrap_e2e::*;
use std::ffi::OsStr;
use std::path::Path;

/// Asserts a failed command explained itself in exactly one stderr line mentioning `about`.
fn assert_one_clear_line(out: &Outcome, about: &str) {
    out.assert_no_panic();
    assert!(
        !out.success() && out.code.is_some(),
        "expected a non-zero exit\n{}",
        out.describe()
    );
    let lines = meaningful_stderr_lines(&out.stderr);
    assert_eq!(
        lines.len(),
        1,
        "expected one line on stderr\n{}",
        out.describe()
    );
    assert!(
        lines[0].to_lowercase().contains(&about.to_lowercase()),
        "the message should mention `{about}`\n{}",
        out.describe()
    );
}

fn cmd(args: &[&OsStr]) -> Outcome {
    cltrap(args)
}

/// A small valid capture to break in different ways.
fn small_capture(label: &str) -> TestDir {
    let exe = fixture("sequence");
    let dir = fresh_capture_dir(label);
    run_captured(&dir, &["--per-kernel", "1"], &exe, &[] as &[&str]).expect_success();
    assert_eq!(open_capture(&dir).launches.len(), 3);
    dir
}

#[test]
fn a_missing_capture_dir_is_one_clear_error() {
    let missing = e2e_dir().join("no-such-capture-dir");
    for sub in ["list", "replay"] {
        let out = cmd(&[OsStr::new(sub), missing.as_os_str()]);
        assert_one_clear_line(&out, "no-such-capture-dir");
    }
    let out = cmd(&[OsStr::new("show"), missing.as_os_str(), OsStr::new("0")]);
    assert_one_clear_line(&out, "no-such-capture-dir");
}

#[test]
fn a_corrupt_manifest_is_one_clear_error() {
    let dir = small_capture("corrupt");
    std::fs::write(dir.join("manifest.json"), b"{ this is not json").expect("write manifest");
    for sub in ["list", "replay"] {
        let out = cmd(&[OsStr::new(sub), dir.as_os_str()]);
        assert_one_clear_line(&out, "manifest.json");
    }
}

#[test]
fn a_corrupt_launch_log_is_one_clear_error() {
    let dir = small_capture("corrupt-log");
    let log = dir.join("launches.jsonl");
    let mut text = std::fs::read_to_string(&log).expect("read log");
    text.insert_str(0, "{\"id\": \"not a number\"}\n");
    std::fs::write(&log, text).expect("write log");
    let out = cmd(&[OsStr::new("list"), dir.as_os_str()]);
    assert_one_clear_line(&out, "launches.jsonl");
}

#[test]
fn a_capture_of_another_format_version_is_refused_clearly() {
    let dir = small_capture("version");
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).expect("read manifest");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("manifest is JSON");
    v["version"] = serde_json::json!(999);
    std::fs::write(&path, v.to_string()).expect("write manifest");
    for sub in ["list", "replay"] {
        let out = cmd(&[OsStr::new(sub), dir.as_os_str()]);
        assert_one_clear_line(&out, "999");
    }
}

#[test]
fn a_launch_id_out_of_range_is_one_clear_error() {
    let dir = small_capture("range");
    for sub in ["show", "replay"] {
        let out = cmd(&[OsStr::new(sub), dir.as_os_str(), OsStr::new("3")]);
        assert_one_clear_line(&out, "3");
    }
    let out = cmd(&[
        OsStr::new("show"),
        dir.as_os_str(),
        OsStr::new("not-a-number"),
    ]);
    out.assert_no_panic();
    assert!(!out.success(), "{}", out.describe());
}

/// Replaces `from` by `to` in the source of the capture's program and points its launches at
/// the edited program, the way a user editing a capture by hand (or a tool) would.
fn edit_source(dir: &std::path::Path, from: &str, to: &str) {
    let cap = open_capture(dir);
    let old_prog_hash = cap.launches[0].program.clone();
    let mut prog = cap.program(&old_prog_hash).expect("program record");
    let cltrap_capture::ProgramOrigin::Source { sources } = &mut prog.origin else {
        panic!("sequence.cl is built from source: {:?}", prog.origin)
    };
    let text = cap.source_text(&sources[0]).expect("source");
    let edited = text.replace(from, to);
    assert_ne!(edited, text, "the edit applied");
    let store = cltrap_capture::BlobStore::new(dir);
    sources[0] = store.put(edited.as_bytes()).expect("store source");
    let new_prog_hash = store
        .put(&serde_json::to_vec(&prog).expect("encode program"))
        .expect("store program");
    let log = dir.join("launches.jsonl");
    let text = std::fs::read_to_string(&log).expect("read log");
    std::fs::write(&log, text.replace(&old_prog_hash, &new_prog_hash)).expect("write log");
    assert_eq!(open_capture(dir).launches[0].program, new_prog_hash);
}

#[test]
fn a_kernel_edited_so_it_no_longer_builds_fails_replay_clearly() {
    let dir = small_capture("edited");
    edit_source(&dir, "out[g] = v + (int)g;", "out[g] = v + ;");

    let out = cmd(&[OsStr::new("replay"), dir.as_os_str(), OsStr::new("0")]);
    out.assert_no_panic();
    assert!(!out.success() && out.code.is_some(), "{}", out.describe());
    let all = format!("{}{}", out.stdout_text(), out.stderr).to_lowercase();
    assert!(
        all.contains("build"),
        "the failure should say the kernel does not build\n{}",
        out.describe()
    );
    assert_eq!(ok_lines(&out.stdout_text()), 0, "{}", out.describe());
}

#[test]
fn a_damaged_blob_is_reported_not_replayed() {
    let dir = small_capture("damaged");
    let cap = open_capture(&dir);
    let hash = cap.launches[0].program.clone();
    let path = cltrap_capture::writer::blob_path(&dir, &hash);
    std::fs::write(&path, b"{}").expect("overwrite blob");
    let out = cmd(&[OsStr::new("replay"), dir.as_os_str(), OsStr::new("0")]);
    out.assert_no_panic();
    assert!(!out.success() && out.code.is_some(), "{}", out.describe());
    assert_eq!(ok_lines(&out.stdout_text()), 0, "{}", out.describe());
}

/// A copy of the capture in `dir`, to damage one way without touching the original.
fn copy_capture(dir: &std::path::Path, label: &str) -> TestDir {
    let copy = fresh_capture_dir(label);
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(dir)
        .arg(&*copy)
        .status()
        .expect("cp runs");
    assert!(status.success(), "cp -a {} failed", dir.display());
    copy
}

/// A command on a damaged capture ended by itself with a result or with one sentence (exit
/// 2), never a panic, a signal or the harness's timeout.
fn assert_ends_clearly(out: &Outcome) {
    out.assert_no_panic();
    assert!(
        out.signal.is_none(),
        "killed by a signal\n{}",
        out.describe()
    );
    if !out.success() {
        assert_eq!(out.code, Some(2), "{}", out.describe());
        assert_eq!(
            meaningful_stderr_lines(&out.stderr).len(),
            1,
            "one sentence on stderr\n{}",
            out.describe()
        );
    }
}

#[test]
fn show_ends_on_a_launch_whose_kernel_name_is_empty() {
    let dir = small_capture("empty-name");
    rewrite_launch(&dir, 0, |l| l.kernel.clear());
    let out = cmd(&[OsStr::new("show"), dir.as_os_str(), OsStr::new("0")]);
    assert_ends_clearly(&out);
    if out.success() {
        assert!(
            out.stdout_text().contains("launch 0 "),
            "{}",
            out.describe()
        );
    }
}

/// `list` keeps every line to a readable width whatever the capture's strings: a 1 MB
/// scalar, 100 000 arguments and a 50 MB kernel name are cut with an ellipsis.
#[test]
fn list_clips_huge_scalars_argument_lists_and_kernel_names() {
    let base = small_capture("huge");
    type Edit = Box<dyn Fn(&mut cltrap_capture::LaunchRecord)>;
    let edits: Vec<(&str, Edit)> = vec![
        (
            "scalar",
            Box::new(|l| {
                for a in &mut l.args {
                    if let cltrap_capture::ArgRecord::Scalar { bytes, .. } = a {
                        *bytes = "ab".repeat(1 << 20);
                    }
                }
            }),
        ),
        (
            "args",
            Box::new(|l| {
                let scalar = l
                    .args
                    .iter()
                    .find(|a| matches!(a, cltrap_capture::ArgRecord::Scalar { .. }))
                    .cloned()
                    .expect("fill takes a scalar");
                l.args = (0..100_000).map(|_| scalar.clone()).collect();
            }),
        ),
        ("name", Box::new(|l| l.kernel = "k".repeat(50 << 20))),
    ];
    for (label, edit) in edits {
        let dir = copy_capture(&base, label);
        rewrite_launch(&dir, 0, |l| edit(l));
        let out = cmd(&[OsStr::new("list"), dir.as_os_str()]);
        assert_ends_clearly(&out);
        if out.success() {
            let text = out.stdout_text();
            let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
            assert!(
                widest < 500,
                "{label}: a line of {widest} characters\n{}",
                out.describe()
            );
            // Either the launch is listed with its cells clipped, or the reader's limits
            // (`cltrap_capture::validate`) refused its record and list names it as damaged.
            let listed = text
                .lines()
                .filter(|l| l.trim_start().starts_with('0'))
                .count();
            let damaged = text
                .lines()
                .any(|l| l.starts_with("damaged:") && l.contains("(launch 0)"));
            assert!(
                (listed == 1 && text.contains('…')) || (listed == 0 && damaged),
                "{label}: launch 0 neither listed clipped nor named damaged\n{}",
                out.describe()
            );
        }
    }
}

/// NDRanges no driver should be handed: a zero local size (PoCL crashed inside the call),
/// 2^32 work-items (ran until the watchdog), a work_dim of 4, sizes of another length. Each
/// is refused in a sentence when the capture is read (`cltrap_capture::validate`): replay
/// reports that launch's record as damaged and still replays the others, and so does cover;
/// check of that launch alone names the line and has nothing left to check (all exit 2).
#[test]
fn malformed_or_huge_ndranges_are_refused_per_launch() {
    let base = small_capture("ndrange");
    type Edit = Box<dyn Fn(&mut cltrap_capture::LaunchRecord)>;
    let cases: Vec<(&str, &str, Edit)> = vec![
        (
            "local0",
            "local size [0] has a 0",
            Box::new(|l| l.local_size = Some(vec![0])),
        ),
        (
            "huge",
            "4294967296 work-items",
            Box::new(|l| l.global_size = vec![1 << 32]),
        ),
        ("dim4", "work_dim is 4", Box::new(|l| l.work_dim = 4)),
        (
            "lengths",
            "local_size has 2 dimension(s)",
            Box::new(|l| l.local_size = Some(vec![1, 1])),
        ),
    ];
    for (label, why, edit) in cases {
        let dir = copy_capture(&base, label);
        rewrite_launch(&dir, 0, |l| edit(l));
        for sub in ["replay", "cover", "check"] {
            let mut args = vec![OsStr::new(sub), dir.as_os_str()];
            if sub == "check" {
                args.push(OsStr::new("0"));
            }
            let out = cmd(&args);
            out.assert_no_panic();
            assert!(out.signal.is_none(), "{}", out.describe());
            let all = format!("{}{}", out.stdout_text(), out.stderr);
            assert!(
                all.contains(why),
                "{sub} {label}: the refusal should say `{why}`\n{}",
                out.describe()
            );
            assert!(!out.success(), "{sub} {label}\n{}", out.describe());
            if sub == "replay" {
                assert_eq!(
                    ok_lines(&out.stdout_text()),
                    2,
                    "{label}\n{}",
                    out.describe()
                );
            }
            if sub == "cover" {
                assert!(
                    out.stdout_text()
                        .contains("over 2 launch(es) (0 skipped, 0 failed)"),
                    "{label}\n{}",
                    out.describe()
                );
            }
        }
    }
}

/// A kernel file and interface file for `cltrap fuzz`, in a private temporary folder.
fn fuzz_files(source: &[u8], interface: &serde_json::Value) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temporary folder");
    std::fs::write(tmp.path().join("k.cl"), source).expect("write kernel");
    std::fs::write(tmp.path().join("k.json"), interface.to_string()).expect("write interface");
    tmp
}

const FUZZ_KERNEL: &str = "kernel void k(global int *a, int n) {\n  int i = get_global_id(0);\n  if (i < n) a[i] = a[i] * 2 + n;\n}\n";

fn interface(kernel: &str, elements: u64) -> serde_json::Value {
    serde_json::json!({
        "kernel": kernel,
        "global_size": [16],
        "local_size": [4],
        "args": [
            {"name": "a", "type": "int*", "size": elements, "fill": "random", "output": true},
            {"name": "n", "type": "int", "fill": {"fixed": 8}}
        ]
    })
}

fn fuzz(tmp: &tempfile::TempDir) -> Outcome {
    let k = tmp.path().join("k.cl");
    let i = tmp.path().join("k.json");
    cmd(&[
        OsStr::new("fuzz"),
        k.as_os_str(),
        OsStr::new("--interface"),
        i.as_os_str(),
        OsStr::new("--budget"),
        OsStr::new("20"),
    ])
}

/// Buffer sizes of 2^40 and 2^62 elements in an interface file: one sentence naming the
/// argument and the bound, not an aborted allocation or a hang.
#[test]
fn fuzz_refuses_interface_buffers_beyond_the_bound() {
    for elements in [1u64 << 40, 1 << 62, u64::MAX] {
        let tmp = fuzz_files(FUZZ_KERNEL.as_bytes(), &interface("k", elements));
        let out = fuzz(&tmp);
        assert_one_clear_line(&out, "argument 0 (a)");
        assert!(out.stderr.contains("bytes"), "{}", out.describe());
    }
}

/// A kernel name the file does not define: one sentence naming it, on stderr.
#[test]
fn fuzz_names_a_kernel_the_file_does_not_define() {
    let tmp = fuzz_files(FUZZ_KERNEL.as_bytes(), &interface("no_such_kernel", 16));
    let out = fuzz(&tmp);
    assert_one_clear_line(&out, "no_such_kernel");
    let k = tmp.path().join("k.cl");
    let out = cmd(&[
        OsStr::new("fuzz"),
        k.as_os_str(),
        OsStr::new("--kernel"),
        OsStr::new("other_missing"),
        OsStr::new("--budget"),
        OsStr::new("20"),
    ]);
    assert_one_clear_line(&out, "other_missing");
    // An interface file for another kernel than --kernel names: said, not a worker's failure.
    let i = tmp.path().join("k.json");
    let out = cmd(&[
        OsStr::new("fuzz"),
        k.as_os_str(),
        OsStr::new("--kernel"),
        OsStr::new("k"),
        OsStr::new("--interface"),
        i.as_os_str(),
        OsStr::new("--budget"),
        OsStr::new("20"),
    ]);
    assert_one_clear_line(&out, "no_such_kernel");
}

/// A comment in Latin-1 (not UTF-8), which the driver accepts: fuzzing works on the file.
#[test]
fn fuzz_accepts_a_kernel_file_with_a_latin1_comment() {
    let mut source = b"/* Gr\xfc\xdfe, \xe9t\xe9 */\n".to_vec();
    source.extend_from_slice(FUZZ_KERNEL.as_bytes());
    assert!(std::str::from_utf8(&source).is_err());
    let tmp = fuzz_files(&source, &interface("k", 16));
    let out = fuzz(&tmp);
    out.assert_no_panic();
    assert!(out.success(), "{}", out.describe());
}

/// The process ids whose parent is `parent` and whose command line holds `word`.
fn children_with(parent: u32, word: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // The parent is the fourth field, after the command's closing parenthesis.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if ppid == Some(parent) && String::from_utf8_lossy(&cmdline).contains(word) {
            found.push(pid);
        }
    }
    found
}

/// Whether process `pid` is gone (or a zombie waiting to be reaped).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Starts `cltrap ARGS` on `dir` (a capture whose kernel never ends), waits for the process
/// `find` names among its descendants, kills `cltrap` outright (SIGKILL: no handler runs)
/// and asserts that process ends too.
fn killed_runner_takes(dir: &Path, args: &[&str], what: &str, find: impl Fn(u32) -> Option<u32>) {
    let mut runner = std::process::Command::new(&tools().cltrap)
        .arg(args[0])
        .arg(dir)
        .args(&args[1..])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("cltrap starts");
    let patience = std::time::Duration::from_secs(120);
    let started = std::time::Instant::now();
    let worker = loop {
        if let Some(w) = find(runner.id()) {
            break w;
        }
        assert!(
            started.elapsed() < patience && runner.try_wait().unwrap().is_none(),
            "no {what} started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // Let it reach the kernel, then kill the runner with no chance to clean up.
    std::thread::sleep(std::time::Duration::from_secs(2));
    runner.kill().unwrap();
    runner.wait().unwrap();
    let killed = std::time::Instant::now();
    while !gone(worker) && killed.elapsed() < patience {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let left = !gone(worker);
    if left {
        // SAFETY: a plain kill of one of the test's own descendants.
        unsafe { libc::kill(worker as i32, libc::SIGKILL) };
    }
    assert!(!left, "the {what} {worker} ran on after cltrap was killed");
}

/// A capture of three launches whose kernel loops forever, writing all along (so no
/// compiler may drop the loop).
fn endless_capture(label: &str) -> TestDir {
    let dir = small_capture(label);
    edit_source(
        &dir,
        "out[g] = v + (int)g;",
        "for (int k = 0;; k++) out[g] = v + k;",
    );
    dir
}

/// A `cltrap` killed outright while a worker runs a kernel that never ends takes the worker
/// with it: the worker does not run on for minutes until its watchdog, burning a core with
/// no one to report to.
#[test]
fn a_replay_killed_outright_leaves_no_worker_running() {
    let dir = endless_capture("killed-runner");
    killed_runner_takes(&dir, &["replay", "0"], "worker", |runner| {
        children_with(runner, "--unit-worker").first().copied()
    });
}

/// The same for the processes a campaign's worker starts itself: a fuzzer killed outright
/// while its execution worker (`fuzz --worker`) runs a kernel that never ends leaves none of
/// them running (no watchdog is left to stop it).
#[test]
fn a_fuzzer_killed_outright_leaves_no_execution_worker_running() {
    let dir = endless_capture("killed-fuzzer");
    killed_runner_takes(
        &dir,
        &["fuzz", "--watchdog", "600"],
        "execution worker",
        |runner| {
            children_with(runner, "--unit-worker")
                .into_iter()
                .flat_map(|u| children_with(u, "--worker"))
                .next()
        },
    );
}

/// A campaign folder that came with a capture cannot make `fuzz` delete or write elsewhere:
/// its per-kernel folder replaced by a link to another folder is refused, and what that
/// folder holds stays.
#[test]
fn fuzz_refuses_a_planted_link_in_the_captures_campaign_folder() {
    let dir = small_capture("fuzz-link");
    let suite = dir.with_file_name("fuzz-link-suite");
    let _ = std::fs::remove_dir_all(&suite);
    let args = [
        OsStr::new("fuzz"),
        dir.as_os_str(),
        OsStr::new("--budget"),
        OsStr::new("20"),
        OsStr::new("--no-locate"),
        OsStr::new("--out"),
        suite.as_os_str(),
    ];
    let first = cmd(&args);
    first.assert_no_panic();
    let units = std::fs::read_dir(dir.join("campaigns"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("fuzz-units-")
        })
        .unwrap_or_else(|| panic!("no fuzz units folder\n{}", first.describe()));
    let victim = dir.with_file_name("fuzz-link-victim");
    let _ = std::fs::remove_dir_all(&victim);
    std::fs::rename(&units, &victim).unwrap();
    let mut planted = Vec::new();
    for e in std::fs::read_dir(&victim).unwrap().flatten() {
        if e.path().is_dir() {
            let p = e.path().join("precious.txt");
            std::fs::write(&p, "precious").unwrap();
            planted.push(p);
        }
    }
    assert!(!planted.is_empty(), "the first run made per-kernel folders");
    std::os::unix::fs::symlink(&victim, &units).unwrap();
    let again = cmd(&args);
    again.assert_no_panic();
    assert!(!again.success(), "{}", again.describe());
    assert!(
        format!("{}{}", again.stdout_text(), again.stderr).contains("fuzz-units-")
            && again.stdout_text().contains("is a symbolic link"),
        "{}",
        again.describe()
    );
    // A refusal, said as one: no worker crashed.
    assert!(
        again.stdout_text().contains("could not run") && !again.stdout_text().contains("crashed"),
        "{}",
        again.describe()
    );
    for p in &planted {
        assert_eq!(
            std::fs::read_to_string(p).unwrap(),
            "precious",
            "{}",
            p.display()
        );
    }
    let _ = std::fs::remove_dir_all(&victim);
    let _ = std::fs::remove_dir_all(&suite);
}

/// `mutate` writes into the capture by default (`CAP/mutate`): a link planted there is
/// refused, and nothing is written through it.
#[test]
fn mutate_refuses_a_planted_link_as_its_output_folder() {
    let dir = small_capture("mutate-link");
    let victim = dir.with_file_name("mutate-link-victim");
    let _ = std::fs::remove_dir_all(&victim);
    std::fs::create_dir_all(&victim).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("mutate")).unwrap();
    let out = cmd(&[OsStr::new("mutate"), dir.as_os_str()]);
    out.assert_no_panic();
    assert!(!out.success(), "{}", out.describe());
    assert!(
        out.stderr
            .contains("is a symbolic link: give --out a folder of your own"),
        "{}",
        out.describe()
    );
    assert_eq!(
        std::fs::read_dir(&victim).unwrap().count(),
        0,
        "written through the link"
    );
    let _ = std::fs::remove_dir_all(&victim);
}

/// Makes the first launch of `dir` claim 64 GiB for each of its memory objects of `kind`
/// (`buffer` or `image`), contents recorded as digests of that size; returns the bytes claimed.
fn claim_giant_objects(dir: &Path, kind: &str) -> u64 {
    const GIANT: u64 = 64 << 30;
    let log = dir.join("launches.jsonl");
    let text = std::fs::read_to_string(&log).expect("read log");
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let mut record: serde_json::Value = serde_json::from_str(&lines[0]).expect("a whole record");
    let mut claimed = 0;
    let args = record["args"].as_array_mut().expect("args");
    for a in args.iter_mut().filter(|a| a["kind"] == kind) {
        if kind == "buffer" {
            a["size"] = serde_json::json!(GIANT);
        } else {
            // A 2-D image of 65 536 x 65 536 elements of 16 bytes.
            a["image"] = serde_json::json!({
                "image_type": 0x10F1, "channel_order": 0x10B5, "channel_data_type": 0x10DE,
                "width": 65536, "height": 65536, "depth": 0, "array_size": 0, "element_size": 16
            });
        }
        let digest = serde_json::json!({"kind": "digest", "hash": "ab".repeat(32), "size": GIANT});
        a["before"] = digest.clone();
        a["after"] = digest;
        claimed += GIANT;
    }
    lines[0] = record.to_string();
    std::fs::write(&log, lines.join("\n") + "\n").expect("write log");
    claimed
}

#[test]
fn a_launch_claiming_more_memory_than_the_machine_has_is_skipped_with_its_reason() {
    // A record of a few hundred bytes may claim objects of up to 64 GiB each: replay says so
    // before anything is restored, instead of being ended by the OOM killer.
    for (name, kind) in [("sequence", "buffer"), ("images", "image")] {
        let exe = fixture(name);
        let native = run_native(&exe, &[] as &[&str]).expect_success();
        if native.stdout_text().contains("not supported") {
            continue;
        }
        let dir = fresh_capture_dir(&format!("giant-{kind}"));
        run_captured(&dir, &["--per-kernel", "1"], &exe, &[] as &[&str]).expect_success();
        let launches = open_capture(&dir).launches.len();
        let claimed = claim_giant_objects(&dir, kind);
        assert!(
            claimed >= 64 << 30,
            "{kind}: the first launch has no {kind}"
        );
        let still = open_capture(&dir).launches.len();
        assert_eq!(still, launches, "{kind}: the record stays valid");
        let out = cmd(&[OsStr::new("replay"), dir.as_os_str(), OsStr::new("0")]);
        out.assert_no_panic();
        assert!(out.code.is_some(), "{}", out.describe());
        // (A machine with that much memory would try to replay it.)
        if cltrap_capture::bulk::has_room(claimed) {
            continue;
        }
        let all = format!("{}{}", out.stdout_text(), out.stderr);
        assert!(
            all.contains(&format!(
                "take {claimed} bytes, more than the memory available"
            )),
            "{kind}: the launch should be skipped for its memory\n{}",
            out.describe()
        );
    }
}
