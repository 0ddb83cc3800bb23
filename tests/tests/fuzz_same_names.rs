//! Two kernels of one name from two programs of one capture (`tests/apps/samename.c`): `fuzz`
//! fuzzes both and tells them apart in every row (progress, uncovered slots, table), in the
//! suite's report and in its findings folders.

use cltrap_e2e::*;
use serde_json::Value;

#[test]
fn same_named_kernels_of_two_programs_get_their_own_rows_and_suite_entries() {
    let exe = fixture("samename");
    let dir = fresh_capture_dir("fuzz-same-names");
    let captured = run_captured(&dir, &[], &exe, &[] as &[&str]).expect_success();
    assert!(
        captured
            .stdout_text()
            .contains("two kernels named scale, ok"),
        "{}",
        captured.describe()
    );
    let suite = fresh_dir("suites", "fuzz-same-names");
    let out = cltrap(&[
        "fuzz",
        &dir.display().to_string(),
        "--out",
        &suite.display().to_string(),
        "--seed",
        "7",
        "--budget",
        "200",
    ]);
    assert_eq!(out.code, Some(0), "{}", out.describe());
    let text = std::fs::read_to_string(suite.join("fuzz.json")).expect("fuzz.json");
    let all: Value = serde_json::from_str(&text).expect("fuzz.json is JSON");
    let kernels = all["kernels"].as_array().expect("kernels");
    assert_eq!(kernels.len(), 2, "{text}");
    let programs: Vec<&str> = kernels
        .iter()
        .map(|k| {
            assert_eq!(k["kernel"], "scale");
            k["program"]
                .as_str()
                .expect("each kernel names its program")
        })
        .collect();
    assert_ne!(programs[0], programs[1], "{text}");
    // The table has one row per kernel, each named with its program.
    let stdout = out.stdout_text();
    let rows: Vec<String> = programs
        .iter()
        .map(|p| {
            let key: String = p.chars().take(12).collect();
            format!("scale (program-{key})")
        })
        .collect();
    for row in &rows {
        let table_rows = stdout
            .lines()
            .filter(|l| l.starts_with(row.as_str()))
            .count();
        assert_eq!(table_rows, 1, "one table row for {row}\n{stdout}");
    }
    assert!(
        !stdout
            .lines()
            .any(|l| l.starts_with("scale ") && !l.starts_with("scale (program-")),
        "no row names a bare `scale`\n{stdout}"
    );
    // Fuzzing the same capture into the same suite again replaces both entries, not one.
    let again = cltrap(&[
        "fuzz",
        &dir.display().to_string(),
        "--out",
        &suite.display().to_string(),
        "--seed",
        "7",
        "--budget",
        "200",
    ]);
    assert_eq!(again.code, Some(0), "{}", again.describe());
    let text = std::fs::read_to_string(suite.join("fuzz.json")).expect("fuzz.json");
    let all: Value = serde_json::from_str(&text).expect("fuzz.json is JSON");
    assert_eq!(all["kernels"].as_array().map(Vec::len), Some(2), "{text}");
}
