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
            // No wall-clock budget: the execution count bound the run, and a loaded machine
            // must not cut the fuzzing or the solver short.
            time: None,
            fruitless: None,
            exhaust: false,
        },
        seed: 7,
        solve,
        worker: None,
        watchdog: Duration::from_secs(10),
        progress: false,
        device: DeviceSelector::default(),
        limits: Default::default(),
        full_launches: false,
        check_cases: false,
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
    // Outputs start random too: the elements a kernel leaves unwritten show in the suite.
    assert_eq!(v["args"][0]["fill"], "random", "{text}");
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

/// `cltrap fuzz crashing.cl` with an interface file whose seed is `args` (global size 64).
fn fuzz_crashing(
    dir: &Path,
    kernel: &str,
    args: serde_json::Value,
    extra: &[&str],
) -> (bool, String, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let iface = dir.join(format!("{kernel}.json"));
    let spec = serde_json::json!({
        "kernel": kernel, "global_size": [64], "local_size": [16], "args": args,
    });
    std::fs::write(&iface, serde_json::to_vec_pretty(&spec).unwrap()).unwrap();
    let suite = dir.join("suite");
    let k = fixture("crashing.cl");
    let mut all = vec![
        "fuzz",
        k.to_str().unwrap(),
        "--interface",
        iface.to_str().unwrap(),
        "--watchdog",
        "2",
        "--out",
        suite.to_str().unwrap(),
    ];
    all.extend(extra);
    let (ok, text) = cltrap(&all);
    (ok, text, suite)
}

fn arg(name: &str, size: Option<u64>, fill: serde_json::Value, output: bool) -> serde_json::Value {
    let mut a = serde_json::json!({"name": name, "type": "", "fill": fill, "output": output});
    if let Some(n) = size {
        a["size"] = n.into();
    }
    a
}

