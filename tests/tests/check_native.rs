//! `cltrap check --engine native` (the default), end to end, cross-validated against
//! Oclgrind: the `check` host program (tests/apps/check.c) runs under `cltrap run` on PoCL,
//! launching one buggy kernel of each class and its correct twin (tests/kernels/check.cl);
//! the native engine, which runs the instrumented kernels on PoCL, must report the same kinds
//! on the same line pairs as Oclgrind and nothing for the twins. Differences that are by design
//! are spelled out where they are filtered (barrier divergence is Oclgrind's alone; Oclgrind
//! also reports the garbage an out-of-bounds read returns as an uninitialised value, where the
//! native engine reports the read itself and does not perform it).

use cltrap_e2e::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

const ICD: &str = "/usr/lib/oclgrind/liboclgrind-rt-icd.so";

fn capture(name: &str, kernels: &[&str]) -> TestDir {
    let exe = fixture("check");
    let dir = fresh_capture_dir(name);
    let out = run_captured(&dir, &[], &exe, kernels);
    out.assert_no_panic();
    assert!(out.success(), "{}", out.describe());
    dir
}

fn check_json(dir: &Path, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec!["check", dir.to_str().expect("utf-8 path"), "--json"];
    args.extend_from_slice(extra);
    let out = cltrap(&args);
    out.assert_no_panic();
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", out.describe()));
    (out.code.unwrap_or(-1), json, out.stderr)
}

/// (kernel, kind, first line, second line or 0) of every finding.
fn findings(json: &Value) -> BTreeSet<(String, String, u64, u64)> {
    json["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            let line = |a: &Value| a["line"].as_u64().unwrap_or(0);
            (
                f["kernel"].as_str().unwrap_or("").to_string(),
                f["kind"].as_str().unwrap_or("").to_string(),
                line(&f["example"]["first"]),
                line(&f["example"]["second"]),
            )
        })
        .collect()
}

fn s(k: &str, kind: &str, a: u64, b: u64) -> (String, String, u64, u64) {
    (k.to_string(), kind.to_string(), a, b)
}

/// Oclgrind's findings as the native engine is meant to reproduce them: without barrier
/// divergence, and without an uninitialised value on the line of an invalid read in the same
/// kernel (the value the overrun read returned).
fn comparable(
    oclgrind: &BTreeSet<(String, String, u64, u64)>,
) -> BTreeSet<(String, String, u64, u64)> {
    oclgrind
        .iter()
        .filter(|(k, kind, line, _)| {
            kind != "barrier-divergence"
                && !(kind == "uninitialized" && oclgrind.contains(&s(k, "invalid-read", *line, 0)))
        })
        .cloned()
        .collect()
}

#[test]
fn native_findings_equal_oclgrinds_on_every_class_and_no_twin_has_one() {
    let dir = capture("check-native", &[]);
    let (code, native, stderr) = check_json(&dir, &[]);
    assert_eq!(code, 1, "{native:#}\n{stderr}");
    assert_eq!(native["engine"], "native");
    let launches = native["launches"].as_array().expect("launches");
    assert_eq!(launches.len(), 10);
    for l in launches {
        assert_eq!(l["engine"], "native", "{l:#}");
        assert_eq!(l["status"]["status"], "checked", "{l:#}");
    }
    let got = findings(&native);
    // The bugs, on their lines (the same as check_oclgrind.rs asserts for Oclgrind).
    let want: BTreeSet<_> = [
        s("local_race", "data-race", 10, 12),
        s("local_race", "uninitialized", 12, 0),
        s("global_race", "data-race", 25, 28),
        s("off_by_one", "invalid-read", 40, 0),
        s("off_by_one", "invalid-write", 40, 0),
        s("uninit_local", "uninitialized", 55, 0),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want, "{native:#}");
    // Details: the overrun names argument, offset and work-item; the race both groups.
    let find = |kernel: &str, kind: &str| {
        native["findings"]
            .as_array()
            .and_then(|a| {
                a.iter()
                    .find(|f| f["kernel"] == kernel && f["kind"] == kind)
            })
            .cloned()
            .unwrap_or_else(|| panic!("no {kind} in {kernel}"))
    };
    let write = find("off_by_one", "invalid-write");
    let t = &write["example"]["target"];
    assert_eq!(
        (t["arg_index"].as_u64(), t["arg_name"].as_str()),
        (Some(0), Some("out"))
    );
    assert_eq!(
        (t["offset"].as_u64(), t["arg_size"].as_u64()),
        (Some(256), Some(256))
    );
    assert_eq!(
        write["example"]["first"]["global"],
        serde_json::json!([63, 0, 0])
    );
    let race = find("global_race", "data-race");
    assert_eq!(race["count"], 3, "one race per group boundary: {race:#}");
    let group = |a: &str| race["example"][a]["group"][0].as_u64().expect("group");
    assert_eq!(group("first"), group("second") + 1, "{race:#}");
    // Cross-validation: the same kinds on the same line pairs as Oclgrind.
    if !Path::new(ICD).is_file() {
        skip(
            "check_native",
            "Oclgrind is not installed: no cross-validation",
        );
        return;
    }
    let (_, reference, _) = check_json(&dir, &["--engine", "oclgrind"]);
    let reference = findings(&reference);
    assert!(reference.contains(&s("divergent_barrier", "barrier-divergence", 71, 0)));
    assert_eq!(got, comparable(&reference), "native vs Oclgrind");
}

