//! `cltrap fuzz` / `cltrap solve` on the real PoCL runtime, over kernels modelled on CLFuzz's
//! hard cases (`tests/fuzz/hard.cl`): every kernel must end fully covered, or with its dead
//! branches proven unsatisfiable.

use cltrap_analyzer::executor::{DeviceSelector, Session};
use cltrap_analyzer::fuzz::campaign::Budget;
use cltrap_analyzer::fuzz::suite::SlotStatus;
use cltrap_analyzer::fuzz::{self, Settings};
use std::path::{Path, PathBuf};
use std::time::Duration;

mod common;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz")
        .join(name)
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
        limits: Default::default(),
    }
}

/// Fuzz + solve every kernel in-process; returns per kernel the slot statuses.
fn campaign(kernel: &str) -> Vec<(String, SlotStatus)> {
    let source = std::fs::read_to_string(fixture("hard.cl")).unwrap();
    let session = Session::open(&DeviceSelector::default()).expect("PoCL device");
    let targets =
        fuzz::targets_from_source(&source, "", Some(kernel), None, 7, Default::default()).unwrap();
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

/// `cltrap ARGS`: whether it succeeded, and its stdout followed by its stderr.
fn cltrap(args: &[&str]) -> (bool, String) {
    let (code, out, err) = common::cltrap(args, &[]);
    (code == 0, out + &err)
}

/// `cltrap fuzz hard.cl --kernel KERNEL EXTRA... --out OUT`.
fn fuzz_hard(kernel: &str, extra: &[&str], out: &Path) -> (bool, String) {
    let k = fixture("hard.cl");
    let mut args = vec!["fuzz", k.to_str().unwrap(), "--kernel", kernel];
    args.extend(extra);
    args.extend(["--out", out.to_str().unwrap()]);
    cltrap(&args)
}

#[test]
fn loop_trip_count_from_an_argument_through_the_cli_with_worker() {
    // Worker process + watchdog: a huge random trip count hangs the kernel; the campaign
    // reports it and goes on. The suite replays bit-exactly.
    let suite = common::temp_dir("trip");
    let s = suite.to_str().unwrap();
    let (ok, text) = fuzz_hard("trip", &["--solve", "--watchdog", "2"], &suite);
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
    let suite = common::temp_dir("solve");
    let s = suite.to_str().unwrap();
    let (ok, text) = fuzz_hard("magic", &["--in-process"], &suite);
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
    let dir = common::temp_dir("init");
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

#[test]
fn overruns_and_crashes_are_findings_and_the_campaign_goes_on() {
    let suite = common::temp_dir("overrun");
    let (ok, text) = fuzz_hard("overrun", &["--seed", "3"], &suite);
    assert!(ok, "{text}");
    assert!(
        text.contains("finding in overrun: wrote out of bounds of argument 0 (out): past its end")
            || text.contains("finding in overrun: crash"),
        "{text}"
    );
    // The campaign still produced its table and suite, and the findings replay from disk.
    assert!(text.lines().any(|l| l.starts_with("overrun ")), "{text}");
    let findings = suite.join("findings/overrun");
    let (ok, list) = cltrap(&["list", findings.to_str().unwrap()]);
    assert!(ok && list.contains("overrun"), "{list}");
}

/// A capture made by hand: one launch of `bound_check` as an application would make it
/// (NULL local size, n = 1000 >= every id, so `tid < n` is never false).
fn hand_capture(dir: &Path) {
    use cltrap_capture::*;
    let w = CaptureWriter::create(dir, &common::test_manifest("test")).unwrap();
    let src = std::fs::read_to_string(fixture("hard.cl")).unwrap();
    let ph = common::put_source_program(&w.blobs, &src, "");
    let input: Vec<f32> = (0..128).map(|i| i as f32).collect();
    let out: Vec<f32> = (0..128).map(|i| 2.0 * i as f32).collect();
    let (input, out) = (common::f32s(&input), common::f32s(&out));
    let blob = |b: &[u8]| common::put_blob(&w.blobs, b);
    w.append(common::ndrange_record(
        "bound_check",
        ph,
        vec![128],
        None,
        None,
        vec![
            ArgRecord::Buffer {
                info: common::arg_info(0, "out", "float*", "global"),
                mem: 1,
                flags: 1,
                size: 512,
                sub_of: None,
                before: blob(&[0; 512]),
                after: blob(&out),
            },
            ArgRecord::Buffer {
                info: common::arg_info(1, "in", "float*", "global"),
                mem: 2,
                flags: 4,
                size: 512,
                sub_of: None,
                before: blob(&input),
                after: blob(&input),
            },
            ArgRecord::Scalar {
                info: common::arg_info(2, "n", "uint", "private"),
                bytes: "0xe8030000".into(),
            },
        ],
    ))
    .unwrap();
}

#[test]
fn seeded_by_a_capture() {
    let cap = common::temp_dir("cap");
    hand_capture(&cap);
    let (ok, text) = cltrap(&["replay", cap.to_str().unwrap()]);
    assert!(ok && text.contains("1 matched"), "{text}");
    let suite = common::temp_dir("cap-suite");
    let (ok, text) = cltrap(&[
        "fuzz",
        cap.to_str().unwrap(),
        "--solve",
        "--in-process",
        "--out",
        suite.to_str().unwrap(),
    ]);
    assert!(ok, "{text}");
    let row = text
        .lines()
        .find(|l| l.starts_with("bound_check "))
        .expect(&text);
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!((cols[1], cols[6]), ("2", "0"), "{text}");
    // The first case is the captured launch itself (NULL local size, n = 1000).
    let first = std::fs::read_to_string(suite.join("launches.jsonl")).unwrap();
    let l: serde_json::Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    assert_eq!(l["args"][2]["bytes"], "0xe8030000");
    assert!(l.get("local_size").is_none());
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(suite.join("fuzz.json")).unwrap()).unwrap();
    assert_eq!(report["kernels"][0]["cases"][0][2], "seed 0");
}

#[test]
fn struct_fields_by_buffer_and_by_value() {
    let slots = assert_complete("structs", &[]);
    assert!(
        slots
            .iter()
            .any(|(l, s)| l.contains("probe.tag == 'q') true")
                && *s == SlotStatus::SolvedAndConfirmed)
    );
}

#[test]
fn local_ids_under_a_null_local_size() {
    let source = std::fs::read_to_string(fixture("hard.cl")).unwrap();
    let session = Session::open(&DeviceSelector::default()).expect("PoCL device");
    let mut t =
        fuzz::targets_from_source(&source, "", Some("local_eq"), None, 7, Default::default())
            .unwrap()
            .remove(0);
    t.seeds[0].local_size = None;
    let o = fuzz::run_target(&session, t, &settings(true)).unwrap();
    for s in &o.report.slots {
        assert!(
            matches!(
                s.status,
                SlotStatus::CoveredByFuzzing | SlotStatus::SolvedAndConfirmed
            ),
            "{}: {:?}",
            s.label,
            s.status
        );
    }
    let solved = o
        .campaign
        .cases
        .iter()
        .find(|c| c.origin.starts_with("solved"))
        .expect("a solved case");
    assert_eq!(solved.input.local_size, Some(vec![64]));
}

#[test]
fn element_needs_the_solver() {
    let slots = assert_complete("element_inverse", &[]);
    assert!(slots
        .iter()
        .any(|(l, s)| l.ends_with("true") && *s == SlotStatus::SolvedAndConfirmed));
}
