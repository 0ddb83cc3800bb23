//! `cltrap check` on Oclgrind, end to end: the `check` host program (tests/apps/check.c) runs
//! under `cltrap run` on PoCL, launching one buggy kernel of each class and its correct twin
//! (tests/kernels/check.cl); `cltrap check` must report exactly the bugs, on the right lines,
//! and nothing for the twins. Skipped (with a message) where Debian's `oclgrind` is missing.

use cltrap_e2e::*;
use serde_json::Value;
use std::ffi::OsStr;
use std::path::Path;

const ICD: &str = "/usr/lib/oclgrind/liboclgrind-rt-icd.so";

fn oclgrind_missing(test: &str) -> bool {
    if Path::new(ICD).is_file() {
        return false;
    }
    skip(test, "Oclgrind is not installed (apt-get install oclgrind)");
    true
}

/// Captures the `check` program (all kernels, one launch each, in the order of its table).
fn capture() -> TestDir {
    let exe = fixture("check");
    let dir = fresh_capture_dir("check");
    let out = run_captured(&dir, &[], &exe, &[] as &[&str]);
    out.assert_no_panic();
    assert!(out.success(), "{}", out.describe());
    dir
}

fn check_json(dir: &Path, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec![
        "check",
        dir.to_str().expect("utf-8 path"),
        "--json",
        "--engine",
        "oclgrind",
    ];
    args.extend_from_slice(extra);
    let out = cltrap(&args);
    out.assert_no_panic();
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", out.describe()));
    (out.code.unwrap_or(-1), json, out.stderr)
}