#[test]
fn a_private_pointer_is_attributed_and_a_helper_the_pass_cannot_reach_is_named_not_checked() {
    // `helper_store` stores through helper `put` (instrumented: checked); `macro_helper_store`
    // calls `put_hidden` from inside a macro, where the checker's state cannot be passed.
    let dir = capture(
        "check-native-pointers",
        &["pointer_overrun", "helper_store", "macro_helper_store"],
    );
    let (code, native, stderr) = check_json(&dir, &[]);
    assert_eq!(code, 1, "{native:#}\n{stderr}");
    assert_eq!(
        findings(&native),
        [s("pointer_overrun", "invalid-write", 98, 0)]
            .into_iter()
            .collect()
    );
    let unchecked = native["not_checked"].as_array().expect("not_checked");
    assert_eq!(unchecked.len(), 1, "{native:#}");
    assert_eq!(unchecked[0]["kernel"], "macro_helper_store");
    assert_eq!(unchecked[0]["function"], "put_hidden");
    assert_eq!(unchecked[0]["line"], 144);
    let helper_store = &native["launches"][1];
    assert_eq!(helper_store["kernel"], "helper_store", "{native:#}");
    assert_eq!(helper_store["unchecked_sites"], 0, "{native:#}");
    assert_eq!(helper_store["checked_sites"], 2, "{native:#}");
    let text = cltrap(&["check", dir.to_str().unwrap_or_default()]).stdout_text();
    assert!(
        text.contains("not checked: line 144:60 in put_hidden: in helper function `put_hidden`, which is not instrumented: its call at line 148 is written inside a macro"),
        "{text}"
    );
    if Path::new(ICD).is_file() {
        let (_, reference, _) = check_json(&dir, &["--engine", "oclgrind"]);
        assert_eq!(findings(&native), comparable(&findings(&reference)));
    }
}

/// A capture of `tests/apps/check_kernels.c` launching `kernels` of `file`.
fn capture_kernels(name: &str, file: &str, kernels: &[&str]) -> TestDir {
    let exe = fixture("check_kernels");
    let dir = fresh_capture_dir(name);
    let mut args = vec![file];
    args.extend_from_slice(kernels);
    let out = run_captured(&dir, &[], &exe, &args);
    out.assert_no_panic();
    assert!(out.success(), "{}", out.describe());
    dir
}

/// The example of the finding of `kind` in `kernel`.
fn example(json: &Value, kernel: &str, kind: &str) -> Value {
    json["findings"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|f| f["kernel"] == kernel && f["kind"] == kind)
        })
        .map(|f| f["example"].clone())
        .unwrap_or_else(|| panic!("no {kind} in {kernel}: {json:#}"))
}

