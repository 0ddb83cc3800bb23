//! `cltrap cover`, `cltrap replay` and `cltrap replay --schedules` as campaigns on the real PoCL runtime: three shards
//! merged give the single run's reports, a run killed partway and resumed gives the clean
//! run's, and `--devices all` over two PoCL devices uses both and gives the same results.
//!
//! The fixture has launches of three programs and of several kernels (so the report's order
//! of programs, kernels and launches is tested across shards) and, for the shards, one launch
//! that crashes its worker (a lost unit).

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Launches of `coverage.cl` (`known`, `diverge`), `race_free.cl` (`reduce_local`) and
/// `wild.cl` (one in bounds, one that crashes the device, recorded without running).
fn fixture(name: &str, crash: bool) -> Fixture {
    let mut f = Fixture::new(name);
    f.launch_known(16, 4);
    f.launch_reduce_local(64, 16);
    f.launch_diverge(2);
    f.launch_known(10, 3);
    let long = |v: i64| A::Val("at", "long", v.to_le_bytes().to_vec());
    f.launch(
        "wild.cl",
        "wild",
        &[4],
        None,
        None,
        vec![A::Buf("out", "int*", i32s(&[0; 4])), long(2)],
    );
    if crash {
        f.unrun = true;
        f.launch(
            "wild.cl",
            "wild",
            &[4],
            None,
            None,
            vec![A::Buf("out", "int*", i32s(&[0; 4])), long(1 << 44)],
        );
        f.unrun = false;
    }
    f.launch_known(16, 0);
    f.launch_reduce_local(32, 8);
    // The inputs of launch 0 again: `--per-kernel` quotes launch 0's verdict.
    f.launch_known(16, 4);
    f
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A report file's text with the folder it was written into replaced by `OUT`, so reports
/// written into different folders compare (LCOV and JSON name their sources by full path).
fn read_in(dir: &Path, file: &str) -> String {
    let text = std::fs::read_to_string(dir.join(file))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()));
    text.replace(s(dir), "OUT")
}

