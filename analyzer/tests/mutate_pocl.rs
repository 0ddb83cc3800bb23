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