#[test]
fn accesses_in_helper_functions_are_checked_at_the_helpers_lines_and_agree_with_oclgrind() {
    // tests/kernels/check_helpers.cl: a `__local` race between two helpers (lines 6, 7), an
    // overrun inside a helper (line 9), and one helper called from two sites with different
    // objects, each overrunning a different one (line 10).
    let dir = capture_kernels(
        "check-native-helpers",
        "check_helpers.cl",
        &["helper_local_race", "helper_overrun", "helper_two_sites"],
    );
    let (code, native, stderr) = check_json(&dir, &[]);
    assert_eq!(code, 1, "{native:#}\n{stderr}");
    let want: BTreeSet<_> = [
        s("helper_local_race", "data-race", 6, 7),
        s("helper_local_race", "uninitialized", 7, 0),
        s("helper_overrun", "invalid-write", 9, 0),
        s("helper_two_sites", "invalid-read", 10, 0),
        s("helper_two_sites", "invalid-write", 10, 0),
    ]
    .into_iter()
    .collect();
    assert_eq!(findings(&native), want, "{native:#}");
    assert_eq!(native["not_checked"], serde_json::json!([]), "{native:#}");
    // Findings name the kernel's arguments, not the helpers' parameters.
    let target = |kernel: &str, kind: &str| example(&native, kernel, kind)["target"].clone();
    let t = target("helper_overrun", "invalid-write");
    assert_eq!(
        (t["arg_name"].as_str(), t["offset"].as_u64()),
        (Some("out"), Some(1024))
    );
    let t = target("helper_two_sites", "invalid-read");
    assert_eq!(
        (
            t["arg_name"].as_str(),
            t["arg_index"].as_u64(),
            t["offset"].as_u64()
        ),
        (Some("tile"), Some(3), Some(256))
    );
    let t = target("helper_two_sites", "invalid-write");
    assert_eq!(
        (t["arg_name"].as_str(), t["offset"].as_u64()),
        (Some("out"), Some(1024))
    );
    if !Path::new(ICD).is_file() {
        skip(
            "check_native",
            "Oclgrind is not installed: no cross-validation",
        );
        return;
    }
    let (_, reference, _) = check_json(&dir, &["--engine", "oclgrind"]);
    assert_eq!(
        findings(&native),
        comparable(&findings(&reference)),
        "native vs Oclgrind"
    );
}

#[test]
fn a_clean_kernel_whose_accesses_are_in_helpers_is_checked_in_full_and_exits_0() {
    // Its store, barrier and loads are in helpers (`publish` waits at the barrier, `through`
    // calls `twice`): all checked, nothing left unchecked, so the exit status is 0, not 3.
    let dir = capture_kernels(
        "check-native-helpers-clean",
        "check_helpers.cl",
        &["helper_local_race_fixed"],
    );
    let (code, json, stderr) = check_json(&dir, &[]);
    assert_eq!(code, 0, "{json:#}\n{stderr}");
    assert_eq!(json["findings"], serde_json::json!([]), "{json:#}");
    assert_eq!(json["not_checked"], serde_json::json!([]), "{json:#}");
    assert_eq!(
        json["accesses"],
        serde_json::json!({"checked": 7, "not_checked": 0})
    );
    let launch = &json["launches"][0];
    assert!(
        launch["notes"].as_array().is_none_or(|n| n.is_empty()),
        "{launch:#}"
    );
    let text = cltrap(&["check", dir.to_str().unwrap_or_default()]).stdout_text();
    assert!(text.contains("checked 7 of 7 accesses\n"), "{text}");
}

#[test]
fn an_async_work_group_copy_out_of_bounds_is_found_and_its_twin_is_clean() {
    // The last group copies 64 uints from in + 208: 16 past the end of `in` (line 56).
    let dir = capture_kernels(
        "check-native-async",
        "check_helpers.cl",
        &["async_overrun", "async_in_bounds"],
    );
    let (code, native, stderr) = check_json(&dir, &[]);
    assert_eq!(code, 1, "{native:#}\n{stderr}");
    assert_eq!(
        findings(&native),
        [s("async_overrun", "invalid-read", 56, 0)]
            .into_iter()
            .collect(),
        "{native:#}"
    );
    let read = example(&native, "async_overrun", "invalid-read");
    assert_eq!(
        read["first"]["group"],
        serde_json::json!([3, 0, 0]),
        "{read:#}"
    );
    let t = &read["target"];
    assert_eq!(
        (
            t["arg_name"].as_str(),
            t["offset"].as_u64(),
            t["size"].as_u64()
        ),
        (Some("in"), Some(832), Some(256))
    );
    assert_eq!(native["not_checked"], serde_json::json!([]), "{native:#}");
    if !Path::new(ICD).is_file() {
        skip(
            "check_native",
            "Oclgrind is not installed: no cross-validation",
        );
        return;
    }
    // Oclgrind performs the copy where it completes, at wait_group_events (line 57), and
    // reports the overrun there; the native engine checks the ranges the call names.
    let (_, reference, _) = check_json(&dir, &["--engine", "oclgrind"]);
    let reference = findings(&reference);
    assert!(
        reference.contains(&s("async_overrun", "invalid-read", 57, 0)),
        "{reference:?}"
    );
    assert!(
        reference.iter().all(|f| f.0 != "async_in_bounds"),
        "{reference:?}"
    );
}

