//! `cltrap check` as a campaign, end to end on PoCL: three shards merged give the report one
//! run gives; a run killed partway and resumed gives it too, running only what was left;
//! Ctrl-C keeps what finished; `--devices all` spreads the launches over two PoCL devices.
//!
//! PoCL runs on one thread here (`POCL_MAX_PTHREAD_COUNT=1`): the race check's counts depend
//! on the order work-groups run in, which several threads make vary from run to run, and the
//! comparisons are of whole reports.

use cltrap_e2e::campaign::*;
use cltrap_e2e::*;
use serde_json::Value;
use std::path::Path;

/// Eight launches of the `check` fixture's buggy kernels (three kinds of findings).
fn capture(name: &str) -> TestDir {
    let dir = fresh_capture_dir(name);
    let kernels = [
        "global_race",
        "off_by_one",
        "local_race",
        "global_race",
        "off_by_one",
        "local_race",
        "global_race",
        "off_by_one",
    ];
    let out = run_captured(&dir, &[], &fixture("check"), &kernels);
    assert!(out.success(), "{}", out.describe());
    dir
}

/// `cltrap ARGS` with PoCL on one thread.
fn run(args: &[&str]) -> Outcome {
    run_env(args, &[])
}

/// `cltrap ARGS` with PoCL on one thread and `env` added.
fn run_env(args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let mut all: Vec<(&str, &std::ffi::OsStr)> = vec![("POCL_MAX_PTHREAD_COUNT", "1".as_ref())];
    all.extend(env.iter().map(|(k, v)| (*k, std::ffi::OsStr::new(v))));
    run_with_env(&tools().cltrap, args, &all, None)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The JSON report on stdout, without timings, and the exit code.
fn report(out: &Outcome) -> (i32, Value) {
    out.assert_no_panic();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", out.describe()));
    (out.code.unwrap_or(-1), without_timings(v))
}

fn sarif(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    without_timings(serde_json::from_str(&text).expect("SARIF is JSON"))
}

#[test]
fn three_shards_merged_equal_one_run() {
    let dir = capture("campaign-check-shards");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let single_sarif = work.join("report.sarif");
    let one = run(&["check", s(&dir), "--json", "--sarif", s(&single_sarif)]);
    let (code, single) = report(&one);
    assert_eq!(code, 1, "findings: {}", one.describe());
    assert!(!single["findings"].as_array().unwrap().is_empty());
    // Every shard runs the same command line; the report files it names are the merge's.
    let sarif_path = work.join("shards").join("report.sarif");
    let mut shards = Vec::new();
    for i in 0..3 {
        let shard = work.join(format!("shard-{i}"));
        let out = run(&[
            "check",
            s(&dir),
            "--json",
            "--sarif",
            s(&sarif_path),
            "--shard",
            &format!("{i}/3"),
            "--campaign-dir",
            s(&shard),
        ]);
        assert_eq!(out.code, Some(0), "a shard exits 0: {}", out.describe());
        assert!(out.stdout.is_empty(), "a shard prints no report");
        assert!(!sarif_path.exists(), "a shard writes no report file");
        // Round robin over 8 launches: 3, 3 and 2 units.
        assert_eq!(journal(&shard).len() - 1, if i < 2 { 3 } else { 2 });
        shards.push(shard);
    }
    let merged_dir = work.join("merged");
    let mut args = vec!["merge", s(&merged_dir)];
    args.extend(shards.iter().map(|p| s(p)));
    let merged = cltrap(&args);
    let (mcode, mreport) = report(&merged);
    assert_eq!(mcode, code, "{}", merged.describe());
    assert_eq!(mreport, single, "merged report differs from one run's");
    assert_eq!(
        sarif(&merged_dir.join("report.sarif")),
        sarif(&single_sarif)
    );
    // A shard given twice, or one missing, is refused.
    let twice = run(&["merge", s(&work.join("m2")), s(&shards[0]), s(&shards[0])]);
    assert_eq!(twice.code, Some(2));
    assert!(
        twice.stderr.contains("are both shard 0/3"),
        "{}",
        twice.stderr
    );
    let missing = run(&["merge", s(&work.join("m3")), s(&shards[0]), s(&shards[1])]);
    assert_eq!(missing.code, Some(2));
    assert!(
        missing.stderr.contains("shard 2/3 is missing"),
        "{}",
        missing.stderr
    );
}

/// How many units a resumed run says finished before it (`N of M unit(s) finished before`).
fn finished_before(stderr: &str) -> usize {
    stderr
        .lines()
        .find_map(|l| {
            l.split(" of 8 unit(s) finished before")
                .next()
                .filter(|_| l.contains(" finished before"))
        })
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn killed_then_resumed_equals_a_clean_run() {
    // On Oclgrind (a simulator child per launch, far slower than the kill's latency), so the
    // kill lands with launches left to run.
    let dir = capture("campaign-check-resume");
    let clean = run(&["check", s(&dir), "--json", "--engine", "oclgrind"]);
    let (code, expected) = report(&clean);
    let camp = dir.join("camp");
    let mut child = spawn_cltrap(
        &[
            "check",
            s(&dir),
            "--json",
            "--engine",
            "oclgrind",
            "--campaign-dir",
            s(&camp),
        ],
        &[("POCL_MAX_PTHREAD_COUNT", "1")],
    );
    let before = stop_after(&mut child, &camp, 2, libc::SIGKILL);
    let _ = child.wait();
    assert!(before >= 2, "killed after {before} unit(s)");
    let resumed = run(&[
        "check",
        s(&dir),
        "--json",
        "--engine",
        "oclgrind",
        "--campaign-dir",
        s(&camp),
        "--resume",
    ]);
    let (rcode, got) = report(&resumed);
    assert_eq!((rcode, got), (code, expected), "{}", resumed.describe());
    let skipped = finished_before(&resumed.stderr);
    assert!(
        (before..8).contains(&skipped),
        "the resumed run skipped {skipped} unit(s), killed after {before}: {}",
        resumed.stderr
    );
    // The journal holds each unit once more only for those run again: 8 in all.
    let ids: std::collections::BTreeSet<String> = journal(&camp)
        .iter()
        .skip(1)
        .filter_map(|l| l["unit"].as_str().map(str::to_string))
        .collect();
    assert_eq!(ids.len(), 8);
    // Resuming with other arguments is refused.
    let other = run(&["check", s(&dir), "--campaign-dir", s(&camp), "--resume"]);
    assert_eq!(other.code, Some(2), "{}", other.describe());
    assert!(
        other.stderr.contains("not as this command"),
        "{}",
        other.stderr
    );
}

#[test]
fn ctrl_c_keeps_what_finished() {
    let dir = capture("campaign-check-sigint");
    let camp = dir.join("camp");
    let args = [
        "check",
        s(&dir),
        "--engine",
        "oclgrind",
        "--campaign-dir",
        s(&camp),
    ];
    let mut child = spawn_cltrap(&args, &[("POCL_MAX_PTHREAD_COUNT", "1")]);
    let before = stop_after(&mut child, &camp, 2, libc::SIGINT);
    let status = child.wait().expect("waits");
    let after = journal(&camp).len() - 1;
    assert!(
        after < 8,
        "Ctrl-C stopped the campaign ({after} of 8 units ran)"
    );
    assert_eq!(status.code(), Some(130), "Ctrl-C gives 130");
    assert!(
        after >= before,
        "finished units were kept ({after} < {before})"
    );
    let resumed = run(&[args.as_slice(), &["--resume"]].concat());
    assert_eq!(resumed.code, Some(1), "{}", resumed.describe());
    assert_eq!(journal(&camp).len() - 1, 8);
}

#[test]
fn two_devices_share_the_launches() {
    let dir = capture("campaign-check-devices");
    let one = run(&["check", s(&dir), "--json"]);
    let (code, expected) = report(&one);
    let camp = dir.join("camp");
    let two = run_env(
        &[
            "check",
            s(&dir),
            "--json",
            "--devices",
            "all",
            "--campaign-dir",
            s(&camp),
        ],
        &[("POCL_DEVICES", "pthread pthread")],
    );
    let (tcode, got) = report(&two);
    assert_eq!((tcode, got), (code, expected), "{}", two.describe());
    assert!(
        two.stderr.contains("2 worker(s) on 2 device(s)"),
        "{}",
        two.stderr
    );
    let devices = journal_devices(&camp);
    assert_eq!(devices.len(), 2, "units ran on {devices:?}");
    // A device list naming no device is one clear error.
    let bad = run(&["check", s(&dir), "--devices", "nosuchdevice"]);
    assert_eq!(bad.code, Some(2));
    assert!(
        bad.stderr.contains("--devices: no device `nosuchdevice`"),
        "{}",
        bad.stderr
    );
}

#[test]
fn a_campaigns_link_in_a_capture_is_not_followed() {
    let dir = capture("campaign-check-link");
    let victim = dir.join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("campaigns")).unwrap();
    let out = run(&["check", s(&dir), "--json"]);
    assert_eq!(out.code, Some(2), "{}", out.describe());
    assert!(out.stderr.contains("is a symbolic link"), "{}", out.stderr);
    assert_eq!(
        std::fs::read_dir(&victim).unwrap().count(),
        0,
        "nothing written through the link"
    );
}

/// A journal line changed after cltrap wrote it (a forged result), or a journal cltrap did not
/// write at all (no seal of this user's key, as one that came with a capture), is not taken
/// by `--resume`: the changed unit runs again, said, and the report is the true one; a
/// journal whose header carries no seal is refused with one sentence.
#[test]
fn a_forged_journal_is_not_resumed() {
    let dir = capture("campaign-check-forged");
    let camp = dir.join("camp");
    let args = ["check", s(&dir), "--json", "--campaign-dir", s(&camp)];
    let clean = run(&args);
    let (code, expected) = report(&clean);
    let path = camp.join("units.jsonl");
    let text = std::fs::read_to_string(&path).expect("the journal");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 9, "a header and eight results: {text}");
    let mut forged: Value = serde_json::from_str(&lines[1]).expect("a result line");
    forged["result"] = serde_json::json!({"forged": true});
    lines[1] = forged.to_string();
    std::fs::write(&path, lines.join("\n") + "\n").expect("forged");
    let mut resume = args.to_vec();
    resume.push("--resume");
    let resumed = run(&resume);
    let (rcode, got) = report(&resumed);
    assert_eq!((rcode, got), (code, expected), "{}", resumed.describe());
    assert!(
        resumed
            .stderr
            .contains("1 result line(s) of the journal in"),
        "{}",
        resumed.stderr
    );
    assert_eq!(finished_before(&resumed.stderr), 7, "{}", resumed.stderr);
    // A header without a seal: the journal is not this user's cltrap's.
    let text = std::fs::read_to_string(&path).expect("the journal");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut header: Value = serde_json::from_str(&lines[0]).expect("the header");
    header.as_object_mut().expect("an object").remove("seal");
    lines[0] = header.to_string();
    std::fs::write(&path, lines.join("\n") + "\n").expect("unsealed");
    let refused = run(&resume);
    assert_eq!(refused.code, Some(2), "{}", refused.describe());
    assert!(
        refused.stderr.contains("was not written by your cltrap")
            && refused.stderr.contains("without --resume to start afresh"),
        "{}",
        refused.stderr
    );
}
