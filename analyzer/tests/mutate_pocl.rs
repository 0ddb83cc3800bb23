//! `cltrap mutate` on the real PoCL runtime, with hand-checked kernels (`tests/mutate/`):
//! killing and surviving suites, a barrier removal only killed under permuted schedules, an
//! endless loop (TIMEOUT), a crash (RUNTIME-ERROR), a trivially equivalent mutant, and the
//! same verdicts with one schema as with one compile per mutant.

mod common;
use common::*;

use serde_json::Value;
use std::collections::BTreeMap;

/// Groups run one after the other on one PoCL thread (see `swap_pairs.cl`).
const ENV: &[(&str, &str)] = &[("POCL_MAX_PTHREAD_COUNT", "1")];

fn fixture(name: &str) -> Fixture {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    std::env::set_var("POCL_MAX_PTHREAD_COUNT", "1");
    Fixture::new(name)
}

fn mutate(f: &Fixture, extra: &[&str]) -> (String, BTreeMap<String, Value>) {
    let dir = f.dir.to_str().unwrap();
    let json = f.dir.join("report.json");
    let mut args = vec!["mutate", dir, "--json", json.to_str().unwrap(), "--fresh"];
    args.extend_from_slice(extra);
    let (code, out, err) = cltrap(&args, ENV);
    assert_eq!(code, 0, "{out}\n{err}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let mut by_replacement = BTreeMap::new();
    for file in report["files"].as_object().unwrap().values() {
        for m in file["mutants"].as_array().unwrap() {
            let key = format!(
                "{}:{}:{} {}",
                m["mutatorName"].as_str().unwrap(),
                m["location"]["start"]["line"],
                m["location"]["start"]["column"],
                m["replacement"].as_str().unwrap()
            );
            by_replacement.insert(key, m.clone());
        }
    }
    (out, by_replacement)
}

/// The cltrap status of a mutant (kept in `statusReason` as `STATUS: why`).
fn status(m: &BTreeMap<String, Value>, key: &str) -> String {
    let v = m.get(key).unwrap_or_else(|| {
        panic!(
            "no mutant {key}; have:\n{}",
            m.keys().cloned().collect::<Vec<_>>().join("\n")
        )
    });
    v["statusReason"]
        .as_str()
        .unwrap()
        .split(':')
        .next()
        .unwrap()
        .to_string()
}

fn threshold_suite(name: &str, values: &[i32]) -> Fixture {
    let mut f = fixture(name);
    f.launch(
        "../mutate/threshold.cl",
        "threshold",
        &[values.len() as u64],
        None,
        None,
        vec![
            A::Buf("in", "int*", i32s(values)),
            A::Buf("out", "int*", i32s(&vec![0; values.len()])),
            int("t", 5),
        ],
    );
    f
}

#[test]
fn a_suite_with_the_boundary_value_kills_the_boundary_mutant_a_weaker_one_does_not() {
    let strong = threshold_suite("strong", &[1, 5, 9, 4]);
    let (out, m) = mutate(
        &strong,
        &["--operators", "relational_boundary,relational_negation"],
    );
    println!("{out}");
    assert_eq!(status(&m, "relational_boundary:5:20 <="), "KILLED", "{out}");
    let weak = threshold_suite("weak", &[1, 9, 4, 8]);
    let (out, m) = mutate(
        &weak,
        &["--operators", "relational_boundary,relational_negation"],
    );
    println!("{out}");
    assert_eq!(
        status(&m, "relational_boundary:5:20 <="),
        "SURVIVED",
        "{out}"
    );
    assert_eq!(status(&m, "relational_negation:5:20 >="), "KILLED", "{out}");
    assert!(
        out.contains("-    out[i] = in[i] < t ? 1 : 0;\n+    out[i] = in[i] <= t ? 1 : 0;"),
        "{out}"
    );
}

fn swap_pairs_suite(name: &str) -> Fixture {
    let mut f = fixture(name);
    let groups = 8usize;
    let mut input: Vec<i32> = (0..2 * groups as i32).map(|i| 10 * i + 3).collect();
    // Work-item 1 of group 0 holds 0: what a fresh PoCL local memory holds too, so the first
    // group run by a new process reads the right value from "stale" memory as well.
    input[1] = 0;
    // The prefetch of the last group reads two more elements: the first pair again.
    input.extend_from_slice(&[input[0], input[1]]);
    f.launch(
        "../mutate/swap_pairs.cl",
        "swap_pairs",
        &[2 * groups as u64],
        Some(&[2]),
        None,
        vec![
            A::Buf("in", "int*", i32s(&input)),
            A::Buf("out", "int*", i32s(&vec![0; 2 * groups])),
        ],
    );
    f
}

#[test]
fn removing_the_first_barrier_is_only_killed_under_permuted_schedules() {
    let f = swap_pairs_suite("barrier");
    let ops = ["--operators", "barrier_removal", "--repeats", "2"];
    let (out, m) = mutate(&f, &ops);
    println!("{out}");
    assert!(
        !out.contains("compiled on its own"),
        "barrier mutants live in the schema (as kernel copies): {out}"
    );
    assert_eq!(
        status(&m, "barrier_removal:12:5 (void)0"),
        "SURVIVED",
        "{out}"
    );
    assert_eq!(
        status(&m, "barrier_removal:14:5 (void)0"),
        "KILLED",
        "{out}"
    );
    let mut with = ops.to_vec();
    with.extend(["--schedules", "4"]);
    let (out, m) = mutate(&f, &with);
    println!("{out}");
    let s = status(&m, "barrier_removal:12:5 (void)0");
    assert!(s == "KILLED" || s == "UNDECIDED", "{out}");
    assert!(
        m["barrier_removal:12:5 (void)0"]["statusReason"]
            .as_str()
            .unwrap()
            .contains("under schedule seed"),
        "{out}"
    );
}

fn steps_suite(name: &str) -> Fixture {
    let mut f = fixture(name);
    let input: Vec<u32> = vec![6, 7, 27, 1];
    f.launch(
        "../mutate/steps.cl",
        "steps",
        &[4],
        None,
        None,
        vec![
            A::Buf("in", "uint*", u32s(&input)),
            A::Buf("out", "uint*", u32s(&[0; 4])),
        ],
    );
    f
}

#[test]
fn an_endless_loop_times_out_by_watchdog_or_deadline_and_the_campaign_goes_on() {
    let f = steps_suite("loop");
    let ops = ["--operators", "condition,relational_negation"];
    let times_out_by = |extra: &[&str], reason: &str| {
        let mut args = ops.to_vec();
        args.extend(extra);
        let (out, m) = mutate(&f, &args);
        println!("{out}");
        assert_eq!(status(&m, "condition:6:12 1"), "TIMEOUT", "{out}");
        assert!(
            m["condition:6:12 1"]["statusReason"]
                .as_str()
                .unwrap()
                .contains(reason),
            "{out}"
        );
        assert_eq!(status(&m, "condition:6:12 0"), "KILLED", "{out}");
        assert_eq!(status(&m, "relational_negation:6:14 =="), "KILLED", "{out}");
    };
    times_out_by(&["--loop-budget", "100000"], "watchdog");
    // Without the in-kernel budget, the process deadline catches it and kills the worker;
    // the other mutants are still decided. (With one PoCL thread, the four work-items' 4e9
    // iterations each take far longer than the 3 s deadline, about 14 s on a two-core test
    // machine; the deadline is far above the other mutants' runs, even when stalled.)
    times_out_by(
        &[
            "--loop-budget",
            "4000000000",
            "--timeout-ms",
            "3000",
            "--jobs",
            "1",
        ],
        "deadline",
    );
}

fn halving_suite(name: &str) -> Fixture {
    let mut f = fixture(name);
    let input: Vec<i32> = (0..32).map(|i| i * 3 - 20).collect();
    f.launch(
        "../mutate/halving.cl",
        "halving",
        &[32],
        Some(&[16]),
        None,
        vec![
            A::Buf("in", "int*", i32s(&input)),
            A::Buf("out", "int*", i32s(&[0; 2])),
        ],
    );
    f
}

#[test]
fn an_endless_loop_with_a_barrier_is_stopped_by_the_barrier_watchdog_in_both_modes() {
    let f = halving_suite("barrier-loop");
    // A deadline of a minute: a TIMEOUT here can only come from the in-kernel watchdog.
    let ops = ["--operators", "condition", "--timeout-ms", "60000"];
    let (schema_out, schema) = mutate(&f, &ops);
    let mut single_ops = ops.to_vec();
    single_ops.push("--per-mutant-compile");
    let (single_out, single) = mutate(&f, &single_ops);
    println!("{schema_out}\n{single_out}");
    let endless = "condition:9:22 1";
    for (m, out) in [(&schema, &schema_out), (&single, &single_out)] {
        assert_eq!(status(m, endless), "TIMEOUT", "{out}");
        let why = m[endless]["statusReason"].as_str().unwrap();
        assert!(
            why.contains("a loop with a barrier ran past its budget of 4096 iterations"),
            "{why}"
        );
        assert_eq!(status(m, "condition:9:22 0"), "KILLED", "{out}");
    }
    assert_eq!(statuses(&schema), statuses(&single));
}

fn shifted_suite(name: &str) -> Fixture {
    let mut f = fixture(name);
    let input: Vec<i32> = (0..8).map(|i| i * 3 - 7).collect();
    f.launch(
        "../mutate/shifted.cl",
        "shifted",
        &[8],
        None,
        None,
        vec![
            A::Buf("in", "int*", i32s(&input)),
            A::Buf("out", "int*", i32s(&[0; 8])),
            A::Val("base", "long", (1i64 << 40).to_le_bytes().to_vec()),
        ],
    );
    f
}

#[test]
fn a_crashing_mutant_is_a_runtime_error_and_x_times_1_to_x_over_1_is_equivalent() {
    let f = shifted_suite("crash");
    let (out, m) = mutate(&f, &["--operators", "arithmetic"]);
    println!("{out}");
    assert_eq!(status(&m, "arithmetic:6:32 -"), "RUNTIME-ERROR", "{out}");
    assert!(
        m["arithmetic:6:32 -"]["statusReason"]
            .as_str()
            .unwrap()
            .contains("SIGSEGV"),
        "{out}"
    );
    assert_eq!(status(&m, "arithmetic:7:24 +"), "RUNTIME-ERROR", "{out}");
    assert_eq!(status(&m, "arithmetic:7:32 /"), "EQUIVALENT", "{out}");
}

fn statuses(m: &BTreeMap<String, Value>) -> BTreeMap<String, String> {
    m.keys().map(|k| (k.clone(), status(m, k))).collect()
}

#[test]
fn a_reduction_schema_gives_the_verdicts_of_one_compile_per_mutant_and_stray_writes_hit_guard_zones(
) {
    // PoCL 3.1 once gave `lid == 0` → `lid != 0` of this loop-and-barrier reduction KILLED in
    // the schema and SURVIVED alone: its optimiser unswitched the work-item loops on the
    // selector. The schema reads the selector through a volatile local since.
    let f = halving_suite("same-halving");
    let ops = [
        "--operators",
        "traditional,id_swap,id_offset,local_to_private",
    ];
    let (schema_out, schema) = mutate(&f, &ops);
    let mut single_ops = ops.to_vec();
    single_ops.push("--per-mutant-compile");
    let (single_out, single) = mutate(&f, &single_ops);
    println!("{schema_out}\n{single_out}");
    assert!(schema.len() >= 10, "{schema_out}");
    // `__local int tmp[16]` turned private is a kernel copy in the schema.
    assert!(schema.contains_key("local_to_private:5:5 "), "{schema_out}");
    assert!(!schema_out.contains("compiled on its own"), "{schema_out}");
    assert_eq!(
        crash_or_hang_as_one(statuses(&schema)),
        crash_or_hang_as_one(statuses(&single)),
        "{schema_out}\n{single_out}"
    );
    // `out[get_group_id(0) ± 1]`: group 1 writes one int past `out`, group 0 one before it.
    // Without guard zones that write lands in the worker's heap (a crash, a hang or nothing,
    // depending on what lies there); with them it is the same finding every time, in both modes.
    for m in [&schema, &single] {
        for (key, place) in [
            (
                "id_offset:15:13 (get_group_id(0)+1)",
                "4 bytes past its end",
            ),
            (
                "id_offset:15:13 (get_group_id(0)-1)",
                "4 bytes before its start",
            ),
        ] {
            assert_eq!(status(m, key), "RUNTIME-ERROR", "{schema_out}");
            let why = m[key]["statusReason"].as_str().unwrap_or_default();
            assert!(
                why.contains(&format!(
                    "wrote out of bounds of argument 1 (out, int*): up to {place} (caught in its guard zone)"
                )),
                "{why}"
            );
        }
    }
}

#[test]
fn one_schema_and_one_compile_per_mutant_give_the_same_verdicts() {
    for f in [
        swap_pairs_suite("same-swap"),
        threshold_suite("same-threshold", &[1, 5, 9, 4]),
    ] {
        let (schema_out, schema) = mutate(&f, &["--loop-budget", "100000"]);
        let (single_out, single) = mutate(&f, &["--loop-budget", "100000", "--per-mutant-compile"]);
        println!("{schema_out}\n{single_out}");
        assert!(schema.len() >= 6, "{schema_out}");
        assert!(
            !schema_out.contains("barrier_removal, line")
                && !schema_out.contains("barrier_fence, line"),
            "barrier mutants live in the schema: {schema_out}"
        );
        // Removing a barrier makes the kernel racy, and without swap_pairs' first barrier
        // group 0's work-item 0 reads local memory nobody wrote in this launch: whatever an
        // earlier kernel run in the same worker process left there (seen: KILLED in 1 of 15
        // schema runs, `got 23`). So barrier removals only have to be decided by running;
        // `removing_the_first_barrier_is_only_killed_under_permuted_schedules` pins them down.
        let (racy_schema, schema) = split_barrier_removals(statuses(&schema));
        let (racy_single, single) = split_barrier_removals(statuses(&single));
        assert_eq!(
            racy_schema.keys().collect::<Vec<_>>(),
            racy_single.keys().collect::<Vec<_>>()
        );
        for s in racy_schema.values().chain(racy_single.values()) {
            assert!(
                ["KILLED", "SURVIVED", "UNDECIDED"].contains(&s.as_str()),
                "{s}\n{schema_out}\n{single_out}"
            );
        }
        assert_eq!(
            crash_or_hang_as_one(schema),
            crash_or_hang_as_one(single),
            "{schema_out}\n{single_out}"
        );
    }
}

type Statuses = BTreeMap<String, String>;

/// (barrier removals, the rest).
fn split_barrier_removals(m: Statuses) -> (Statuses, Statuses) {
    m.into_iter()
        .partition(|(k, _)| k.starts_with("barrier_removal:"))
}

/// Statuses with TIMEOUT and RUNTIME-ERROR as one: a mutant that indexes far out of bounds
/// (`-(get_global_id(0))`) crashes the worker or hangs it depending on what the access hits in
/// that process's memory, in either mode; both are detections of the same mutant.
fn crash_or_hang_as_one(m: BTreeMap<String, String>) -> BTreeMap<String, String> {
    m.into_iter()
        .map(|(k, s)| match s.as_str() {
            "TIMEOUT" | "RUNTIME-ERROR" => (k, "CRASH-OR-HANG".to_string()),
            _ => (k, s),
        })
        .collect()
}

/// The journals of the campaigns run over `dir` (one folder per command line).
fn journals(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir.join("campaigns"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path().join("units.jsonl"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_second_run_resumes_from_the_campaign_journal_and_the_reports_are_written() {
    let f = threshold_suite("resume", &[1, 5, 9, 4]);
    let dir = f.dir.to_str().unwrap();
    let json = f.dir.join("again.json");
    let html = f.dir.join("report.html");
    let base = [
        "mutate",
        dir,
        "--operators",
        "traditional",
        "--json",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ];
    let (code, first, err) = cltrap(&base, ENV);
    assert_eq!(code, 0, "{first}\n{err}");
    let first_json = std::fs::read_to_string(&json).unwrap();
    let js = journals(&f.dir);
    assert_eq!(js.len(), 1, "{js:?}");
    let lines = std::fs::read_to_string(&js[0]).unwrap().lines().count();
    assert!(lines >= 4, "{first}");
    // With --resume nothing is run again: the journal does not grow, the reports agree.
    let mut again = base.to_vec();
    again.push("--resume");
    let (code, out, err) = cltrap(&again, ENV);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(err.contains("finished before"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&js[0]).unwrap().lines().count(),
        lines
    );
    assert_eq!(out, first);
    assert_eq!(std::fs::read_to_string(&json).unwrap(), first_json);
    let again: Value = serde_json::from_str(&first_json).unwrap();
    assert_eq!(again["schemaVersion"], "1");
    let file = again["files"].as_object().unwrap().values().next().unwrap();
    assert!(file["source"]
        .as_str()
        .unwrap()
        .contains("__kernel void threshold"));
    // Other settings (here: repeats) are another campaign: nothing is reused.
    let mut other = base.to_vec();
    other.extend(["--repeats", "2", "--resume"]);
    let (code, out, err) = cltrap(&other, ENV);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(err.contains("no journal yet"), "{err}");
    assert_eq!(journals(&f.dir).len(), 2);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h2>Per kernel</h2>") && page.contains("id=\"report\""));
    assert!(page.contains("relational_boundary"));
}

#[test]
fn code_no_test_reaches_is_no_coverage_and_is_not_run() {
    // Every input is already 1: the loop body never runs.
    let mut f = fixture("nocov");
    f.launch(
        "../mutate/steps.cl",
        "steps",
        &[4],
        None,
        None,
        vec![
            A::Buf("in", "uint*", u32s(&[1, 1, 1, 1])),
            A::Buf("out", "uint*", u32s(&[0; 4])),
        ],
    );
    let (out, m) = mutate(
        &f,
        &["--operators", "arithmetic,increment,relational_negation"],
    );
    println!("{out}");
    let in_body: Vec<&String> = m
        .keys()
        .filter(|k| k.contains(":7:") || k.contains(":8:"))
        .collect();
    assert!(in_body.len() >= 3, "{out}");
    for k in in_body {
        assert_eq!(status(&m, k), "NO-COVERAGE", "{k}\n{out}");
        assert!(
            m[k]["statusReason"].as_str().unwrap().contains("6:12"),
            "{out}"
        );
    }
    assert_eq!(status(&m, "relational_negation:6:14 =="), "KILLED", "{out}");
}

#[test]
fn mutants_in_a_right_operand_of_and_that_never_runs_are_no_coverage() {
    let mut f = fixture("gated");
    f.launch(
        "../mutate/gated.cl",
        "gated",
        &[4],
        None,
        None,
        vec![
            A::Buf("in", "int*", i32s(&[0, -3, -7, -1])),
            A::Buf("out", "int*", i32s(&[0; 4])),
            int("limit", 5),
        ],
    );
    let (out, m) = mutate(
        &f,
        &[
            "--operators",
            "arithmetic,relational_boundary,relational_negation",
        ],
    );
    println!("{out}");
    // `v * 3 > limit` starts at column 24; `v > 0` (line 6, column 15) is never true.
    let rhs: Vec<&String> = m
        .keys()
        .filter(|k| {
            let col: u32 = k
                .split(':')
                .nth(2)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            k.contains(":6:") && col >= 24
        })
        .collect();
    assert!(rhs.len() >= 3, "{out}");
    for k in rhs {
        assert_eq!(status(&m, k), "NO-COVERAGE", "{k}\n{out}");
        assert!(
            m[k]["statusReason"].as_str().unwrap().contains("6:15"),
            "{out}"
        );
    }
    // The left operand runs in every test case: its mutants are run.
    assert_ne!(
        status(&m, "relational_boundary:6:17 >="),
        "NO-COVERAGE",
        "{out}"
    );
}

#[test]
fn a_program_the_driver_cannot_run_as_a_schema_is_evaluated_one_compile_per_mutant() {
    let mut f = fixture("unrunnable");
    let mut seed = 1u32;
    let data: Vec<u8> = (0..3000)
        .map(|_| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (seed >> 16) as u8
        })
        .collect();
    let mut bins = vec![0u32; 64];
    for v in data.iter().filter(|v| **v != 255) {
        bins[usize::from(*v >> 2)] += 1;
    }
    let (_, outputs) = f.launch(
        "../mutate/histogram.cl",
        "histogram",
        &[256],
        Some(&[32]),
        None,
        vec![
            A::Buf("data", "uchar*", data),
            int("n", 3000),
            A::Buf("bins", "uint*", u32s(&[0; 64])),
        ],
    );
    assert_eq!(outputs[2], Some(u32s(&bins)), "the original counts right");
    let ops = [
        "--operators",
        "dimension_swap,compound_assignment,condition",
    ];
    let (out, m) = mutate(&f, &ops);
    println!("{out}");
    let crashed = statuses(&m)
        .values()
        .filter(|s| *s == "RUNTIME-ERROR")
        .count();
    // Either PoCL runs the schema, or the campaign said so and compiled each mutant: most
    // mutants get real verdicts either way (without the fallback, every one would be a crash).
    assert!(crashed * 2 < m.len(), "{crashed} of {}\n{out}", m.len());
    if out.contains("driver cannot run the original through the mutant schema") {
        assert!(
            out.contains("evaluated again with one compile per mutant"),
            "{out}"
        );
    }
}

fn tce_suite(name: &str) -> Fixture {
    let mut f = fixture(name);
    // Pairs (a, b) with a > b, a < b, a == b and negative values: max and abs are exercised.
    let input: Vec<i32> = vec![5, 2, -3, 4, 7, 7, -6, -9];
    f.launch(
        "../../../kernel/tests/kernels/tce_equivalent.cl",
        "tce_equivalent",
        &[4],
        None,
        None,
        vec![
            A::Buf("in", "int*", i32s(&input)),
            A::Buf("out", "int*", i32s(&[0; 4])),
        ],
    );
    f
}

#[test]
fn survivors_with_the_originals_optimised_code_are_equivalent_and_tce_can_be_turned_off() {
    let f = tce_suite("tce");
    let ops = ["--operators", "relational_boundary,relational_negation"];
    let (out, with_tce) = mutate(&f, &ops);
    // `a > b ? a : b` → `>=` is still the maximum, `a < 0 ? -a : a` → `<=` still the
    // absolute value: no test can kill them, and clang -O2 compiles them to the original's code.
    let max_ge = "relational_boundary:6:16 >=";
    let abs_le = "relational_boundary:7:17 <=";
    for key in [max_ge, abs_le] {
        assert_eq!(status(&with_tce, key), "EQUIVALENT", "{key}\n{out}");
        let why = with_tce[key]["statusReason"].as_str().unwrap();
        assert!(
            why.contains("same optimised LLVM IR as the original"),
            "{why}"
        );
    }
    // A mutant the suite kills is never compared, and negations of the same comparisons are
    // killed (max becomes min).
    assert_eq!(
        status(&with_tce, "relational_negation:6:16 <="),
        "KILLED",
        "{out}"
    );
    let (out_off, without) = mutate(&f, &[&ops[..], &["--no-tce"]].concat());
    for key in [max_ge, abs_le] {
        assert_eq!(status(&without, key), "SURVIVED", "{key}\n{out_off}");
    }
}

/// Inputs on which `a*b + c` fused (one rounding) and unfused (two) differ: the product
/// `1 + 2^-11 + 2^-24` rounds to `1 + 2^-11`, so unfused the sum is 0 and fused `2^-24`.
fn contract_suite(name: &str) -> Fixture {
    let mut f = fixture(name);
    let x = 1.0f32 + f32::powi(2.0, -12);
    let a = vec![x, x, 2.0, 3.0];
    let b = vec![x, x, 0.5, 1.5];
    let c = vec![
        -(1.0 + f32::powi(2.0, -11)),
        -(1.0 + f32::powi(2.0, -11)),
        1.0,
        -4.5,
    ];
    f.launch(
        "../mutate/contract.cl",
        "contract",
        &[4],
        None,
        None,
        vec![
            A::Buf("a", "float*", f32s(&a)),
            A::Buf("b", "float*", f32s(&b)),
            A::Buf("c", "float*", f32s(&c)),
            A::Buf("out", "float*", f32s(&[0.0; 4])),
            int("n", 4),
        ],
    );
    f
}

#[test]
fn a_launch_whose_result_depends_on_contraction_stays_a_test_case() {
    // In the schema, the unmutated path must contract `a*b + c` as the original build does:
    // else every mutant run through it differs from the recording, and `i <= n` (which
    // changes nothing for i < 4 = n) would be "killed".
    let f = contract_suite("contract");
    for mode in [&[][..], &["--per-mutant-compile"][..]] {
        let mut args = vec!["--operators", "arithmetic,relational_boundary"];
        args.extend_from_slice(mode);
        let (out, m) = mutate(&f, &args);
        println!("{out}");
        assert!(!out.contains("not a test case"), "{out}");
        assert_eq!(
            status(&m, "relational_boundary:7:11 <="),
            "SURVIVED",
            "{out}"
        );
        assert_eq!(status(&m, "arithmetic:7:30 /"), "KILLED", "{out}");
        assert_eq!(status(&m, "arithmetic:7:37 -"), "KILLED", "{out}");
    }
}

#[test]
fn a_campaign_without_test_cases_is_an_error_and_shows_no_score() {
    // The recording says 7 where the kernel writes 1: the original does not reproduce it.
    let dir = temp_dir("no-test-case");
    let writer = cltrap_capture::CaptureWriter::create(&dir, &test_manifest("mutate test"))
        .expect("capture dir");
    let source = "__kernel void one(__global int* out) { out[get_global_id(0)] = 1; }\n";
    let program = put_source_program(&writer.blobs, source, "");
    let before = i32s(&[0; 4]);
    let after = i32s(&[7; 4]);
    writer
        .append(ndrange_record(
            "one",
            program,
            vec![4],
            None,
            None,
            vec![cltrap_capture::ArgRecord::Buffer {
                info: arg_info(0, "out", "int*", "global"),
                mem: 2,
                flags: 1,
                size: 16,
                sub_of: None,
                before: put_blob(&writer.blobs, &before),
                after: put_blob(&writer.blobs, &after),
            }],
        ))
        .expect("append");
    drop(writer);
    let (code, out, err) = cltrap(
        &[
            "mutate",
            dir.to_str().unwrap(),
            "--fresh",
            "--operators",
            "arithmetic,id_offset",
        ],
        ENV,
    );
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(!out.contains("score"), "{out}");
    assert!(err.contains("no test case"), "{err}");
    assert!(
        err.contains("the original does not reproduce the recording"),
        "{err}"
    );
}

#[test]
fn a_write_before_the_sixth_argument_is_located_in_that_argument_at_a_negative_offset() {
    if !std::path::Path::new(cltrap_analyzer::check::oclgrind::ICD_LIBRARY).is_file() {
        eprintln!("skipped: Oclgrind is not installed");
        return;
    }
    let mut f = fixture("rows");
    f.launch(
        "../mutate/rows.cl",
        "rows",
        &[4],
        None,
        None,
        vec![
            A::Buf("src", "int*", i32s(&[1, 2, 3, 4])),
            int("src_step", 0),
            int("src_offset", 0),
            A::Buf("add", "int*", i32s(&[10, 20, 30, 40])),
            int("rows", 0),
            A::Buf("dst", "int*", i32s(&[0; 4])),
            int("dst_step", 0),
        ],
    );
    let (out, m) = mutate(&f, &["--operators", "id_offset"]);
    println!("{out}");
    let minus = m
        .iter()
        .find(|(k, _)| k.starts_with("id_offset:7:13") && k.ends_with("-1)"))
        .map(|(_, v)| v["statusReason"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no `- 1` mutant: {out}"));
    assert!(minus.starts_with("RUNTIME-ERROR"), "{minus}");
    assert!(
        minus.contains("wrote out of bounds of argument 5 (dst"),
        "{minus}"
    );
    assert!(
        minus.contains(
            ": write out of bounds, argument 5 (dst), byte offset -4 of a 16-byte buffer"
        ),
        "{minus}"
    );
}

#[test]
fn a_mutant_of_a_conditional_ending_in_a_vector_literal_lives_in_the_schema_quietly() {
    let mut f = fixture("threshold-vec");
    f.options = "-D T=uchar4".into();
    let src: Vec<u8> = (0..16u8).map(|x| x * 16).collect();
    f.launch(
        "../mutate/threshold_vec.cl",
        "threshold_vec",
        &[4],
        None,
        None,
        vec![
            A::Buf("src", "uchar4*", src),
            A::Buf("dst", "uchar4*", vec![0; 16]),
            A::Val("thresh", "uchar4", vec![100; 4]),
            A::Val("max_val", "uchar4", vec![255; 4]),
        ],
    );
    let dir = f.dir.to_str().unwrap();
    let (code, out, err) = cltrap(
        &[
            "mutate",
            dir,
            "--fresh",
            "--operators",
            "unary_minus,relational_boundary",
        ],
        ENV,
    );
    assert!(code <= 1, "{out}\n{err}");
    assert!(!out.contains("does not compile"), "{out}");
    assert!(
        !err.contains("generated"),
        "the driver's diagnostics reached the terminal: {err}"
    );
    // The whole conditional negated, its `)` included, decided in the schema.
    let (out, m) = mutate(&f, &["--operators", "unary_minus"]);
    assert_eq!(
        status(
            &m,
            "unary_minus:7:14 -(sdata > (thresh) ? (T)(max_val) : (T)(0))"
        ),
        "KILLED",
        "{out}"
    );
}

/// A worker loads a test case only when the mutant reaches it: a mutant killed by the first
/// test case is KILLED even when a later one could not be loaded (here: its derived input is
/// missing), because that test case is never read. Loading every test case before the first
/// run cost a worker seconds at its start and after each restart on a large capture.
#[test]
fn a_worker_loads_a_test_case_only_when_the_mutant_reaches_it() {
    use cltrap_analyzer::executor::DeviceSelector;
    use cltrap_analyzer::mutate::worker::{Evaluator, Job, TestRef};
    let mut f = threshold_suite("lazy-tests", &[1, 9]);
    f.launch(
        "../mutate/threshold.cl",
        "threshold",
        &[2],
        None,
        None,
        vec![
            A::Buf("in", "int*", i32s(&[3, 7])),
            A::Buf("out", "int*", i32s(&[0, 0])),
            int("t", 5),
        ],
    );
    let dir = f.dir.clone();
    drop(f);
    let capture = cltrap_capture::Capture::open(&dir).unwrap();
    assert_eq!(capture.launches.len(), 2);
    let first = &capture.launches[0];
    // The mutant: `<` turned into `>=`, wrong on every element.
    let source = dir.join("mutant.cl");
    std::fs::write(
        &source,
        kernel_source("../mutate/threshold.cl")
            .replace("in[i] < t", "in[i] >= t")
            // The schema's extra parameters: the mutant selector and the watchdog's words.
            .replace(
                "int t)",
                "int t, uint cltrap_sel, __global uint* cltrap_wd)",
            ),
    )
    .unwrap();
    let test = |launch: u64, derived: BTreeMap<u32, std::path::PathBuf>| TestRef {
        launch,
        seeds: vec![],
        unguarded: false,
        derived,
    };
    let job = Job {
        capture: dir.clone(),
        program: first.program.clone(),
        source: source.clone(),
        permuted: None,
        extra_options: String::new(),
        cache: false,
        mutant: 0,
        kernel_names: BTreeMap::new(),
        reference: source,
        reference_permuted: None,
        barrier_loops: false,
        launch: None,
        tests: vec![
            test(first.id, BTreeMap::new()),
            test(
                capture.launches[1].id,
                BTreeMap::from([(0, dir.join("no-such-derived-input"))]),
            ),
        ],
        repeats: 1,
        ulp: 0,
        permuted_builds: false,
    };
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let r = Evaluator::new().evaluate(&job, &DeviceSelector::default(), &|_| {});
    assert_eq!(
        format!("{:?}", r.status),
        "Killed",
        "{:?}: {}",
        r.status,
        r.detail
    );
    assert!(
        r.detail.contains(&format!("launch {}", first.id)),
        "{}",
        r.detail
    );
    // The same missing input in the test case run first is the job's error.
    let mut job = job;
    job.tests.swap(0, 1);
    let r = Evaluator::new().evaluate(&job, &DeviceSelector::default(), &|_| {});
    assert!(
        r.detail.contains("no-such-derived-input"),
        "{:?}: {}",
        r.status,
        r.detail
    );
}

/// A worker killed by a mutant's endless loop is replaced by a spare that was started and
/// warmed up while the units ran (`campaign::runner`): from the second death on, the
/// replacement is ready (four deaths: at least two spares used), and the verdicts are those
/// of fresh workers.
#[test]
fn workers_killed_by_endless_loops_are_replaced_by_warm_spares() {
    let mut f = fixture("spares");
    f.launch(
        "../mutate/two_loops.cl",
        "two_loops",
        &[4],
        None,
        None,
        vec![
            A::Buf("in", "uint*", u32s(&[6, 7, 27, 9])),
            A::Buf("out", "uint*", u32s(&[0; 4])),
        ],
    );
    let campaign = f.dir.join("spares-campaign");
    let (out, m) = mutate(
        &f,
        &[
            "--operators",
            "condition",
            "--loop-budget",
            "4000000000",
            "--timeout-ms",
            "3000",
            "--jobs",
            "1",
            "--campaign-dir",
            campaign.to_str().unwrap(),
        ],
    );
    let s = statuses(&m);
    let hung: Vec<&String> = s
        .iter()
        .filter(|(k, _)| k.ends_with(" 1"))
        .map(|(_, v)| v)
        .collect();
    assert_eq!(hung.len(), 4, "{s:?}\n{out}");
    assert!(hung.iter().all(|v| *v == "TIMEOUT"), "{s:?}\n{out}");
    assert!(
        s.iter()
            .filter(|(k, _)| k.ends_with(" 0"))
            .all(|(_, v)| v == "KILLED"),
        "{s:?}\n{out}"
    );
    let stats: Value =
        serde_json::from_str(&std::fs::read_to_string(campaign.join("stats.json")).unwrap())
            .unwrap();
    assert!(
        stats["spares_used"].as_u64().unwrap() >= 2,
        "a later death was met by a spare: {stats}\n{out}"
    );
    assert_eq!(stats["workers"].as_u64(), Some(1), "{stats}");
}