#[test]
fn an_access_written_in_a_macro_body_is_checked_at_the_macros_use() {
    // `STORE(out, 4 * g + 4, v)` (line 76) expands to `out[4 * g + 4] = v`: one past the end
    // for the last work-item, reported at the use with the macro's line (71) as a note.
    // `STORE_OUT` names `out` in its own body: no edit at the use reaches it (line 84).
    let dir = capture_kernels(
        "check-native-macro",
        "check_helpers.cl",
        &["macro_store", "macro_names_object"],
    );
    let (code, native, stderr) = check_json(&dir, &[]);
    assert_eq!(code, 1, "{native:#}\n{stderr}");
    assert_eq!(
        findings(&native),
        [s("macro_store", "invalid-write", 76, 0)]
            .into_iter()
            .collect(),
        "{native:#}"
    );
    let write = native["findings"][0].clone();
    assert!(
        write["example"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("written in the body of macro `STORE` (line 71)"),
        "{write:#}"
    );
    let unchecked = native["not_checked"].as_array().expect("not_checked");
    assert!(!unchecked.is_empty(), "{native:#}");
    for u in unchecked {
        assert_eq!(
            (u["kernel"].as_str(), u["line"].as_u64()),
            (Some("macro_names_object"), Some(84)),
            "{native:#}"
        );
    }
    let launch = &native["launches"][0];
    assert_eq!(
        (
            launch["kernel"].as_str(),
            launch["unchecked_sites"].as_u64()
        ),
        (Some("macro_store"), Some(0)),
        "{native:#}"
    );
    if Path::new(ICD).is_file() {
        let (_, reference, _) = check_json(&dir, &["--engine", "oclgrind"]);
        assert_eq!(findings(&native), comparable(&findings(&reference)));
    }
}

#[test]
fn a_local_pointer_argument_is_checked_against_its_captured_size() {
    // `tile` is the launch's __local argument of 16 elements: the last work-item of each group
    // writes tile[16], and slot 0 is never written before it is read.
    let dir = capture("check-native-local-arg", &["local_arg_overrun"]);
    let (code, native, stderr) = check_json(&dir, &[]);
    assert_eq!(code, 1, "{native:#}\n{stderr}");
    let want: BTreeSet<_> = [
        s("local_arg_overrun", "invalid-write", 110, 0),
        s("local_arg_overrun", "uninitialized", 112, 0),
    ]
    .into_iter()
    .collect();
    assert_eq!(findings(&native), want, "{native:#}");
    let write = &native["findings"][0];
    assert_eq!(write["kind"], "invalid-write");
    assert_eq!(write["count"], 4, "one per group: {write:#}");
    let t = &write["example"]["target"];
    assert_eq!(
        (
            t["arg_name"].as_str(),
            t["offset"].as_u64(),
            t["arg_size"].as_u64()
        ),
        (Some("tile"), Some(64), Some(64))
    );
    assert_eq!(t["space"], "local");
    // This kernel calls no helper: the helper `put` of the same program is not its concern.
    assert_eq!(native["not_checked"], serde_json::json!([]), "{native:#}");
    if Path::new(ICD).is_file() {
        let (_, reference, _) = check_json(&dir, &["--engine", "oclgrind"]);
        assert_eq!(findings(&native), comparable(&findings(&reference)));
    }
}

#[test]
fn a_race_on_global_memory_inside_a_work_group_is_found_and_its_twin_is_clean() {
    // Work-items g and g^1 exchange values through `out` without a barrier (lines 119-120);
    // the twin waits at barrier(CLK_GLOBAL_MEM_FENCE) between its store and its load.
    let dir = capture(
        "check-native-group-global",
        &["group_global_race", "group_global_race_fixed"],
    );
    let (code, native, stderr) = check_json(&dir, &[]);
    assert_eq!(code, 1, "{native:#}\n{stderr}");
    assert_eq!(
        findings(&native),
        [s("group_global_race", "data-race", 119, 120)]
            .into_iter()
            .collect()
    );
    let race = &native["findings"][0]["example"];
    assert_eq!(race["first"]["group"], race["second"]["group"], "{race:#}");
    if Path::new(ICD).is_file() {
        let (_, reference, _) = check_json(&dir, &["--engine", "oclgrind"]);
        assert_eq!(findings(&native), comparable(&findings(&reference)));
    }
}

#[test]
fn families_select_the_native_checks_and_twins_exit_0() {
    let dir = capture("check-native-families", &[]);
    let (code, json, _) = check_json(&dir, &["0,4", "--bounds"]);
    assert_eq!(code, 1);
    assert_eq!(
        findings(&json),
        [
            s("off_by_one", "invalid-read", 40, 0),
            s("off_by_one", "invalid-write", 40, 0)
        ]
        .into_iter()
        .collect()
    );
    let (code, json, _) = check_json(&dir, &["0", "--races"]);
    assert_eq!(code, 1);
    assert_eq!(
        findings(&json),
        [s("local_race", "data-race", 10, 12)].into_iter().collect()
    );
    let (code, json, _) = check_json(&dir, &["1,3,5,7,9"]);
    assert_eq!(code, 0, "{json:#}");
}

#[test]
fn a_third_party_kernel_is_checked_clean_natively_clpeak() {
    let Some(clpeak) = installed("clpeak", "clpeak") else {
        return;
    };
    let dir = fresh_capture_dir("check-native-clpeak");
    let run = run_captured(
        &dir,
        &["--launches", "0..1"],
        &clpeak,
        &["--kernel-latency"],
    );
    assert!(run.success(), "{}", run.describe());
    // Clean in what it checked, with accesses it could not check: incomplete (3), not 0.
    let (code, json, stderr) = check_json(&dir, &[]);
    assert_eq!(code, 3, "{json:#}\n{stderr}");
    assert_eq!(json["findings"], serde_json::json!([]));
    let launch = &json["launches"][0];
    assert_eq!(launch["kernel"], "global_bandwidth_v1_local_offset");
    assert_eq!(launch["engine"], "native", "{json:#}");
    assert_eq!(launch["status"]["status"], "checked", "{json:#}");
    // Its loads are written in clpeak's FETCH_4 macro body, where no edit can reach: named as
    // not checked on the invocation's line; the store to B is checked.
    assert_eq!(launch["checked_sites"], 1, "{json:#}");
    let unchecked = json["not_checked"].as_array().expect("not_checked");
    assert!(
        unchecked.iter().any(|u| u["line"] == 11
            && u["why"]
                .as_str()
                .is_some_and(|w| w.contains("inside a macro"))),
        "{json:#}"
    );
}

#[test]
fn a_launch_the_native_engine_cannot_instrument_falls_back_to_oclgrind() {
    if !Path::new(ICD).is_file() {
        skip(
            "check_native",
            "Oclgrind is not installed: no fallback to test",
        );
        return;
    }
    // The `programs` app's launch 3 runs a program linked from two compiled units: no single
    // source text to rewrite, so Oclgrind checks it; the others run natively.
    let exe = fixture("programs");
    let dir = fresh_capture_dir("check-native-fallback");
    let run = run_captured(&dir, &[], &exe, &[] as &[&str]);
    assert!(run.success(), "{}", run.describe());
    let (code, json, stderr) = check_json(&dir, &["0-3"]);
    assert_eq!(code, 0, "{json:#}\n{stderr}");
    assert_eq!(json["engine"], "native+oclgrind");
    let engines: Vec<(&str, &str)> = json["launches"]
        .as_array()
        .expect("launches")
        .iter()
        .map(|l| {
            (
                l["engine"].as_str().unwrap_or(""),
                l["status"]["status"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        engines,
        vec![
            ("native", "checked"),
            ("native", "checked"),
            ("native", "checked"),
            ("oclgrind", "checked")
        ],
        "{json:#}"
    );
    assert!(
        stderr.contains("launch 3: native engine cannot: the program is not one unit of OpenCL C source (a program linked from several units)"),
        "{stderr}"
    );
}

/// A kernel that only reads and writes images is not "clean": each image access is counted
/// as not checked, with the engine that does check them, and the exit status says incomplete.
#[test]
fn image_accesses_are_counted_as_not_checked_and_the_check_is_incomplete() {
    let exe = fixture("images");
    let dir = fresh_capture_dir("check-native-images");
    let out = run_captured(&dir, &[], &exe, &[] as &[&str]);
    out.assert_no_panic();
    assert!(out.success(), "{}", out.describe());
    let (code, json, stderr) = check_json(&dir, &[]);
    assert_eq!(code, 3, "{json:#}\n{stderr}");
    assert_eq!(json["findings"], serde_json::json!([]), "{json:#}");
    let not_checked = json["not_checked"].as_array().cloned().unwrap_or_default();
    assert!(!not_checked.is_empty(), "{json:#}");
    assert!(
        not_checked
            .iter()
            .all(|n| n.to_string().contains("image access")),
        "{json:#}"
    );
    let text = cltrap(&["check", dir.to_str().unwrap_or_default()]).stdout_text();
    assert!(
        text.contains("not checked: 3 image reads and writes (checked by --engine oclgrind)"),
        "{text}"
    );
}
