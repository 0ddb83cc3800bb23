//! Fuzzing a captured launch of 2^20 work-items on a subset of its work-groups: the reduced
//! executions drive the campaign, every kept case is confirmed on the whole launch (what the
//! suite records), an input that fails only in a group outside the subset is a finding and not
//! a suite case, and the same seed gives the same campaign.

use cltrap_e2e::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// The captured launch of `tests/apps/large.c`.
fn capture() -> TestDir {
    let exe = fixture("large");
    let dir = fresh_capture_dir("fuzz-reduced");
    let captured = run_captured(&dir, &[], &exe, &[] as &[&str]).expect_success();
    assert!(
        captured.stdout_text().contains("1048576 work-items, ok"),
        "{}",
        captured.describe()
    );
    dir
}

fn fuzz(cap: &Path, suite: &Path, extra: &[&str]) -> Outcome {
    let mut args = vec![
        "fuzz".to_string(),
        cap.display().to_string(),
        "--out".into(),
        suite.display().to_string(),
        "--seed".into(),
        "7".into(),
        "--watchdog".into(),
        "60".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = cltrap(&args);
    assert!(
        out.code == Some(0),
        "cltrap fuzz failed\n{}",
        out.describe()
    );
    out
}

fn report(suite: &Path) -> Value {
    let text = std::fs::read_to_string(suite.join("fuzz.json")).expect("fuzz.json");
    let all: Value = serde_json::from_str(&text).expect("fuzz.json is JSON");
    all["kernels"][0].clone()
}

/// Labels of the slots fuzzing covered, from the report.
fn fuzzed(report: &Value) -> BTreeSet<String> {
    report["slots"]
        .as_array()
        .expect("slots")
        .iter()
        .filter(|s| s["status"] == "covered_by_fuzzing")
        .map(|s| s["label"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_million_work_item_launch_is_fuzzed_on_a_subset_and_confirmed_on_the_whole_launch() {
    let cap = capture();
    let suite = fresh_dir("suites", "fuzz-reduced");
    let out = fuzz(&cap, &suite, &["--budget", "300"]);
    let text = out.stdout_text();
    let line = text
        .lines()
        .find(|l| l.contains("reduced executions: 6 of 16384 work-groups of 64 work-items"))
        .unwrap_or_else(|| panic!("the reduced geometry is printed\n{}", out.describe()));
    let ids: Vec<u64> = line
        .split("linear ids ")
        .nth(1)
        .and_then(|t| t.split(')').next())
        .expect("the groups are listed")
        .split_whitespace()
        .map(|g| g.parse().expect("a group id"))
        .collect();
    assert_eq!(&ids[..2], &[0, 16383], "first and last group first: {line}");
    // The fixture's special groups are outside this seed's subset: what they do is seen on
    // the whole launch only.
    assert!(!ids.contains(&5) && !ids.contains(&9000), "{line}");

    let r = report(&suite);
    assert!(r["reduced"].as_str().is_some_and(|s| s.contains("16384")));
    // What each case reached on the subset, it reaches on the whole launch.
    assert_eq!(r["subset_only"], 0, "{}", out.describe());
    assert!(r["confirm_runs"].as_u64().is_some_and(|n| n >= 2), "{r}");
    let covered = fuzzed(&r);
    // The seed's negative data lives in group 9000 alone: the subset never reaches `v < 0`,
    // the seed's confirming run on the whole launch does, and that is what the suite records.
    assert!(
        covered.contains("if (v < 0) true"),
        "{covered:?}\n{}",
        out.describe()
    );
    assert!(
        covered.contains("if (g == get_global_size(0) - 1) true"),
        "{covered:?}"
    );

    // Every kept case really covers, on the whole launch, what the report says.
    let cov_json = suite.join("cover.json");
    let cover = cltrap(&[
        "cover".to_string(),
        suite.display().to_string(),
        "--json".into(),
        cov_json.display().to_string(),
    ]);
    assert_eq!(cover.code, Some(0), "{}", cover.describe());
    let cov: Value =
        serde_json::from_str(&std::fs::read_to_string(&cov_json).expect("cover.json")).unwrap();
    let hit: BTreeSet<String> = cov["programs"][0]["kernels"][0]["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|i| i["hit"] == true)
        .map(|i| i["label"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(covered, hit, "cover on the suite = the campaign's report");

    // mode > 1 runs cleanly on the subset but writes past `out` in group 5: the case that
    // reached it on the subset failed its confirming run and is a finding, not a suite case.
    let findings: Vec<&str> = r["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        findings
            .iter()
            .any(|f| f.contains("argument 1 (out): past its end (on the whole launch only)")),
        "{findings:?}\n{}",
        out.describe()
    );
    assert!(!covered.contains("if (mode > 1) true"), "{covered:?}");
    let suite_cap = open_capture(&suite);
    assert!(!suite_cap.launches.is_empty());
    for l in &suite_cap.launches {
        let mode = match &l.args[2] {
            cltrap_capture::ArgRecord::Scalar { bytes, .. } => {
                let hex = bytes.trim_start_matches("0x");
                let b: Vec<u8> = (0..hex.len() / 2)
                    .filter_map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
                    .collect();
                i32::from_le_bytes(b[..4].try_into().expect("an int"))
            }
            other => panic!("mode is a scalar: {other:?}"),
        };
        assert!(
            mode <= 1,
            "a case failing on the whole launch stayed in the suite"
        );
    }
    // Cases are kept for what they add on the whole launch: none repeats another's coverage.
    let cases = r["cases"].as_array().expect("cases");
    for (i, a) in cases.iter().enumerate() {
        for b in &cases[i + 1..] {
            assert_ne!(a[1], b[1], "two suite cases cover the same: {cases:?}");
        }
    }
    assert!(
        text.contains("failed there (findings)"),
        "{}",
        out.describe()
    );
    let findings_dir = suite.join("findings").join("large");
    assert!(findings_dir.is_dir(), "the finding inputs are written");
}

#[test]
fn the_same_seed_gives_the_same_reduced_campaign() {
    let cap = capture();
    let a = fresh_dir("suites", "fuzz-reduced-a");
    let b = fresh_dir("suites", "fuzz-reduced-b");
    fuzz(&cap, &a, &["--budget", "150"]);
    fuzz(&cap, &b, &["--budget", "150"]);
    let (ra, rb) = (report(&a), report(&b));
    for key in ["cases", "findings", "executions", "slots", "reduced"] {
        assert_eq!(ra[key], rb[key], "{key} differs between two runs of seed 7");
    }
}

#[test]
fn full_launches_turns_the_reduction_off() {
    let cap = capture();
    let suite = fresh_dir("suites", "fuzz-full");
    let out = fuzz(&cap, &suite, &["--budget", "4", "--full-launches"]);
    assert!(
        !out.stdout_text().contains("reduced executions"),
        "{}",
        out.describe()
    );
    assert!(report(&suite)["reduced"].is_null());
}
