//! What a generated suite can tell apart: `cltrap fuzz` keeps, besides one case per new
//! branch side, a few cases for their outputs alone (values on a comparison's boundary, the
//! input classes), and fuzzes again when the checks of kept cases took out the only case
//! of a side. Judged by `cltrap mutate` on the suite, on the real OpenCL runtime (PoCL).

use std::path::{Path, PathBuf};

mod common;

use common::iface_arg as arg;

/// `cltrap fuzz` of kernel `k` written in `source` (see [`common::fuzz_interface`]).
fn fuzz(dir: &Path, source: &str, args: serde_json::Value, extra: &[&str]) -> (PathBuf, String) {
    common::fuzz_interface(dir, "k", source, args, extra)
}

/// `cltrap mutate` on `suite`: (operator, replacement, status) of every mutant.
fn mutants(dir: &Path, suite: &Path) -> Vec<(String, String, String)> {
    let json = dir.join("mutate.json");
    let (code, out, err) = common::cltrap(
        &[
            "mutate",
            suite.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--out",
            dir.join("mutate").to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let mut all = Vec::new();
    for file in report["files"].as_object().unwrap().values() {
        for m in file["mutants"].as_array().unwrap() {
            all.push((
                m["mutatorName"].as_str().unwrap_or("").to_string(),
                m["replacement"].as_str().unwrap_or("").to_string(),
                m["statusReason"]
                    .as_str()
                    .unwrap_or("")
                    .split(':')
                    .next()
                    .unwrap_or("")
                    .to_string(),
            ));
        }
    }
    all
}

#[test]
fn the_suite_holds_a_case_on_the_boundary_and_the_boundary_mutant_is_killed() {
    // The random seed reaches both sides of `in[i] > t` (so coverage alone keeps that one
    // case), but no random float equals `t`: only a case with an element exactly on the
    // boundary tells `>` from `>=`.
    let src = "__kernel void k(__global const float *in, __global float *out, float t)\n\
               {\n\
               \x20 int i = get_global_id(0);\n\
               \x20 if (in[i] > t) out[i] = 1.0f; else out[i] = 0.0f;\n\
               }\n";
    let args = serde_json::json!([
        arg("in", Some(64), serde_json::json!("random"), false),
        arg("out", Some(64), serde_json::json!("random"), true),
        arg("t", None, serde_json::json!("random"), false),
    ]);
    let dir = common::temp_dir("fuzz-kill-boundary");
    let (suite, text) = fuzz(&dir, src, args, &["--seed", "3", "--budget", "400"]);
    let all = mutants(&dir, &suite);
    let boundary: Vec<_> = all
        .iter()
        .filter(|(op, rep, _)| op == "relational_boundary" && rep.contains(">="))
        .collect();
    assert!(!boundary.is_empty(), "{all:?}");
    for (_, rep, status) in boundary {
        assert_eq!(status, "KILLED", "{rep}: {all:?}\n{text}");
    }
}

#[test]
fn a_side_whose_only_case_the_bounds_check_took_out_is_fuzzed_again() {
    // The seed (off = 20) reaches `off > 0` by writing past the `__local` array, unseen by
    // the guard zones: the bounds check on kept cases makes it a finding, and with it the
    // only case of that side leaves the suite. Fuzzing again from the cases left finds an
    // `off` inside the array (1..15) that reaches the side and passes the checks.
    let src = "__kernel void k(__global int *out, int off)\n\
               {\n\
               \x20 __local int tmp[16];\n\
               \x20 int l = get_local_id(0);\n\
               \x20 tmp[l] = out[get_global_id(0)];\n\
               \x20 barrier(CLK_LOCAL_MEM_FENCE);\n\
               \x20 if (off > 0) {\n\
               \x20   if (l == 0) tmp[off] = 7;\n\
               \x20 }\n\
               \x20 barrier(CLK_LOCAL_MEM_FENCE);\n\
               \x20 out[get_global_id(0)] = tmp[l] + 1;\n\
               }\n";
    let args = serde_json::json!([
        arg("out", Some(64), serde_json::json!("random"), true),
        arg("off", None, serde_json::json!({"fixed": 20}), false),
    ]);
    let dir = common::temp_dir("fuzz-refuzz-after-bounds");
    let (suite, text) = fuzz(&dir, src, args, &["--seed", "3", "--budget", "2000"]);
    let fj: serde_json::Value =
        serde_json::from_slice(&std::fs::read(suite.join("fuzz.json")).unwrap()).unwrap();
    let k = &fj["kernels"][0];
    assert!(
        k["findings"]
            .to_string()
            .contains("the bounds check on the case"),
        "{k}\n{text}"
    );
    for s in k["slots"].as_array().unwrap() {
        assert_eq!(s["status"], "covered_by_fuzzing", "{s}\n{text}");
    }
    // And cover measures what fuzz claims.
    let report = dir.join("cover.json");
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
    assert!(c["problems"].as_array().unwrap().is_empty(), "{c}");
}
