//! The solving stage of `cltrap fuzz --solve` (z3) on the constructs real kernels use where
//! random values do not reach a branch: an array of structs in `__local` memory, a pointer to
//! `float4`, a loop of 16 (and of 40) iterations feeding the condition. Each branch is reached
//! only through the solver (its condition is not one of the kernel's constants, and the
//! fuzzing budget is small); the test asserts the side is solved and confirmed on PoCL.

mod common;

/// Fuzzes kernel `k` of `src` (global size 64 in groups of 16, `args`) with `--solve` and a
/// budget of 50 executions: the status of the slot labelled `label`.
fn solved(name: &str, src: &str, args: serde_json::Value, label: &str) -> (String, String) {
    let dir = common::temp_dir(name);
    std::fs::create_dir_all(&dir).unwrap();
    let k = dir.join("k.cl");
    std::fs::write(&k, src).unwrap();
    let iface = dir.join("k.json");
    let spec =
        serde_json::json!({"kernel": "k", "global_size": [64], "local_size": [16], "args": args});
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
            "50",
            "--out",
            suite.to_str().unwrap(),
        ],
        &[],
    );
    let text = out + &err;
    assert_eq!(code, 0, "{text}");
    let fj: serde_json::Value =
        serde_json::from_slice(&std::fs::read(suite.join("fuzz.json")).unwrap()).unwrap();
    let slot = fj["kernels"][0]["slots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["label"].as_str() == Some(label))
        .unwrap_or_else(|| panic!("no slot {label}: {fj}"))
        .clone();
    (slot["status"].as_str().unwrap_or("").to_string(), text)
}

fn buf(name: &str, output: bool) -> serde_json::Value {
    serde_json::json!({"name": name, "type": "", "size": 64, "fill": "random", "output": output})
}

#[test]
fn a_branch_on_a_field_of_a_local_array_of_structs_is_solved() {
    let src = "typedef struct { int a; float b; } S;\n\
               __kernel void k(__global const int *in, __global int *out)\n\
               {\n\
               \x20 __local S tmp[16];\n\
               \x20 int l = get_local_id(0);\n\
               \x20 tmp[l].a = in[get_global_id(0)];\n\
               \x20 tmp[l].b = 0.5f;\n\
               \x20 barrier(CLK_LOCAL_MEM_FENCE);\n\
               \x20 if (tmp[l].a * 3 + 7 == 370378) out[get_global_id(0)] = 1; else out[get_global_id(0)] = 0;\n\
               }\n";
    let args = serde_json::json!([buf("in", false), buf("out", true)]);
    let (status, text) = solved(
        "solve-local-structs",
        src,
        args,
        "if (tmp[l].a * 3 + 7 == 370378) true",
    );
    assert_eq!(status, "solved_and_confirmed", "{text}");
}

#[test]
fn a_branch_on_a_value_read_through_a_pointer_to_float4_is_solved() {
    let src = "__kernel void k(__global const float4 *in, __global float *out)\n\
               {\n\
               \x20 int i = get_global_id(0);\n\
               \x20 __global const float4 *p = in + i;\n\
               \x20 float4 v = *p;\n\
               \x20 if (v.x * 2.0f == 2469.0f + v.y) out[i] = 1.0f; else out[i] = 0.0f;\n\
               }\n";
    let args = serde_json::json!([buf("in", false), buf("out", true)]);
    let (status, text) = solved(
        "solve-float4-pointer",
        src,
        args,
        "if (v.x * 2.0f == 2469.0f + v.y) true",
    );
    assert_eq!(status, "solved_and_confirmed", "{text}");
}

#[test]
fn a_branch_on_a_sum_over_loops_of_16_and_40_iterations_is_solved() {
    for n in [16, 40] {
        let src = format!(
            "__kernel void k(__global const int *in, __global int *out)\n\
             {{\n\
             \x20 int i = get_global_id(0);\n\
             \x20 int s = 0;\n\
             \x20 for (int k = 0; k < {n}; k++) s += in[k];\n\
             \x20 if (s * 5 == 4938270) out[i] = 1; else out[i] = 0;\n\
             }}\n"
        );
        let args = serde_json::json!([buf("in", false), buf("out", true)]);
        let (status, text) = solved(
            &format!("solve-loop-{n}"),
            &src,
            args,
            "if (s * 5 == 4938270) true",
        );
        assert_eq!(status, "solved_and_confirmed", "loop of {n}: {text}");
    }
}
