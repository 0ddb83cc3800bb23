//! What `cltrap fuzz` reports covered is what `cltrap cover` measures when it replays the
//! suite: a kept case must run, reach the same branches and leave the same outputs on the
//! executor `cover` (and `mutate`) use. Cases whose result is undefined behaviour — an integer
//! division by zero, a read out of bounds — are findings, never suite cases. On the real
//! OpenCL runtime (PoCL).

use std::collections::BTreeSet;
use std::path::Path;

mod common;

use common::fuzz_interface as fuzz;
use common::iface_arg as arg;

/// (line, label) of the slots fuzz reports covered, and of the items `cltrap cover` hit on
/// the suite, among fuzz's slots; plus cover's problems (failed launches, output mismatches).
fn fuzz_and_cover(
    suite: &Path,
) -> (
    BTreeSet<(u64, String)>,
    BTreeSet<(u64, String)>,
    Vec<String>,
) {
    let fj: serde_json::Value =
        serde_json::from_slice(&std::fs::read(suite.join("fuzz.json")).unwrap()).unwrap();
    let k = &fj["kernels"][0];
    let key = |s: &serde_json::Value| {
        (
            s["line"].as_u64().unwrap(),
            s["label"].as_str().unwrap().to_string(),
        )
    };
    let slots: BTreeSet<_> = k["slots"].as_array().unwrap().iter().map(key).collect();
    let claimed: BTreeSet<_> = k["slots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            matches!(
                s["status"].as_str(),
                Some("covered_by_fuzzing" | "solved_and_confirmed")
            )
        })
        .map(key)
        .collect();
    let report = suite.join("cover.json");
    let (_, out, err) = common::cltrap(
        &[
            "cover",
            suite.to_str().unwrap(),
            "--json",
            report.to_str().unwrap(),
        ],
        &[],
    );
    let c: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).expect(&(out + &err))).unwrap();
    let mut hit = BTreeSet::new();
    for p in c["programs"].as_array().unwrap() {
        for ck in p["kernels"].as_array().unwrap() {
            for it in ck["items"].as_array().unwrap() {
                if it["hit"].as_bool() == Some(true) && slots.contains(&key(it)) {
                    hit.insert(key(it));
                }
            }
        }
    }
    let problems = c["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["message"].as_str().unwrap_or("").to_string())
        .collect();
    (claimed, hit, problems)
}

#[test]
fn a_seed_that_divides_by_zero_is_a_finding_and_the_suite_replays_under_cover() {
    // PoCL steps over `i % d` with d == 0 in a plain process, but `cltrap cover` dies of
    // SIGFPE on it: the seed (d = 0) must not become a suite case.
    let src = "__kernel void k(__global int *out, int d, int sel)\n\
               {\n\
               \x20 int i = get_global_id(0);\n\
               \x20 int v = sel ? d * (i % d) : i % d;\n\
               \x20 if (sel) v += 1;\n\
               \x20 out[i] = v;\n\
               }\n";
    let args = serde_json::json!([
        arg("out", Some(64), serde_json::json!("random"), true),
        arg("d", None, serde_json::json!({"fixed": 0}), false),
        arg("sel", None, serde_json::json!({"fixed": 0}), false),
    ]);
    let dir = common::temp_dir("fuzz-cover-div0");
    let (suite, text) = fuzz(&dir, "k", src, args, &["--seed", "3", "--budget", "200"]);
    assert!(
        text.contains("SIGFPE"),
        "the division by zero is a finding: {text}"
    );
    let (claimed, hit, problems) = fuzz_and_cover(&suite);
    assert!(
        problems.is_empty(),
        "cover replays every case: {problems:?}\n{text}"
    );
    assert_eq!(claimed, hit, "{text}");
    assert!(!claimed.is_empty(), "{text}");
}

#[test]
fn a_case_that_reads_out_of_bounds_is_not_kept_and_the_suite_replays_under_cover() {
    // `in[i + off]` with `off` past the buffer: the guarded fuzzing run reads a guard zone's
    // fill, a plain run (cover's) reads whatever lies there. The branch on the value read
    // makes the difference visible in coverage and outputs alike.
    let src = "__kernel void k(__global const float *in, __global float *out, int off)\n\
               {\n\
               \x20 int i = get_global_id(0);\n\
               \x20 float v = in[i + off];\n\
               \x20 if (v > 0.5f) v = 1.0f;\n\
               \x20 out[i] = v;\n\
               }\n";
    let args = serde_json::json!([
        arg("in", Some(64), serde_json::json!("random"), false),
        arg("out", Some(64), serde_json::json!("random"), true),
        arg("off", None, serde_json::json!({"fixed": 4096}), false),
    ]);
    let dir = common::temp_dir("fuzz-cover-oob-read");
    let (suite, text) = fuzz(&dir, "k", src, args, &["--seed", "3", "--budget", "200"]);
    // The seed's case is dropped by the run as cover runs it, and said so.
    let fj: serde_json::Value =
        serde_json::from_slice(&std::fs::read(suite.join("fuzz.json")).unwrap()).unwrap();
    let said = fj["kernels"][0]["findings"].to_string();
    assert!(
        said.contains("not reproducible where the suite is used"),
        "{said}\n{text}"
    );
    let (claimed, hit, problems) = fuzz_and_cover(&suite);
    assert!(
        problems.is_empty(),
        "cover replays every case: {problems:?}\n{text}"
    );
    assert_eq!(claimed, hit, "{text}");
}

#[test]
fn a_case_that_writes_out_of_bounds_unseen_by_the_guard_zones_is_a_finding() {
    // A write past a `__local` array: no guard zone sees it and the outputs do not show it,
    // but where the suite is used it overwrites whatever lies there. The bounds check on the
    // kept cases (Oclgrind) makes the input that writes it a finding.
    let src = "__kernel void k(__global int *out, int off)\n\
               {\n\
               \x20 __local int tmp[16];\n\
               \x20 int l = get_local_id(0);\n\
               \x20 tmp[l] = out[get_global_id(0)];\n\
               \x20 if (off > 0 && l == 0) tmp[16 + off % 8] = 0;\n\
               \x20 barrier(CLK_LOCAL_MEM_FENCE);\n\
               \x20 out[get_global_id(0)] = tmp[l] + 1;\n\
               }\n";
    let args = serde_json::json!([
        arg("out", Some(64), serde_json::json!("random"), true),
        arg("off", None, serde_json::json!({"fixed": 3}), false),
    ]);
    let dir = common::temp_dir("fuzz-cover-local-oob-write");
    let (suite, text) = fuzz(&dir, "k", src, args, &["--seed", "3", "--budget", "200"]);
    let fj: serde_json::Value =
        serde_json::from_slice(&std::fs::read(suite.join("fuzz.json")).unwrap()).unwrap();
    let said = fj["kernels"][0]["findings"].to_string();
    assert!(
        said.contains("the bounds check on the case"),
        "{said}\n{text}"
    );
    let (claimed, hit, problems) = fuzz_and_cover(&suite);
    assert!(problems.is_empty(), "{problems:?}\n{text}");
    assert_eq!(claimed, hit, "{text}");
    // No case reaches the write: the side that makes it is not claimed.
    assert!(
        !claimed
            .iter()
            .any(|(_, l)| l.starts_with("if (off > 0 && l == 0) true")),
        "{claimed:?}\n{text}"
    );
}
