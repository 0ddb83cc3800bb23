//! `cltrap fuzz` / `cltrap solve` on the real PoCL runtime, over kernels modelled on CLFuzz's
//! hard cases (`tests/fuzz/hard.cl`): every kernel must end fully covered, or with its dead
//! branches proven unsatisfiable.

use cltrap_analyzer::executor::{DeviceSelector, Session};
use cltrap_analyzer::fuzz::campaign::Budget;
use cltrap_analyzer::fuzz::suite::SlotStatus;
use cltrap_analyzer::fuzz::{self, Settings};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz")
        .join(name)
}

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cltrap-fuzz-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn settings(solve: bool) -> Settings {
    Settings {
        budget: Budget {
            executions: Some(3000),
            time: Some(Duration::from_secs(60)),
            fruitless: None,
        },
        seed: 7,
        solve,
        worker: None,
        watchdog: Duration::from_secs(10),
        progress: false,
        device: DeviceSelector::default(),
    }
}

/// Fuzz + solve every kernel in-process; returns per kernel the slot statuses.
fn campaign(kernel: &str) -> Vec<(String, SlotStatus)> {
    let source = std::fs::read_to_string(fixture("hard.cl")).unwrap();
    let session = Session::open(&DeviceSelector::default()).expect("PoCL device");
    let targets = fuzz::targets_from_source(&source, "", Some(kernel), None, 7).unwrap();
    let o = fuzz::run_target(
        &session,
        targets.into_iter().next().unwrap(),
        &settings(true),
    )
    .unwrap();
    o.report
        .slots
        .iter()
        .map(|s| (s.label.clone(), s.status.clone()))
        .collect()
}

fn assert_complete(kernel: &str, dead: &[&str]) -> Vec<(String, SlotStatus)> {
    let slots = campaign(kernel);
    assert!(!slots.is_empty(), "{kernel}: no slots");
    for (label, st) in &slots {
        let ok = match st {
            SlotStatus::CoveredByFuzzing | SlotStatus::SolvedAndConfirmed => {
                !dead.contains(&label.as_str())
            }
            SlotStatus::Unsatisfiable => dead.contains(&label.as_str()),
            _ => false,
        };
        assert!(ok, "{kernel}: {label}: {st:?}\nall: {slots:#?}");
    }
    slots
}

#[test]
fn magic_value_is_solved() {
    let slots = assert_complete("magic", &[]);
    // Random values do not hit -2987: the true side needs the solver.
    assert!(slots
        .iter()
        .any(|(l, s)| l.contains("-2987) true") && *s == SlotStatus::SolvedAndConfirmed));
}

#[test]
fn equality_with_work_item_id() {
    assert_complete("id_equal", &[]);
}

#[test]
fn false_side_of_bound_check() {
    assert_complete("bound_check", &[]);
}

#[test]
fn five_nested_ranges() {
    let slots = assert_complete("nested", &[]);
    assert!(slots
        .iter()
        .any(|(l, s)| l.contains("e > 123456 && e < 123460) true")
            && *s == SlotStatus::SolvedAndConfirmed));
}

#[test]
fn float_comparisons() {
    assert_complete("floats", &[]);
}

#[test]
fn switch_cases() {
    assert_complete("switcher", &[]);
}

#[test]
fn element_must_hold_a_value() {
    assert_complete("element", &[]);
}

#[test]
fn dead_branch_is_proven_unsatisfiable() {
    // `uchar` promoted to int is never > 300; `(c << 9)` is int arithmetic, so it is 0 only
    // for c == 0 (reachable).
    assert_complete("dead", &["if (v > 300) true"]);
}

fn cltrap(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cltrap"))
        .args(args)
        .output()
        .expect("run cltrap");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn loop_trip_count_from_an_argument_through_the_cli_with_worker() {
    // Worker process + watchdog: a huge random trip count hangs the kernel; the campaign
    // reports it and goes on. The suite replays bit-exactly.
    let suite = temp("trip");
    let s = suite.to_str().unwrap();
    let k = fixture("hard.cl");
    let (ok, text) = cltrap(&[
        "fuzz",
        k.to_str().unwrap(),
        "--kernel",
        "trip",
        "--solve",
        "--watchdog",
        "2",
        "--out",
        s,
    ]);
    assert!(ok, "{text}");
    let row = text.lines().find(|l| l.starts_with("trip ")).expect(&text);
    let cols: Vec<&str> = row.split_whitespace().collect();
    // slots fuzzed solved dead unsupported open
    assert_eq!(cols[1], "5", "{text}");
    let covered: u32 = cols[2].parse::<u32>().unwrap() + cols[3].parse::<u32>().unwrap();
    assert_eq!(covered, 5, "{text}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(suite.join("fuzz.json")).unwrap()).unwrap();
    assert_eq!(report["kernels"][0]["kernel"], "trip");
    let (ok, text) = cltrap(&["replay", s]);
    assert!(ok && text.contains("0 mismatched"), "{text}");
}

#[test]
fn solve_completes_a_fuzzed_suite() {
    // Fuzz without solving (the magic value stays uncovered), then `cltrap solve SUITE`
    // appends the confirmed case; the suite replays and covers everything.
    let suite = temp("solve");
    let s = suite.to_str().unwrap();
    let k = fixture("hard.cl");
    let (ok, text) = cltrap(&[
        "fuzz",
        k.to_str().unwrap(),
        "--kernel",
        "magic",
        "--in-process",
        "--out",
        s,
    ]);
    assert!(ok, "{text}");
    let before = std::fs::read_to_string(suite.join("launches.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert!(text.contains("-2987) true: uncovered"), "{text}");
    let (ok, text) = cltrap(&["solve", s]);
    assert!(ok, "{text}");
    assert!(text.contains("-2987) true: solved and confirmed"), "{text}");
    let after = std::fs::read_to_string(suite.join("launches.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(after, before + 1);
    let (ok, text) = cltrap(&["replay", s]);
    assert!(ok && text.contains("0 mismatched"), "{text}");
    let (ok, text) = cltrap(&["cover", s]);
    assert!(ok, "{text}");
}

#[test]
fn init_writes_an_editable_interface() {
    let k = fixture("hard.cl");
    let (ok, text) = cltrap(&[
        "fuzz",
        k.to_str().unwrap(),
        "--kernel",
        "bound_check",
        "--init",
    ]);
    assert!(ok, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["args"][0]["output"], true, "{text}");
    assert_eq!(v["args"][1]["output"], false, "{text}");
    assert_eq!(v["args"][1]["size"], 64, "{text}");
    // Edit it: fixed n, then fuzz with it.
    let mut v = v;
    v["args"][2]["fill"] = serde_json::json!({"fixed": 10});
    v["global_size"] = serde_json::json!([32]);
    v["local_size"] = serde_json::json!([8]);
    let dir = temp("init");
    std::fs::create_dir_all(&dir).unwrap();
    let iface = dir.join("bound_check.json");
    std::fs::write(&iface, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let suite = dir.join("suite");
    let (ok, text) = cltrap(&[
        "fuzz",
        k.to_str().unwrap(),
        "--interface",
        iface.to_str().unwrap(),
        "--in-process",
        "--out",
        suite.to_str().unwrap(),
    ]);
    assert!(ok, "{text}");
    let first = std::fs::read_to_string(suite.join("launches.jsonl")).unwrap();
    let l: serde_json::Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    assert_eq!(l["global_size"], serde_json::json!([32]));
    assert_eq!(l["args"][2]["bytes"], "0x0a000000");
}