fn suite_launches(suite: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(suite.join("launches.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_crashing_seed_is_a_finding_and_role_aware_inputs_cover_the_kernel() {
    // Row pointers 50 M apart: the seed reads far past every buffer and kills the worker.
    let wild: Vec<i64> = (0..65).map(|i| i * 50_000_000).collect();
    let args = serde_json::json!([
        arg("val", Some(64), serde_json::json!("random"), false),
        arg("cols", Some(64), serde_json::json!({"fixed": 7}), false),
        arg(
            "row_ptr",
            Some(65),
            serde_json::json!({ "fixed": wild }),
            false
        ),
        arg("x", Some(64), serde_json::json!("random"), false),
        arg("y", Some(64), serde_json::json!("zero"), true),
        arg("rows", None, serde_json::json!({"fixed": 64}), false),
    ]);
    let dir = common::temp_dir("crashing-seed");
    let extra = ["--seed", "5", "--budget", "400"];
    let (ok, text, suite) = fuzz_crashing(&dir, "spmv_csr", args.clone(), &extra);
    assert!(ok, "{text}");
    assert!(text.contains("finding in spmv_csr: crash"), "{text}");
    assert!(!text.contains("no test case"), "{text}");
    // Both sides of `val[j] > 0` and the loop's classes were reached by inputs that ran.
    let row = text
        .lines()
        .find(|l| l.starts_with("spmv_csr "))
        .expect(&text);
    let cols: Vec<&str> = row.split_whitespace().collect();
    let (slots, fuzzed): (u32, u32) = (cols[1].parse().unwrap(), cols[2].parse().unwrap());
    assert!(fuzzed + 1 >= slots, "{text}");
    let cases = suite_launches(&suite);
    assert!(!cases.is_empty(), "{text}");
    // The finding is kept apart, its input exactly the seed: 50 M is a row pointer there.
    let findings = suite_launches(&suite.join("findings/spmv_csr"));
    assert!(!findings.is_empty(), "{text}");
    let fcap = cltrap_capture::Capture::open(&suite.join("findings/spmv_csr")).unwrap();
    let saved = fcap
        .launches
        .iter()
        .map(|l| match &l.args[2] {
            cltrap_capture::ArgRecord::Buffer { before, .. } => {
                fcap.content(before, "row_ptr").unwrap()
            }
            other => panic!("{other:?}"),
        })
        .collect::<Vec<_>>();
    let seed: Vec<u8> = wild
        .iter()
        .flat_map(|v| (*v as i32).to_le_bytes())
        .collect();
    assert!(
        saved.contains(&seed),
        "the seed is not among the saved findings"
    );
    // Replaying the findings reproduces the crash in a worker: cltrap names the launch,
    // goes on, and exits 2 (not killed by the kernel).
    let (code, out, err) = common::cltrap(
        &["replay", suite.join("findings/spmv_csr").to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 2, "{out}{err}");
    let crashed: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("crashed the replay worker"))
        .collect();
    assert!(!crashed.is_empty(), "{out}{err}");
    assert!(
        crashed[0].starts_with("launch ") && crashed[0].contains("spmv_csr"),
        "{out}"
    );
    assert!(
        out.lines()
            .last()
            .unwrap_or("")
            .starts_with(&format!("replayed {} launch(es)", findings.len())),
        "{out}"
    );
    // Coverage over the findings leaves the crashing launch out, names it, and goes on.
    let (code, out, err) = common::cltrap(
        &["cover", suite.join("findings/spmv_csr").to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        out.contains("crashed the cover worker") && out.contains("left out of the coverage"),
        "{out}{err}"
    );
    // No case of the suite is a finding: replaying and covering it is safe.
    let (ok, replay) = cltrap(&["replay", suite.to_str().unwrap()]);
    assert!(ok && replay.contains("0 mismatched"), "{replay}");
    // The same seed gives the same campaign, worker restarts included.
    let again = common::temp_dir("crashing-seed-again");
    let (ok, text2, suite2) = fuzz_crashing(&again, "spmv_csr", args, &extra);
    assert!(ok, "{text2}");
    let strip = |v: Vec<serde_json::Value>| -> Vec<serde_json::Value> {
        v.into_iter()
            .map(|mut l| {
                l["thread"] = 0.into();
                l
            })
            .collect()
    };
    assert_eq!(strip(suite_launches(&suite2)), strip(cases));
    assert_eq!(
        suite_launches(&suite2.join("findings/spmv_csr")).len(),
        findings.len()
    );
}

#[test]
fn a_hanging_seed_is_a_finding_and_the_campaign_goes_on() {
    let args = serde_json::json!([
        arg("out", Some(64), serde_json::json!("zero"), true),
        arg("start", None, serde_json::json!({"fixed": 0}), false),
        arg("step", None, serde_json::json!({"fixed": 0}), false),
        arg("stop", None, serde_json::json!({"fixed": 10}), false),
    ]);
    let dir = common::temp_dir("hanging-seed");
    let (ok, text, suite) = fuzz_crashing(&dir, "walk", args, &["--budget", "150"]);
    assert!(ok, "{text}");
    assert!(text.contains("finding in walk: hang"), "{text}");
    assert!(!suite_launches(&suite).is_empty(), "{text}");
    assert!(
        !suite_launches(&suite.join("findings/walk")).is_empty(),
        "{text}"
    );
    // The hang reproduces under the replay worker's watchdog, which stops it.
    let (code, out, err) = common::cltrap(
        &[
            "replay",
            suite.join("findings/walk").to_str().unwrap(),
            "--watchdog",
            "3",
        ],
        &[],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("walk: error: hung"), "{out}{err}");
    let (code, out, err) = common::cltrap(
        &[
            "cover",
            suite.join("findings/walk").to_str().unwrap(),
            "--watchdog",
            "3",
        ],
        &[],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("walk: error: the kernel hung"), "{out}{err}");
}

#[test]
fn a_kernel_that_crashes_on_every_input_class_says_so() {
    let args = serde_json::json!([
        arg("out", Some(64), serde_json::json!("zero"), true),
        arg("v", None, serde_json::json!("random"), false),
    ]);
    let dir = common::temp_dir("always-wild");
    let (ok, text, suite) =
        fuzz_crashing(&dir, "always_wild", args, &["--budget", "20", "--solve"]);
    assert!(ok, "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("no test case"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("every input class") && line.contains("all-zero input"),
        "{line}"
    );
    assert!(suite_launches(&suite).is_empty(), "{text}");
}

#[test]
fn a_program_that_does_not_build_is_said_once_without_a_misleading_report_error() {
    let suite = common::temp_dir("no-build");
    let (ok, text) = fuzz_hard(
        "magic",
        &["--in-process", "--build-options=-cl-no-such-option"],
        &suite,
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("kernel magic: the program does not build"),
        "{text}"
    );
    assert!(!text.contains("cannot write"), "{text}");
    assert!(text.contains("no suite written"), "{text}");
}

/// darktable's retouch kernels index a float4 buffer with offsets read from a region buffer
/// (`in[dest_index].w = w`, dest_index from `roi_in->x`, `roi_in->width`, ...). A case whose
/// region puts the write gigabytes away crashes (or silently corrupts) whatever process runs
/// it. Fuzzing keeps it as a finding; `cltrap mutate` over that finding runs the instrumented
/// original in a worker, not in its own process (which such a case kills: SIGSEGV, or "double
/// free or corruption" for the darktable corpus kernel), survives it, and names the case as
/// "not a test case".
#[test]
fn mutate_survives_a_case_that_writes_gigabytes_out_of_bounds() {
    let dir = common::temp_dir("far-write");
    std::fs::create_dir_all(&dir).unwrap();
    let k = dir.join("far.cl");
    std::fs::write(
        &k,
        "__kernel void far_write(__global float4 *in, __global const int *roi, float v) {\n\
         \x20   const int dest = roi[0] + (int)get_global_id(0);\n\
         \x20   const float w = in[dest].w;\n\
         \x20   in[dest] = (float4)(v);\n\
         \x20   in[dest].w = w;\n\
         }\n",
    )
    .unwrap();
    let iface = serde_json::json!({
        "kernel": "far_write",
        "global_size": [4],
        "local_size": [4],
        "args": [
            {"name": "in", "type": "__global float4 *", "size": 16, "fill": "random", "output": true},
            {"name": "roi", "type": "__global const int *", "size": 1, "fill": {"fixed": 268435456}, "output": false},
            {"name": "v", "type": "float", "fill": {"fixed": 1.5}, "output": false},
        ],
    });
    let f = dir.join("far.json");
    std::fs::write(&f, serde_json::to_vec_pretty(&iface).unwrap()).unwrap();
    let suite = dir.join("suite");
    let (ok, text) = cltrap(&[
        "fuzz",
        k.to_str().unwrap(),
        "--interface",
        f.to_str().unwrap(),
        "--budget",
        "50",
        "--out",
        suite.to_str().unwrap(),
    ]);
    assert!(ok, "{text}");
    let findings = suite.join("findings/far_write");
    assert!(findings.join("launches.jsonl").exists(), "{text}");
    let (code, out, err) = common::cltrap(
        &[
            "mutate",
            findings.to_str().unwrap(),
            "--jobs",
            "1",
            "--out",
            dir.join("mutate").to_str().unwrap(),
        ],
        &[],
    );
    // Killed by a signal: code -1.
    assert_ne!(code, -1, "cltrap mutate died: {out}{err}");
    assert!(
        (out.clone() + &err).contains("not a test case"),
        "{out}{err}"
    );
}

#[test]
fn the_budget_is_the_whole_campaigns_and_the_summary_names_the_kernels_it_left_out() {
    // One execution for the whole file: the first kernel spends it, the others are not
    // fuzzed and the summary says so (a budget per kernel would fuzz all thirteen).
    let k = fixture("hard.cl");
    let (ok, text) = cltrap(&["fuzz", k.to_str().unwrap(), "--budget", "1", "--in-process"]);
    assert!(ok, "{text}");
    assert!(
        text.contains("not fuzzed: 12 of 13 kernel(s) (id_equal, bound_check, nested, floats, switcher, trip, element, dead, overrun, structs, local_eq, element_inverse): the campaign's --budget ran out before them"),
        "{text}"
    );
}

/// PoCL compiles a kernel for a local size inside the first execution with it: that first
/// execution gets the watchdog plus a compile allowance (a 1 ms watchdog would otherwise call
/// the compile a hang), later ones of the same shape the watchdog alone (a kernel that spins
/// is stopped at once).
#[test]
fn a_worker_first_execution_of_a_local_size_gets_the_compile_allowance() {
    use cltrap_analyzer::executor::{InputArg, LaunchInput};
    use cltrap_analyzer::fuzz::runner::{Ran, Runner, Worker, COMPILE_ALLOWANCE};
    // A source of its own (PoCL's kernel cache must not have it): this run compiles it.
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let source = format!(
        "// {nonce} {}\n\
         kernel void spin(global uint *out, uint n) {{\n\
           uint a = get_global_id(0);\n\
           for (uint i = 0; i < n; i++) a = a * 1664525u + 1013904223u;\n\
           out[get_global_id(0)] = a;\n\
         }}\n",
        std::process::id()
    );
    let mut worker = Worker::new(
        PathBuf::from(env!("CARGO_BIN_EXE_cltrap")),
        &source,
        "",
        &DeviceSelector::default(),
        Duration::from_millis(1),
    )
    .expect("the worker starts and builds the program");
    let input = |n: u32| LaunchInput {
        kernel: "spin".into(),
        work_dim: 1,
        global_offset: None,
        global_size: vec![64],
        local_size: Some(vec![16]),
        args: vec![
            InputArg::Buffer {
                mem: None,
                flags: 1,
                bytes: vec![0u8; 256],
            },
            InputArg::Scalar(n.to_le_bytes().to_vec()),
        ],
        stand_ins: Vec::new(),
    };
    let first = worker.run(&input(1), &[]).expect("runs");
    assert!(
        matches!(first, Ran::Done(..)),
        "the first execution (with PoCL's compile) was stopped: {first:?}"
    );
    let started = std::time::Instant::now();
    let spun = worker.run(&input(u32::MAX), &[]).expect("runs");
    assert!(matches!(spun, Ran::Hung), "{spun:?}");
    assert!(
        started.elapsed() < COMPILE_ALLOWANCE,
        "a later execution of the shape waited {:?}: more than the watchdog",
        started.elapsed()
    );
}
