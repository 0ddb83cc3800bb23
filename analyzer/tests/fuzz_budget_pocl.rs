//! `cltrap fuzz --budget TIME` is the campaign's wall time: the compile counts, the seeds and
//! input classes stop once some case is kept, the solver gets what is left, and the findings
//! are not located (Oclgrind) once it is spent. On the real OpenCL runtime (PoCL).

mod common;

#[test]
fn a_spent_time_budget_stops_the_input_classes_and_skips_locating_the_findings() {
    // The seed (off = 8) writes past `out` into its guard zone: a finding, no case. The
    // all-zero class then gives the first case. A budget of one millisecond is spent before
    // any of this (the compile alone takes longer): the campaign keeps that one case, runs no
    // other class, and says why it did not locate the finding.
    let dir = common::temp_dir("fuzz-budget-spent");
    std::fs::create_dir_all(&dir).unwrap();
    let src = "__kernel void k(__global int *out, int off)\n\
               {\n\
               \x20 int i = get_global_id(0);\n\
               \x20 if (off > 3) out[i + off] = 1; else out[i] = 2;\n\
               }\n";
    let k = dir.join("k.cl");
    std::fs::write(&k, src).unwrap();
    let iface = dir.join("k.json");
    let spec = serde_json::json!({
        "kernel": "k", "global_size": [64], "local_size": [16], "args": [
            {"name": "out", "type": "", "size": 64, "fill": "random", "output": true},
            {"name": "off", "type": "", "fill": {"fixed": 8}, "output": false},
        ],
    });
    std::fs::write(&iface, serde_json::to_vec_pretty(&spec).unwrap()).unwrap();
    let suite = dir.join("suite");
    let (code, out, err) = common::cltrap(
        &[
            "fuzz",
            k.to_str().unwrap(),
            "--interface",
            iface.to_str().unwrap(),
            "--solve",
            "--budget",
            "1ms",
            "--out",
            suite.to_str().unwrap(),
        ],
        &[],
    );
    let text = out + &err;
    assert!(code == 0 || code == 1, "{text}");
    assert!(
        text.contains("were not looked for: the campaign's --budget ran out"),
        "{text}"
    );
    let fj: serde_json::Value =
        serde_json::from_slice(&std::fs::read(suite.join("fuzz.json")).unwrap()).unwrap();
    let k = &fj["kernels"][0];
    let cases = k["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1, "{k}\n{text}");
    assert_eq!(cases[0][2], "all-zero input", "{k}\n{text}");
    // The seed, the all-zero class, and the run of the kept case as cover runs it.
    assert!(k["executions"].as_u64().unwrap() <= 3, "{k}\n{text}");
}