/// (kind, first line, second line or 0) of every finding of `kernel`, sorted.
fn findings_of(json: &Value, kernel: &str) -> Vec<(String, u64, u64)> {
    let mut v: Vec<_> = json["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["kernel"] == kernel)
        .map(|f| {
            let line = |a: &Value| a["line"].as_u64().unwrap_or(0);
            (
                f["kind"].as_str().unwrap_or("").to_string(),
                line(&f["example"]["first"]),
                line(&f["example"]["second"]),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_bug_class_is_found_on_its_lines_and_no_twin_has_a_finding() {
    if oclgrind_missing("check_oclgrind") {
        return;
    }
    let dir = capture();
    let (code, json, stderr) = check_json(&dir, &[]);
    assert_eq!(code, 1, "{json:#}\n{stderr}");
    let s = |k: &str, a: u64, b: u64| (k.to_string(), a, b);
    // __local race from the missing barrier: the write of line 10 against the read of line
    // 12; Oclgrind also sees the read of a slot not yet written (an uninitialised value).
    assert_eq!(
        findings_of(&json, "local_race"),
        vec![s("data-race", 10, 12), s("uninitialized", 12, 0)]
    );
    // Inter-group race on __global memory: group 1's write (25) against group 0's read (28).
    assert_eq!(
        findings_of(&json, "global_race"),
        vec![s("data-race", 25, 28)]
    );
    // Off by one: the read of `in` and the write of `out`, both past the end (line 40).
    assert_eq!(
        findings_of(&json, "off_by_one"),
        vec![
            s("invalid-read", 40, 0),
            s("invalid-write", 40, 0),
            s("uninitialized", 40, 0)
        ]
    );
    assert_eq!(
        findings_of(&json, "uninit_local"),
        vec![s("uninitialized", 55, 0)]
    );
    assert_eq!(
        findings_of(&json, "divergent_barrier"),
        vec![s("barrier-divergence", 71, 0)]
    );
    for twin in [
        "local_race_fixed",
        "global_race_fixed",
        "off_by_one_fixed",
        "uninit_local_fixed",
        "divergent_barrier_fixed",
    ] {
        assert_eq!(findings_of(&json, twin), vec![], "{twin}: {json:#}");
    }
    // The race names both work-items and groups; the bounds errors name argument and offset.
    let find = |kernel: &str, kind: &str| {
        json["findings"]
            .as_array()
            .and_then(|a| {
                a.iter()
                    .find(|f| f["kernel"] == kernel && f["kind"] == kind)
            })
            .cloned()
            .unwrap_or_else(|| panic!("no {kind} in {kernel}"))
    };
    let race = find("global_race", "data-race");
    // Group k+1 writes its first element (line 25) while group k reads it (line 28); which
    // group pair is the example depends on Oclgrind's threads.
    let group = |a: &str| race["example"][a]["group"][0].as_u64().expect("group");
    assert_eq!(group("first"), group("second") + 1, "{race:#}");
    assert_eq!(
        race["example"]["first"]["local"],
        serde_json::json!([0, 0, 0])
    );
    assert_eq!(
        race["example"]["second"]["local"],
        serde_json::json!([15, 0, 0])
    );
    assert_eq!(race["count"], 3, "one race per group boundary: {race:#}");
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
    let read = find("off_by_one", "invalid-read");
    assert_eq!(read["example"]["target"]["arg_name"], "in");
    assert_eq!(
        read["example"]["first"]["global"],
        serde_json::json!([63, 0, 0])
    );
    // Every launch was checked, with progress on stderr.
    let launches = json["launches"].as_array().expect("launches");
    assert_eq!(launches.len(), 10);
    assert!(
        launches.iter().all(|l| l["status"]["status"] == "checked"),
        "{json:#}"
    );
    assert!(
        stderr.contains("[10/10] launch 9 divergent_barrier_fixed"),
        "{stderr}"
    );
}

#[test]
fn families_select_kinds_and_the_terminal_report_points_at_the_lines() {
    if oclgrind_missing("check_oclgrind") {
        return;
    }
    let dir = capture();
    // Only bounds, on the off-by-one launch (id 4): no uninitialised-value finding.
    let (code, json, _) = check_json(&dir, &["4", "--bounds"]);
    assert_eq!(code, 1);
    let s = |k: &str| (k.to_string(), 40, 0);
    assert_eq!(
        findings_of(&json, "off_by_one"),
        vec![s("invalid-read"), s("invalid-write")]
    );
    // A correct twin alone is clean: exit status 0.
    let (code, json, _) = check_json(&dir, &["1,3,5,7,9"]);
    assert_eq!(code, 0, "{json:#}");
    // The terminal report: rustc-style snippet with a caret under the column.
    // Quick mode runs only the first and last work-group: the race between groups 0 and 1
    // is out of its sight, the overrun by the last group is not.
    let (code, json, _) = check_json(&dir, &["2,4", "--quick", "--races", "--bounds"]);
    assert_eq!(code, 1);
    assert_eq!(findings_of(&json, "global_race"), vec![]);
    assert_eq!(findings_of(&json, "off_by_one").len(), 2, "{json:#}");
    let out = cltrap(&[
        "check",
        dir.to_str().unwrap_or_default(),
        "2",
        "--engine",
        "oclgrind",
    ]);
    let text = out.stdout_text();
    assert_eq!(out.code, Some(1), "{}", out.describe());
    assert!(text.contains("kernel global_race: 1 finding(s)"), "{text}");
    assert!(
        text.contains("25 |     out[g] = in[g];\n   |            ^ first access"),
        "{text}"
    );
    assert!(
        text.contains("28 |         out[g] += out[g + 1];\n   |                   ^ second access"),
        "{text}"
    );
}

#[test]
fn sarif_places_both_accesses_of_a_race_on_the_kernel_source() {
    if oclgrind_missing("check_oclgrind") {
        return;
    }
    let dir = capture();
    let sarif = dir.join("out.sarif");
    let out = cltrap(&[
        "check",
        dir.to_str().unwrap_or_default(),
        "2",
        "--engine",
        "oclgrind",
        "--sarif",
        sarif.to_str().unwrap_or_default(),
    ]);
    assert_eq!(out.code, Some(1), "{}", out.describe());
    let log: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).expect("sarif written"))
        .expect("sarif is JSON");
    assert_eq!(log["version"], "2.1.0");
    let r = &log["runs"][0]["results"][0];
    assert_eq!(r["ruleId"], "data-race");
    assert_eq!(r["level"], "error");
    let loc = &r["locations"][0]["physicalLocation"];
    assert_eq!(loc["region"]["startLine"], 25);
    assert_eq!(loc["region"]["startColumn"], 12);
    assert_eq!(
        r["relatedLocations"][0]["physicalLocation"]["region"]["startLine"],
        28
    );
    // The artifact exists next to the log and holds the kernel's line 25.
    let uri = loc["artifactLocation"]["uri"].as_str().expect("uri");
    let source = std::fs::read_to_string(sarif.parent().expect("dir").join(uri)).expect("source");
    assert_eq!(source.lines().nth(24), Some("    out[g] = in[g];"));
}

#[test]
fn a_launch_past_its_deadline_is_reported_and_exits_2() {
    if oclgrind_missing("check_oclgrind") {
        return;
    }
    // `spin` takes milliseconds on PoCL and far more than a second on the simulator.
    let exe = fixture("check");
    let dir = fresh_capture_dir("check-spin");
    let run = run_captured(&dir, &[], &exe, &["spin"]);
    assert!(run.success(), "{}", run.describe());
    let out = cltrap(&[
        "check",
        dir.to_str().unwrap_or_default(),
        "--engine",
        "oclgrind",
        "--deadline",
        "1",
    ]);
    assert_eq!(out.code, Some(2), "{}", out.describe());
    let text = out.stdout_text();
    assert!(
        text.contains("launch 0 spin: not finished within the 1 s deadline"),
        "{text}"
    );
    assert!(
        text.contains("checked 0 of 1 launch(es) on oclgrind: 0 finding(s)"),
        "{text}"
    );
    assert!(
        out.elapsed < std::time::Duration::from_secs(30),
        "{:?}",
        out.elapsed
    );
}

#[test]
fn a_third_party_kernel_is_checked_clean_clpeak() {
    if oclgrind_missing("check_oclgrind") {
        return;
    }
    let Some(clpeak) = installed("clpeak", "clpeak") else {
        return;
    };
    // clpeak's first kernel-latency launch: its real global_bandwidth kernel, 512 work-items.
    let dir = fresh_capture_dir("check-clpeak");
    let run = run_captured(
        &dir,
        &["--launches", "0..1"],
        &clpeak,
        &["--kernel-latency"],
    );
    assert!(run.success(), "{}", run.describe());
    let (code, json, stderr) = check_json(&dir, &[]);
    assert_eq!(code, 0, "{json:#}\n{stderr}");
    assert_eq!(json["findings"], serde_json::json!([]));
    let launch = &json["launches"][0];
    assert_eq!(launch["kernel"], "global_bandwidth_v1_local_offset");
    assert_eq!(launch["status"]["status"], "checked", "{json:#}");
}

/// The shim is transparent on the Oclgrind platform too: Oclgrind's `clFlush` runs the queued
/// commands on the calling thread, so a flush from the capture's writer thread would run a
/// kernel while the application's thread runs another, and Oclgrind aborts the application
/// (`m_kernelInvocation == NULL`, or heap corruption). The application captured with full
/// contents on Oclgrind must end and print exactly as natively there, and its launches must
/// replay on PoCL.
#[test]
fn an_application_on_the_oclgrind_platform_runs_unchanged_under_capture() {
    if oclgrind_missing("check_oclgrind") {
        return;
    }
    let vendors = fresh_dir("vendors", "oclgrind-only");
    std::fs::write(vendors.join("oclgrind.icd"), format!("{ICD}\n")).expect("write the icd file");
    let env = [("OCL_ICD_VENDORS", vendors.as_os_str())];
    // The bundled example app: its kernels run long enough on Oclgrind for a flush from the
    // writer thread to meet them every time (a small fixture meets them one run in three).
    let root = workspace_root();
    let built = std::process::Command::new(root.join("scripts/build-c.sh"))
        .arg("demo")
        .current_dir(&root)
        .output()
        .expect("run scripts/build-c.sh");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let exe = root.join("target/examples/cltrap-demo");
    let native = run_with_env(&exe, &[] as &[&str], &env, None);
    assert!(native.success(), "{}", native.describe());
    // The abort depended on the two threads' timing: three captures, each must behave as
    // natively.
    let t = tools();
    let mut last = None;
    for round in 0..3 {
        let dir = fresh_capture_dir(&format!("oclgrind-platform-{round}"));
        let captured = run_with_env(
            &t.cltrap,
            &[
                "run".as_ref(),
                "--out".as_ref(),
                dir.as_os_str(),
                "--".as_ref(),
                exe.as_os_str(),
            ] as &[&OsStr],
            &[
                ("CLTRAP_SHIM", t.shim.as_os_str()),
                ("OCL_ICD_VENDORS", vendors.as_os_str()),
            ],
            None,
        );
        captured.assert_no_panic();
        assert_same_behaviour(&native, &captured);
        last = Some(dir);
    }
    let dir = last.expect("three captures");
    assert_replays_ok(&dir, 4);
}