/// The stdout lines a report is judged by: everything but the lines naming written files.
fn verdict_lines(out: &str) -> String {
    out.lines()
        .filter(|l| !l.starts_with("wrote "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The devices the journal in `campaign` records, one entry per finished unit.
fn journal_devices(campaign: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(campaign.join("units.jsonl")).expect("a journal");
    text.lines()
        .skip(1)
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v["device"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Finished lines in the journal of `campaign` (0 when it has none yet).
fn journal_lines(campaign: &Path) -> usize {
    std::fs::read_to_string(campaign.join("units.jsonl"))
        .map(|t| t.lines().skip(1).filter(|l| l.ends_with('}')).count())
        .unwrap_or(0)
}

/// One command: its arguments after the capture, and the report files it writes (into the
/// folder given to `args`).
struct Cmd {
    sub: &'static str,
    files: &'static [&'static str],
    args: fn(&Path) -> Vec<String>,
}

const COVER: Cmd = Cmd {
    sub: "cover",
    files: &["cov.json", "cov.info"],
    args: |out| {
        vec![
            "--json".into(),
            s(&out.join("cov.json")).into(),
            "--lcov".into(),
            s(&out.join("cov.info")).into(),
        ]
    },
};

const REPLAY: Cmd = Cmd {
    sub: "replay",
    files: &[],
    args: |_| Vec::new(),
};

/// `replay --schedules` with `--per-kernel 1`: launches of one kernel and NDRange after the
/// first are skipped at the limit or quote the verdict of the launch whose inputs they repeat.
const SCHEDULES: Cmd = Cmd {
    sub: "replay",
    files: &[],
    args: |_| {
        ["--schedules", "3", "--per-kernel", "1", "--no-race-check"]
            .map(String::from)
            .to_vec()
    },
};

/// Runs `cltrap SUB CAPTURE ARGS EXTRA`; returns (code, stdout, stderr).
fn run(
    c: &Cmd,
    capture: &Path,
    out: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (i32, String, String) {
    let mut args: Vec<String> = vec![c.sub.into(), s(capture).into()];
    args.extend((c.args)(out));
    args.extend(extra.iter().map(|e| e.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    cltrap(&refs, env)
}

/// A clean single run into `out`, its campaign in `out/campaign`.
fn clean(c: &Cmd, capture: &Path, out: &Path) -> (i32, String) {
    let campaign = out.join("campaign");
    let (code, stdout, stderr) = run(c, capture, out, &["--campaign-dir", s(&campaign)], &[]);
    assert!(
        code == 0 || code == 2,
        "{} exited {code}\n{stdout}\n{stderr}",
        c.sub
    );
    (code, stdout)
}

fn assert_same_reports(c: &Cmd, a: &Path, b: &Path) {
    for f in c.files {
        assert_eq!(read_in(a, f), read_in(b, f), "{} {f} differs", c.sub);
    }
}

/// Returns the merge's stdout.
fn shards_merge_to_the_single_run(c: &Cmd, name: &str) -> String {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let f = fixture(name, true);
    let single = temp_dir(&format!("{name}-single"));
    std::fs::create_dir_all(&single).unwrap();
    let (code, out) = clean(c, &f.dir, &single);
    let work = temp_dir(&format!("{name}-shards"));
    std::fs::create_dir_all(&work).unwrap();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for i in 0..3 {
        let d = work.join(format!("shard-{i}"));
        let shard = format!("{i}/3");
        // The shards run the same command line as the single run (same report paths), so
        // they are shards of that campaign; they write no report themselves.
        let (sc, so, se) = run(
            c,
            &f.dir,
            &single,
            &["--shard", &shard, "--campaign-dir", s(&d)],
            &[],
        );
        assert_eq!(sc, 0, "shard {shard}\n{so}\n{se}");
        assert!(so.is_empty(), "a shard prints no report: {so}");
        assert!(se.contains(&format!("shard {shard}:")), "{se}");
        dirs.push(d);
    }
    let merged = work.join("merged");
    let mut args: Vec<&str> = vec!["merge", s(&merged)];
    args.extend(dirs.iter().map(|d| s(d)));
    let (mc, mo, me) = cltrap(&args, &[]);
    assert_eq!(mc, code, "merge\n{mo}\n{me}");
    assert_eq!(verdict_lines(&mo), verdict_lines(&out), "{me}");
    assert_same_reports(c, &single, &merged);
    mo
}

fn a_killed_run_resumes_to_the_clean_run(c: &Cmd, name: &str) {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let f = fixture(name, false);
    let single = temp_dir(&format!("{name}-clean"));
    std::fs::create_dir_all(&single).unwrap();
    let (code, out) = clean(c, &f.dir, &single);
    let total = journal_lines(&single.join("campaign"));

    let killed = temp_dir(&format!("{name}-killed"));
    std::fs::create_dir_all(&killed).unwrap();
    let campaign = killed.join("campaign");
    let mut args: Vec<String> = vec![c.sub.into(), s(&f.dir).into()];
    args.extend((c.args)(&killed));
    args.extend(["--campaign-dir".to_string(), s(&campaign).to_string()]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_cltrap"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("cltrap starts");
    // SIGKILL once the first unit is in the journal: no report, no clean-up.
    let start = Instant::now();
    while journal_lines(&campaign) == 0 && start.elapsed() < Duration::from_secs(120) {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill();
    let _ = child.wait();
    let before = journal_lines(&campaign);
    assert!(before >= 1, "the killed run finished no unit");
    eprintln!("killed with {before} of {total} unit(s) finished");

    let mut resume = args.clone();
    resume.push("--resume".into());
    let refs: Vec<&str> = resume.iter().map(String::as_str).collect();
    let (rc, ro, re) = cltrap(&refs, &[]);
    assert_eq!(rc, code, "resume\n{ro}\n{re}");
    if before < total {
        assert!(
            re.contains(&format!("{before} of {total} unit(s) finished before")),
            "{re}"
        );
    }
    assert_eq!(journal_lines(&campaign), total, "{re}");
    assert_eq!(
        verdict_lines(&ro),
        verdict_lines(&out).replace(s(&single), s(&killed)),
        "{re}"
    );
    assert_same_reports(c, &single, &killed);
}

fn two_devices_share_the_units(c: &Cmd, name: &str) {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let f = fixture(name, false);
    let two = [("POCL_DEVICES", "pthread pthread")];
    let single = temp_dir(&format!("{name}-one"));
    std::fs::create_dir_all(&single).unwrap();
    let (code, out) = clean(c, &f.dir, &single);
    let both = temp_dir(&format!("{name}-both"));
    std::fs::create_dir_all(&both).unwrap();
    let campaign = both.join("campaign");
    let (bc, bo, be) = run(
        c,
        &f.dir,
        &both,
        &["--devices", "all", "--campaign-dir", s(&campaign)],
        &two,
    );
    assert_eq!(bc, code, "{bo}\n{be}");
    assert!(be.contains("2 worker(s) on 2 device(s)"), "{be}");
    let devices = journal_devices(&campaign);
    for d in ["0:0 ", "0:1 "] {
        assert!(
            devices.iter().any(|x| x.starts_with(d)),
            "no unit ran on device {d}: {devices:?}"
        );
    }
    assert_eq!(
        verdict_lines(&bo),
        verdict_lines(&out).replace(s(&single), s(&both)),
        "{be}"
    );
    assert_same_reports(c, &single, &both);
}

#[test]
fn cover_shards_merge_to_the_single_run() {
    let out = shards_merge_to_the_single_run(&COVER, "cover-shards");
    assert!(
        out.contains("launch 5 wild: error: the kernel crashed the cover worker"),
        "{out}"
    );
}

#[test]
fn cover_killed_and_resumed_equals_a_clean_run() {
    a_killed_run_resumes_to_the_clean_run(&COVER, "cover-resume");
}

#[test]
fn cover_on_two_devices_equals_one() {
    two_devices_share_the_units(&COVER, "cover-devices");
}

#[test]
fn replay_shards_merge_to_the_single_run() {
    let out = shards_merge_to_the_single_run(&REPLAY, "replay-shards");
    assert!(
        out.contains("\nlaunch 5 wild: error: the kernel crashed the replay worker"),
        "{out}"
    );
    assert!(out.contains("\nreplayed 9 launch(es): 8 matched, 0 mismatched, 0 skipped, 1 failed; 3 program(s) built; device "), "{out}");
}

#[test]
fn replay_killed_and_resumed_equals_a_clean_run() {
    a_killed_run_resumes_to_the_clean_run(&REPLAY, "replay-resume");
}

#[test]
fn replay_on_two_devices_equals_one() {
    two_devices_share_the_units(&REPLAY, "replay-devices");
}

#[test]
fn schedules_shards_merge_to_the_single_run() {
    let out = shards_merge_to_the_single_run(&SCHEDULES, "schedules-shards");
    // Launch 8 repeats launch 0's inputs and ran in another shard: its line quotes launch
    // 0's verdict all the same.
    assert!(out.contains("\nlaunch 8 known: same kernel, sizes and inputs as launch #0: not classified again (launch #0: deterministic)"), "{out}");
}

#[test]
fn schedules_killed_and_resumed_equals_a_clean_run() {
    a_killed_run_resumes_to_the_clean_run(&SCHEDULES, "schedules-resume");
}

#[test]
fn schedules_on_two_devices_equals_one() {
    two_devices_share_the_units(&SCHEDULES, "schedules-devices");
}
