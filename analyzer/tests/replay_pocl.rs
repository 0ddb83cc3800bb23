//! Replays of captures written programmatically, on the real OpenCL runtime (PoCL here):
//! correct expected outputs replay `ok`, wrong ones are reported at the right place, and
//! broken programs give a clear error. Also drives the `cltrap` binary for its exit codes.

mod common;
use common::{
    arg_info, f32s, i32s, ndrange_record, put_blob, put_source_program, temp_dir, test_manifest,
};

use cltrap_analyzer::compare::Closeness;
use cltrap_analyzer::executor::{DeviceSelector, ExecError, InputArg, LaunchInput, Session};
use cltrap_analyzer::replay::{replay_on, select, LaunchResult, Outcome};
use cltrap_capture::writer::digest;
use cltrap_capture::*;
use std::path::Path;
use std::process::Command;

const VADD: &str = "__kernel void vadd(__global const float* a, __global const float* b,\n                   __global float* c, uint n) {\n  size_t i = get_global_id(0);\n  if (i < n) c[i] = a[i] + b[i];\n}\n";

const ALIAS: &str = "__kernel void twice(__global int* x, __global int* y) {\n  size_t i = get_global_id(0);\n  x[i] += 1;\n  barrier(CLK_GLOBAL_MEM_FENCE);\n  y[i] += 10;\n}\n";

const LOCAL2D: &str = "__kernel void sum2d(__global int* out, __local int* tmp, int w) {\n  int x = get_global_id(0), y = get_global_id(1);\n  int l = get_local_id(1) * get_local_size(0) + get_local_id(0);\n  tmp[l] = x * 1000 + y;\n  barrier(CLK_LOCAL_MEM_FENCE);\n  out[y * w + x] = tmp[l] + (int)get_global_offset(0);\n}\n";

const BROKEN: &str = "__kernel void broken(__global int* x) { x[0] = undefined_name; }\n";

struct Builder {
    w: CaptureWriter,
}

impl Builder {
    fn new(dir: &Path) -> Builder {
        Builder {
            w: CaptureWriter::create(dir, &test_manifest("analyzer test")).unwrap(),
        }
    }

    fn program(&self, source: &str, options: &str) -> Hash {
        put_source_program(&self.w.blobs, source, options)
    }

    fn blob(&self, bytes: &[u8]) -> Content {
        put_blob(&self.w.blobs, bytes)
    }

    #[allow(clippy::too_many_arguments)]
    fn buffer(
        &self,
        index: u32,
        name: &str,
        ty: &str,
        mem: u64,
        before: &[u8],
        after: &[u8],
    ) -> ArgRecord {
        ArgRecord::Buffer {
            info: arg_info(index, name, ty, "global"),
            mem,
            flags: 1,
            size: before.len() as u64,
            sub_of: None,
            before: self.blob(before),
            after: self.blob(after),
        }
    }

    fn launch(
        &self,
        kernel: &str,
        program: &Hash,
        global: Vec<u64>,
        local: Option<Vec<u64>>,
        args: Vec<ArgRecord>,
    ) -> u64 {
        self.w
            .append(ndrange_record(
                kernel,
                program.clone(),
                global,
                None,
                local,
                args,
            ))
            .unwrap()
    }
}

fn vadd_args(b: &Builder, n: usize, corrupt: Option<(usize, f32)>) -> Vec<ArgRecord> {
    let a: Vec<f32> = (0..1024).map(|i| i as f32 * 0.5).collect();
    let bb: Vec<f32> = (0..1024).map(|i| 1.0 / (i as f32 + 1.0)).collect();
    let c0 = vec![-1.0f32; 1024];
    let mut c1: Vec<f32> = (0..1024)
        .map(|i| if i < n { a[i] + bb[i] } else { -1.0 })
        .collect();
    if let Some((i, v)) = corrupt {
        c1[i] = v;
    }
    vec![
        b.buffer(0, "a", "float*", 1, &f32s(&a), &f32s(&a)),
        b.buffer(1, "b", "float*", 2, &f32s(&bb), &f32s(&bb)),
        b.buffer(2, "c", "float*", 3, &f32s(&c0), &f32s(&c1)),
        ArgRecord::Scalar {
            info: arg_info(3, "n", "uint", "private"),
            bytes: hex::encode((n as u32).to_le_bytes()),
        },
    ]
}

mod hex {
    pub fn encode(b: impl AsRef<[u8]>) -> String {
        b.as_ref().iter().map(|x| format!("{x:02x}")).collect()
    }
}

fn replay_all(dir: &Path, ulp: impl Into<Closeness>) -> Vec<LaunchResult> {
    let capture = Capture::open(dir).unwrap();
    let session =
        Session::open(&DeviceSelector::default()).expect("an OpenCL device (PoCL) is installed");
    let launches = select(&capture, None).unwrap();
    let mut results = Vec::new();
    replay_on(&session, &capture, &launches, ulp, |r| {
        results.push(r.clone())
    });
    results
}

#[test]
fn vector_add_replays_ok_and_a_wrong_expectation_is_pinpointed() {
    let dir = temp_dir("vadd");
    let b = Builder::new(&dir);
    let p = b.program(VADD, "-cl-fast-relaxed-math -DUNUSED=1");
    b.launch(
        "vadd",
        &p,
        vec![1024],
        Some(vec![64]),
        vadd_args(&b, 1000, None),
    );
    b.launch(
        "vadd",
        &p,
        vec![1024],
        None,
        vadd_args(&b, 1000, Some((5, 99.0))),
    );
    let r = replay_all(&dir, 0);
    assert_eq!(r.len(), 2);
    assert!(matches!(r[0].outcome, Outcome::Ok { .. }), "{}", r[0]);
    assert_eq!(r[0].to_string(), "launch 0 vadd: ok");
    match &r[1].outcome {
        Outcome::Mismatch(m) => {
            assert_eq!((m.arg_index, m.arg_name.as_str()), (2, "c"));
            let text = m.to_string();
            assert!(
                text.contains("element 5") && text.contains("byte offset 20"),
                "{text}"
            );
            assert!(text.contains("expected 99.0 (0x42c60000)"), "{text}");
        }
        other => panic!("expected a mismatch, got {other:?}"),
    }
    assert!(
        r[1].to_string()
            .starts_with("launch 1 vadd: MISMATCH argument 2 (c, float*): element 5"),
        "{}",
        r[1]
    );
}

#[test]
fn one_ulp_off_needs_ulp_tolerance() {
    let dir = temp_dir("ulp");
    let b = Builder::new(&dir);
    let p = b.program(VADD, "");
    // Element 7: a = 3.5, b = 1/8, both exact, so the device's sum is exact too.
    let exact = 7.0f32 * 0.5 + 1.0 / 8.0;
    let off = f32::from_bits(exact.to_bits() + 1);
    b.launch(
        "vadd",
        &p,
        vec![1024],
        Some(vec![64]),
        vadd_args(&b, 1024, Some((7, off))),
    );
    let strict = replay_all(&dir, 0);
    match &strict[0].outcome {
        Outcome::Mismatch(m) => assert!(m.to_string().contains("1 ulp apart"), "{m}"),
        other => panic!("{other:?}"),
    }
    let tolerant = replay_all(&dir, 1);
    assert!(
        matches!(tolerant[0].outcome, Outcome::Ok { .. }),
        "{}",
        tolerant[0]
    );
}

#[test]
fn allclose_bounds_judge_outputs_and_mismatches_carry_error_statistics() {
    let dir = temp_dir("allclose");
    let b = Builder::new(&dir);
    let p = b.program(VADD, "");
    // Element 7 is exactly 3.625 on the device; the recording says 3.625·(1 + 1e-6).
    let exact = 7.0f32 * 0.5 + 1.0 / 8.0;
    let off = exact * (1.0 + 1e-6);
    assert_ne!(off, exact);
    b.launch(
        "vadd",
        &p,
        vec![1024],
        Some(vec![64]),
        vadd_args(&b, 1024, Some((7, off))),
    );
    let strict = replay_all(&dir, 0);
    let text = strict[0].to_string();
    assert!(matches!(strict[0].outcome, Outcome::Mismatch(_)), "{text}");
    assert!(
        text.contains("1 of 1024 elements differ")
            && text.contains("max abs error 3.")
            && text.contains("max rel error 9.")
            && text.contains("at element 7"),
        "{text}"
    );
    let close = |rtol: f64, atol: f64| Closeness::new(0, rtol, atol).unwrap();
    for (rtol, atol, ok) in [
        (1e-5, 0.0, true),
        (1e-7, 0.0, false),
        (0.0, 1e-5, true),
        (0.0, 1e-7, false),
        (1e-7, 1e-5, true),
    ] {
        let r = replay_all(&dir, close(rtol, atol));
        assert_eq!(
            matches!(r[0].outcome, Outcome::Ok { .. }),
            ok,
            "rtol {rtol} atol {atol}: {}",
            r[0]
        );
    }
    assert!(Closeness::new(0, -1.0, 0.0).is_err());
    assert!(Closeness::new(0, 0.0, f64::NAN).is_err());
}

#[test]
fn aliased_arguments_share_one_buffer() {
    let dir = temp_dir("alias");
    let b = Builder::new(&dir);
    let p = b.program(ALIAS, "");
    let before = i32s(&[0; 64]);
    // Both arguments are the same buffer: each element gets +1 and +10.
    let after = i32s(&[11; 64]);
    let args = vec![
        b.buffer(0, "x", "int*", 9, &before, &after),
        b.buffer(1, "y", "int*", 9, &before, &after),
    ];
    b.launch("twice", &p, vec![64], Some(vec![64]), args);
    let r = replay_all(&dir, 0);
    assert!(matches!(r[0].outcome, Outcome::Ok { .. }), "{}", r[0]);
}

#[test]
fn local_memory_two_dimensions_and_offsets_replay() {
    let dir = temp_dir("local2d");
    let b = Builder::new(&dir);
    let p = b.program(LOCAL2D, "");
    let (w, h) = (16usize, 8usize);
    let (ox, oy) = (4usize, 2usize);
    let before = vec![0i32; (w + ox) * (h + oy)];
    let mut after = before.clone();
    for y in oy..oy + h {
        for x in ox..ox + w {
            after[y * (w + ox) + x] = (x * 1000 + y) as i32 + ox as i32;
        }
    }
    let args = vec![
        b.buffer(0, "out", "int*", 1, &i32s(&before), &i32s(&after)),
        ArgRecord::Local {
            info: arg_info(1, "tmp", "int*", "local"),
            size: 4 * 8,
        },
        ArgRecord::Scalar {
            info: arg_info(2, "w", "int", "private"),
            bytes: hex::encode(((w + ox) as i32).to_le_bytes()),
        },
    ];
    let id = b.launch(
        "sum2d",
        &p,
        vec![w as u64, h as u64],
        Some(vec![4, 2]),
        args,
    );
    // Set the offset by rewriting the record: the builder appends offset-free launches.
    let log = dir.join("launches.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let mut rec: LaunchRecord =
        serde_json::from_str(text.lines().nth(id as usize).unwrap()).unwrap();
    rec.global_offset = Some(vec![ox as u64, oy as u64]);
    std::fs::write(&log, format!("{}\n", serde_json::to_string(&rec).unwrap())).unwrap();
    let r = replay_all(&dir, 0);
    assert!(matches!(r[0].outcome, Outcome::Ok { .. }), "{}", r[0]);
}

#[test]
fn hash_mode_outputs_are_compared_by_digest_and_missing_inputs_skip() {
    let dir = temp_dir("hash");
    let b = Builder::new(&dir);
    let p = b.program(ALIAS, "");
    let zeros = i32s(&[0; 32]);
    let good = i32s(&[11; 32]);
    let bad = i32s(&[12; 32]);
    // Contents no launch of this capture left anywhere: not derivable either.
    let unknown = i32s(&[13; 32]);
    let digest_arg = |index, name: &str, after: &[u8], before_known: bool| ArgRecord::Buffer {
        info: arg_info(index, name, "int*", "global"),
        mem: 4,
        flags: 1,
        size: zeros.len() as u64,
        sub_of: None,
        before: if before_known {
            Content::Digest {
                hash: digest(&zeros),
                size: zeros.len() as u64,
                algo: Default::default(),
            }
        } else {
            Content::Digest {
                hash: digest(&unknown),
                size: zeros.len() as u64,
                algo: Default::default(),
            }
        },
        after: Content::Digest {
            hash: digest(after),
            size: after.len() as u64,
            algo: Default::default(),
        },
    };
    // Inputs all zero: restorable from the digest alone.
    b.launch(
        "twice",
        &p,
        vec![32],
        None,
        vec![
            digest_arg(0, "x", &good, true),
            digest_arg(1, "y", &good, true),
        ],
    );
    b.launch(
        "twice",
        &p,
        vec![32],
        None,
        vec![
            digest_arg(0, "x", &bad, true),
            digest_arg(1, "y", &bad, true),
        ],
    );
    // Inputs not zero, only digested, and no earlier launch left them: cannot be restored.
    b.launch(
        "twice",
        &p,
        vec![32],
        None,
        vec![
            digest_arg(0, "x", &good, false),
            digest_arg(1, "y", &good, false),
        ],
    );
    let r = replay_all(&dir, 0);
    assert!(matches!(r[0].outcome, Outcome::Ok { .. }), "{}", r[0]);
    assert!(
        r[1].to_string()
            .contains("MISMATCH argument 0 (x, int*): digest differs"),
        "{}",
        r[1]
    );
    match &r[2].outcome {
        Outcome::Skipped(why) => assert!(
            why.contains("only their digest was captured")
                && why.contains("no launch before this one in the capture leaves them"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_program_that_no_longer_builds_is_a_clear_error_with_the_build_log() {
    let dir = temp_dir("broken");
    let b = Builder::new(&dir);
    let p = b.program(BROKEN, "");
    let buf = i32s(&[0; 4]);
    b.launch(
        "broken",
        &p,
        vec![4],
        None,
        vec![b.buffer(0, "x", "int*", 1, &buf, &buf)],
    );
    b.launch(
        "broken",
        &p,
        vec![4],
        None,
        vec![b.buffer(0, "x", "int*", 1, &buf, &buf)],
    );
    let r = replay_all(&dir, 0);
    for res in &r {
        match &res.outcome {
            Outcome::Error { line, full } => {
                assert!(line.starts_with("the program does not build on"), "{line}");
                assert!(full.contains("undefined_name"), "{full}");
            }
            other => panic!("{other:?}"),
        }
    }
    // And through the binary: exit 2, the log on stderr, the stable line on stdout.
    let out = Command::new(env!("CARGO_BIN_EXE_cltrap"))
        .arg("replay")
        .arg(&dir)
        .arg("0")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("launch 0 broken: error: the program does not build"),
        "{stdout}"
    );
    assert!(stderr.contains("undefined_name"), "{stderr}");
}

#[test]
fn extra_trailing_arguments_and_overridden_sources_run_through_the_executor() {
    // The instrumentation use: same launch, source rewritten to take a counters buffer.
    let dir = temp_dir("extras");
    let b = Builder::new(&dir);
    let p = b.program(VADD, "");
    let id = b.launch(
        "vadd",
        &p,
        vec![1024],
        Some(vec![64]),
        vadd_args(&b, 1000, None),
    );
    let capture = Capture::open(&dir).unwrap();
    let rec = capture.launch(id).unwrap();
    let input = LaunchInput::from_record(&capture, rec).unwrap();
    let session = Session::open(&DeviceSelector::default()).unwrap();
    let counted = VADD
        .replace("uint n)", "uint n, __global uint* hits)")
        .replace("if (i < n)", "atomic_inc(hits);\n  if (i < n)");
    let program = session
        .build(
            &capture,
            &capture.program(&rec.program).unwrap(),
            &cltrap_analyzer::executor::BuildOptions {
                source: Some(counted),
                extra_options: "-DX=1".into(),
            },
        )
        .unwrap();
    let extra = InputArg::Buffer {
        mem: None,
        flags: 1,
        bytes: 5u32.to_le_bytes().to_vec(),
    };
    let out = session
        .run(&program, &input, std::slice::from_ref(&extra))
        .unwrap();
    assert_eq!(out.outputs.len(), 5);
    assert_eq!(
        out.outputs[4].as_deref(),
        Some(&(5u32 + 1024).to_le_bytes()[..])
    );
    assert!(out.outputs[3].is_none());
    // Without the extra argument the instrumented kernel's arity no longer matches.
    match session.run(&program, &input, &[]) {
        Err(ExecError::ArgCount {
            expected: 5,
            got: 4,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    // Many runs reuse one build, and release every object they create: 300 runs with an
    // extra 4 MiB buffer would grow the process by over 1 GiB if one leaked.
    let big = InputArg::Buffer {
        mem: None,
        flags: 1,
        bytes: vec![0u8; 4 << 20],
    };
    let small_kernel = "__kernel void touch(__global uint* hits, __global uchar* big) {\n  if (get_global_id(0) == 0) { atomic_inc(hits); big[4194303] = 1; }\n}\n";
    let touch = session.build_source(small_kernel, "").unwrap();
    let touch_input = LaunchInput {
        kernel: "touch".into(),
        work_dim: 1,
        global_offset: None,
        global_size: vec![64],
        local_size: None,
        args: vec![extra.clone()],
        stand_ins: vec![],
    };
    let rss = || -> u64 { cltrap_capture::bulk::resident_bytes().expect("/proc/self/statm") };
    for _ in 0..20 {
        session
            .run(&touch, &touch_input, std::slice::from_ref(&big))
            .unwrap();
    }
    let start = rss();
    for _ in 0..300 {
        let out = session
            .run(&touch, &touch_input, std::slice::from_ref(&big))
            .unwrap();
        assert_eq!(out.outputs[1].as_ref().map(|b| b[4194303]), Some(1));
    }
    let grown = rss().saturating_sub(start);
    assert!(
        grown < 256 << 20,
        "300 runs grew the process by {grown} bytes"
    );
}

#[test]
fn the_cli_lists_shows_and_refuses_bad_input_with_exit_2() {
    let dir = temp_dir("cli");
    let b = Builder::new(&dir);
    let p = b.program(VADD, "-DN=1");
    b.launch(
        "vadd",
        &p,
        vec![1024],
        Some(vec![64]),
        vadd_args(&b, 1000, None),
    );
    b.launch(
        "vadd",
        &p,
        vec![1024],
        Some(vec![64]),
        vadd_args(&b, 1000, Some((0, 77.0))),
    );
    let cltrap = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_cltrap"))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let d = dir.to_str().unwrap();
    let (code, list, _) = cltrap(&["list", d]);
    assert_eq!(code, Some(0));
    assert!(
        list.lines().nth(1).unwrap().contains("vadd") && list.contains("n=1000"),
        "{list}"
    );
    let (code, show, _) = cltrap(&["show", d, "1"]);
    assert_eq!(code, Some(0));
    assert!(show.contains("`vadd` defined at line 1"), "{show}");
    assert!(show.contains("options: \"-DN=1\""), "{show}");
    let (code, out, _) = cltrap(&["replay", d]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("launch 0 vadd: ok\n") && out.contains("launch 1 vadd: MISMATCH"),
        "{out}"
    );
    let (code, out, _) = cltrap(&["replay", d, "0"]);
    assert!(out.contains("replayed 1 launch(es): 1 matched"), "{out}");
    let (code2, out2, _) = cltrap(&["replay", d, "0", "1"]);
    assert_eq!(code2, Some(1), "{out2}");
    assert_eq!(
        out2.lines()
            .filter(|l| l.split(|c: char| !c.is_alphanumeric()).any(|w| w == "ok"))
            .count(),
        1,
        "{out2}"
    );
    assert_eq!(code, Some(0), "{out}");
    let (code, _, err) = cltrap(&["show", d, "7"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("launch 7 is not in this capture"), "{err}");
    let (code, _, err) = cltrap(&["replay", d, "1-x"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("not a launch id selection"), "{err}");
    let (code, _, err) = cltrap(&["list", "/nonexistent/capture"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no manifest.json"), "{err}");
    let (code, _, err) = cltrap(&["replay", d, "--device", "no-such-device-xyz"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no device matches"), "{err}");
    // A corrupt log line is named.
    std::fs::write(dir.join("launches.jsonl"), "{\"id\": 0, \"kernel\": 3}\n").unwrap();
    let (code, _, err) = cltrap(&["list", d]);
    assert_eq!(code, Some(2));
    assert!(err.contains("corrupt") && err.contains("line 1"), "{err}");
}

const IMAGES: &str = "__kernel void flip(__read_only image2d_t src, __write_only image2d_t dst,\n                   sampler_t smp, __global uint* sums) {\n  int x = get_global_id(0), y = get_global_id(1);\n  int w = get_image_width(src);\n  uint4 p = read_imageui(src, smp, (int2)(w - 1 - x, y));\n  write_imageui(dst, (int2)(x, y), p + (uint4)(1, 1, 1, 1));\n  sums[y * w + x] = p.x + p.y + p.z + p.w;\n}\n";

#[test]
fn images_and_samplers_are_recreated_and_compared() {
    let dir = temp_dir("images");
    let b = Builder::new(&dir);
    let p = b.program(IMAGES, "");
    let (w, h) = (8usize, 4usize);
    let src: Vec<u8> = (0..w * h * 4).map(|i| (i * 7 % 200) as u8).collect();
    let dst0 = vec![0u8; w * h * 4];
    let mut dst1 = dst0.clone();
    let mut sums = vec![0u32; w * h];
    for y in 0..h {
        for x in 0..w {
            let from = (y * w + (w - 1 - x)) * 4;
            let to = (y * w + x) * 4;
            for c in 0..4 {
                dst1[to + c] = src[from + c] + 1;
            }
            sums[y * w + x] = src[from..from + 4].iter().map(|v| u32::from(*v)).sum();
        }
    }
    let image = ImageRecord {
        image_type: 0x10F1,
        channel_order: 0x10B5,
        channel_data_type: 0x10DA,
        width: w as u64,
        height: h as u64,
        depth: 0,
        array_size: 0,
        element_size: 4,
    };
    let img = |index, name: &str, mem, flags, before: &[u8], after: &[u8]| ArgRecord::Image {
        info: arg_info(index, name, "image2d_t", "global"),
        mem,
        flags,
        image: image.clone(),
        before: b.blob(before),
        after: b.blob(after),
    };
    let sums_bytes: Vec<u8> = sums.iter().flat_map(|v| v.to_le_bytes()).collect();
    let zero_sums = vec![0u8; sums_bytes.len()];
    let args = |dst_after: &[u8]| {
        vec![
            img(0, "src", 1, 4, &src, &src),
            img(1, "dst", 2, 2, &dst0, dst_after),
            ArgRecord::Sampler {
                info: arg_info(2, "smp", "sampler_t", "private"),
                normalized_coords: false,
                addressing_mode: 0x1131,
                filter_mode: 0x1140,
            },
            b.buffer(3, "sums", "uint*", 3, &zero_sums, &sums_bytes),
        ]
    };
    b.launch("flip", &p, vec![w as u64, h as u64], None, args(&dst1));
    let mut wrong = dst1.clone();
    wrong[4 * 9 + 2] ^= 0x10; // pixel 9, channel 2
    b.launch("flip", &p, vec![w as u64, h as u64], None, args(&wrong));
    let r = replay_all(&dir, 0);
    assert!(matches!(r[0].outcome, Outcome::Ok { .. }), "{}", r[0]);
    match &r[1].outcome {
        Outcome::Mismatch(m) => {
            assert_eq!(m.arg_index, 1);
            let text = m.to_string();
            assert!(
                text.contains("pixel (1,1) channel 2") && text.contains("byte offset 38"),
                "{text}"
            );
            assert!(text.contains("expected 23 (0x17), got 7 (0x07)"), "{text}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn failed_and_not_replayable_launches_are_skipped_with_their_reason() {
    let dir = temp_dir("skips");
    let b = Builder::new(&dir);
    let p = b.program(VADD, "");
    let id = b.launch(
        "vadd",
        &p,
        vec![1024],
        Some(vec![64]),
        vadd_args(&b, 1000, None),
    );
    let log = dir.join("launches.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let mut rec: LaunchRecord =
        serde_json::from_str(text.lines().nth(id as usize).unwrap()).unwrap();
    let mut failed = rec.clone();
    // Its own id: a capture holds each id once (a second copy is dropped as a duplicate).
    failed.id = rec.id + 1;
    failed.status = -54;
    rec.not_replayable = vec!["argument 2 is an SVM pointer".into()];
    let lines = [&rec, &failed]
        .map(|r| serde_json::to_string(r).unwrap())
        .join("\n");
    std::fs::write(&log, format!("{lines}\n")).unwrap();
    let r = replay_all(&dir, 0);
    assert_eq!(
        r[0].to_string(),
        "launch 0 vadd: skipped: argument 2 is an SVM pointer"
    );
    assert!(
        r[1].to_string()
            .contains("skipped: the application's enqueue failed (CL_INVALID_WORK_GROUP_SIZE"),
        "{}",
        r[1]
    );
}

const LINK_LIB: &str = "int mix_value(int x) { return x * 3 - 1; }\n";
const LINK_MAIN: &str = "#include \"mix_helper.h\"\n__kernel void mix(__global const int* in, __global int* out) {\n  size_t g = get_global_id(0);\n  out[g] = mix_value(in[g]) + MIX_OFFSET;\n}\n";
const LINK_HEADER: &str = "#define MIX_OFFSET 7\nint mix_value(int x);\n";

fn mix_args(b: &Builder) -> Vec<ArgRecord> {
    let input: Vec<i32> = (0..64).map(|i| i - 20).collect();
    let out: Vec<i32> = input.iter().map(|x| x * 3 - 1 + 7).collect();
    vec![
        b.buffer(0, "in", "int*", 1, &i32s(&input), &i32s(&input)),
        b.buffer(1, "out", "int*", 2, &i32s(&[0; 64]), &i32s(&out)),
    ]
}

/// A program linked from `inputs`, each compiled by `clCompileProgram`.
fn linked(inputs: Vec<CompiledInput>) -> ProgramRecord {
    ProgramRecord {
        origin: ProgramOrigin::Linked { inputs },
        options: String::new(),
        devices: vec![],
        build_site: None,
        includes: Default::default(),
    }
}

#[test]
fn compiled_and_linked_programs_replay_with_their_embedded_headers() {
    let dir = temp_dir("linked");
    let b = Builder::new(&dir);
    let put = |s: &str| b.w.blobs.put(s.as_bytes()).unwrap();
    let rec = linked(vec![
        CompiledInput {
            origin: Box::new(ProgramOrigin::Source {
                sources: vec![put(LINK_MAIN)],
            }),
            compile_options: "-cl-std=CL1.2".into(),
            headers: vec![("mix_helper.h".into(), put(LINK_HEADER))],
        },
        CompiledInput {
            origin: Box::new(ProgramOrigin::Source {
                sources: vec![put(LINK_LIB)],
            }),
            compile_options: String::new(),
            headers: vec![],
        },
    ]);
    let p = b.w.blobs.put(&serde_json::to_vec(&rec).unwrap()).unwrap();
    b.launch("mix", &p, vec![64], None, mix_args(&b));
    let r = replay_all(&dir, 0);
    assert!(matches!(r[0].outcome, Outcome::Ok { .. }), "{}", r[0]);
}

#[test]
fn an_embedded_header_named_outside_its_folder_is_refused_before_any_compiler_sees_it() {
    // PoCL writes each embedded header of clCompileProgram to TMP/NAME, creating folders: a
    // capture naming `../../../x` would make replay write the header's text anywhere.
    let outside = temp_dir("linked-outside");
    std::fs::create_dir_all(&outside).unwrap();
    let planted = outside.join("planted.h");
    let hostile = format!(
        "{}{}",
        "../".repeat(24),
        planted.display().to_string().trim_start_matches('/')
    );
    let dir = temp_dir("linked-hostile");
    let b = Builder::new(&dir);
    let put = |s: &str| b.w.blobs.put(s.as_bytes()).unwrap();
    let rec = linked(vec![CompiledInput {
        origin: Box::new(ProgramOrigin::Source {
            sources: vec![put(LINK_MAIN)],
        }),
        compile_options: String::new(),
        headers: vec![
            (hostile, put("#define PLANTED 1\n")),
            ("mix_helper.h".into(), put(LINK_HEADER)),
        ],
    }]);
    let p = b.w.blobs.put(&serde_json::to_vec(&rec).unwrap()).unwrap();
    b.launch("mix", &p, vec![64], None, mix_args(&b));
    let r = replay_all(&dir, 0);
    match &r[0].outcome {
        Outcome::Error { full, .. } => assert!(
            full.contains("is not a relative path without `..`"),
            "{full}"
        ),
        other => panic!("the hostile header name was not refused: {other:?}"),
    }
    assert!(!planted.exists(), "replay wrote {}", planted.display());
    let _ = std::fs::remove_dir_all(&outside);
}

#[test]
fn programs_from_binaries_replay_on_a_device_that_accepts_them() {
    let session = Session::open(&DeviceSelector::default()).unwrap();
    let built = session.build_source(VADD, "").unwrap();
    let binary = session.program_binary(&built).unwrap();
    assert!(!binary.is_empty());
    let dir = temp_dir("binary");
    let b = Builder::new(&dir);
    let good = b.w.blobs.put(&binary).unwrap();
    let garbage = b.w.blobs.put(b"definitely not a device binary").unwrap();
    let record = |bin: &Hash| ProgramRecord {
        origin: ProgramOrigin::Binary {
            binaries: vec![bin.clone()],
        },
        options: String::new(),
        devices: vec![session.info().name.clone()],
        build_site: None,
        includes: Default::default(),
    };
    let p_good =
        b.w.blobs
            .put(&serde_json::to_vec(&record(&good)).unwrap())
            .unwrap();
    let p_bad =
        b.w.blobs
            .put(&serde_json::to_vec(&record(&garbage)).unwrap())
            .unwrap();
    b.launch(
        "vadd",
        &p_good,
        vec![1024],
        Some(vec![64]),
        vadd_args(&b, 1000, None),
    );
    b.launch(
        "vadd",
        &p_bad,
        vec![1024],
        Some(vec![64]),
        vadd_args(&b, 1000, None),
    );
    // A CPU device runs a binary as native code in this process: only when trusted.
    let capture = Capture::open(&dir).unwrap();
    let launches = select(&capture, None).unwrap();
    let mut session = Session::open(&DeviceSelector::default()).unwrap();
    let replay = |session: &Session| {
        let mut r = Vec::new();
        replay_on(session, &capture, &launches, 0u64, |x| r.push(x.clone()));
        r
    };
    for r in replay(&session) {
        assert!(
            r.to_string().contains(
                "skipped: its program is a binary, which a CPU device runs as \
                 native code in cltrap's own process; replay it on a GPU, or set \
                 CLTRAP_TRUST_BINARIES=1"
            ),
            "{r}"
        );
    }
    session.trust_binaries(true);
    let r = replay(&session);
    assert!(matches!(r[0].outcome, Outcome::Ok { .. }), "{}", r[0]);
    match &r[1].outcome {
        Outcome::Error { line, .. } => assert!(
            line.contains("does not build") || line.contains("binary"),
            "{line}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_launch_claiming_more_memory_than_the_machine_has_is_skipped_before_anything_is_restored() {
    // Eight buffers of 64 GiB, each "the digest of all zeros" in a record of a few hundred
    // bytes: restoring them lazily, then copying them to the device, would end at the OOM
    // killer.
    let dir = temp_dir("huge-zeros");
    let b = Builder::new(&dir);
    let n = 8u32;
    let params: Vec<String> = (0..n).map(|i| format!("global int *a{i}")).collect();
    let src = format!("kernel void huge({}) {{ a0[0] = 1; }}\n", params.join(", "));
    let p = b.program(&src, "");
    let size = 1u64 << 36;
    let zeros = Content::Digest {
        hash: "0".repeat(64),
        size,
        algo: Default::default(),
    };
    let args = (0..n)
        .map(|i| ArgRecord::Buffer {
            info: arg_info(i, &format!("a{i}"), "int*", "global"),
            mem: u64::from(i) + 1,
            flags: 1,
            size,
            sub_of: None,
            before: zeros.clone(),
            after: zeros.clone(),
        })
        .collect();
    b.launch("huge", &p, vec![1], None, args);
    let r = replay_all(&dir, 0);
    assert!(
        r[0].to_string().contains(&format!(
            "skipped: its buffers and images take {} bytes, more than the memory available for them and \
             the CPU device's copy",
            size * u64::from(n)
        )),
        "{}",
        r[0]
    );
}

#[test]
fn inline_assembly_never_builds_for_a_cpu_device_however_it_is_spelled() {
    // PoCL compiles `__asm__` in OpenCL C and runs it in this process (a `syscall` included).
    let session = Session::open(&DeviceSelector::default()).unwrap();
    assert!(
        session.runs_in_this_process(),
        "PoCL's CPU device is the test device"
    );
    let body = "(\"nop\"); x[0] = 1; }";
    for (what, text) in [
        (
            "asm",
            format!("kernel void k(global int *x) {{ asm volatile{body}"),
        ),
        (
            "__asm",
            format!("kernel void k(global int *x) {{ __asm volatile{body}"),
        ),
        (
            "__asm__",
            format!("kernel void k(global int *x) {{ __asm__ volatile{body}"),
        ),
        (
            "pasted",
            format!(
                "#define P(a, b) a##b\nkernel void k(global int *x) {{ P(__as, m__) volatile{body}"
            ),
        ),
        (
            "register",
            "kernel void k(global int *x) { register int r __asm__(\"rsp\"); x[0] = r; }".into(),
        ),
    ] {
        match session.build_source(&text, "") {
            // An asm label after a declarator fails as a syntax error, without the name.
            Err(e) => assert!(
                e.to_string()
                    .contains("cltrap_refuses_inline_assembly_on_a_cpu_device")
                    || (what == "register" && e.to_string().contains("expected ';'")),
                "{what}: {e}"
            ),
            Ok(_) => panic!("{what}: inline assembly was built for the CPU device"),
        }
    }
    // Plain OpenCL C builds as before.
    session
        .build_source("kernel void k(global int *x) { x[0] = 1; }", "")
        .unwrap();
}

#[test]
fn unrecorded_write_only_outputs_replay_only_when_fully_overwritten() {
    let dir = temp_dir("writeonly");
    let b = Builder::new(&dir);
    let p = b.program(VADD, "");
    for n in [1024usize, 1000] {
        let mut args = vadd_args(&b, n, None);
        if let ArgRecord::Buffer {
            flags,
            before,
            after,
            ..
        } = &mut args[2]
        {
            *flags = 2; // CL_MEM_WRITE_ONLY
            let garbage = f32s(&[7.0; 1024]);
            *before = Content::Digest {
                hash: digest(&garbage),
                size: garbage.len() as u64,
                algo: Default::default(),
            };
            let Content::Blob { hash, size } = after.clone() else {
                unreachable!()
            };
            *after = Content::Digest {
                hash,
                size,
                algo: Default::default(),
            };
        }
        b.launch("vadd", &p, vec![1024], Some(vec![64]), args);
    }
    let r = replay_all(&dir, 0);
    assert!(matches!(r[0].outcome, Outcome::Ok { .. }), "{}", r[0]);
    match &r[1].outcome {
        Outcome::Skipped(why) => assert!(why.contains("does not overwrite all of it"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_session_and_its_programs_can_move_to_a_worker_thread() {
    let session = Session::open(&DeviceSelector::default()).unwrap();
    let program = session.build_source(ALIAS, "").unwrap();
    let input = LaunchInput {
        kernel: "twice".into(),
        work_dim: 1,
        global_offset: None,
        global_size: vec![4],
        local_size: None,
        args: vec![
            InputArg::Buffer {
                mem: Some(1),
                flags: 1,
                bytes: i32s(&[1, 2, 3, 4]),
            },
            InputArg::Buffer {
                mem: Some(2),
                flags: 1,
                bytes: i32s(&[0; 4]),
            },
        ],
        stand_ins: vec![],
    };
    let out = std::thread::spawn(move || session.run(&program, &input, &[]).unwrap())
        .join()
        .unwrap();
    assert_eq!(out.outputs[0].as_deref(), Some(&i32s(&[2, 3, 4, 5])[..]));
    assert_eq!(out.outputs[1].as_deref(), Some(&i32s(&[10; 4])[..]));
    assert!(out.kernel_ns.is_some(), "PoCL reports profiling times");
}

const SUB: &str = "__kernel void halves(__global float* whole, __global float* part) {\n  size_t i = get_global_id(0);\n  part[i] = part[i] * 2.0f;\n  whole[i] = part[i] + 1.0f;\n}\n";

#[test]
fn a_sub_buffer_passed_with_its_parent_stays_a_view_of_it() {
    let dir = temp_dir("subbuf");
    let b = Builder::new(&dir);
    let p = b.program(SUB, "");
    let origin = 1024usize; // bytes: aligned for every device's CL_DEVICE_MEM_BASE_ADDR_ALIGN
    let first = origin / 4;
    let whole0: Vec<f32> = (0..512).map(|i| i as f32).collect();
    let mut whole1 = whole0.clone();
    for i in 0..64 {
        whole1[first + i] *= 2.0;
        whole1[i] = whole1[first + i] + 1.0;
    }
    let part0 = &whole0[first..first + 64];
    let part1 = &whole1[first..first + 64];
    // The sub-buffer argument (mem 2 at `origin` bytes into mem 1), the same in both launches.
    let part = || ArgRecord::Buffer {
        info: arg_info(1, "part", "float*", "global"),
        mem: 2,
        flags: 1,
        size: 256,
        sub_of: Some((1, origin as u64)),
        before: b.blob(&f32s(part0)),
        after: b.blob(&f32s(part1)),
    };
    let args = vec![
        b.buffer(0, "whole", "float*", 1, &f32s(&whole0), &f32s(&whole1)),
        part(),
    ];
    b.launch("halves", &p, vec![64], None, args);
    // The same sub-buffer without its parent among the arguments replays standalone.
    let alone = vec![
        b.buffer(
            0,
            "whole",
            "float*",
            3,
            &f32s(&[0.0; 64]),
            &f32s(&part1.iter().map(|v| v + 1.0).collect::<Vec<_>>()),
        ),
        part(),
    ];
    b.launch("halves", &p, vec![64], None, alone);
    let r = replay_all(&dir, 0);
    assert!(matches!(r[0].outcome, Outcome::Ok { .. }), "{}", r[0]);
    assert!(matches!(r[1].outcome, Outcome::Ok { .. }), "{}", r[1]);
    let capture = Capture::open(&dir).unwrap();
    let input = LaunchInput::from_record(&capture, &capture.launches[0]).unwrap();
    assert!(matches!(
        input.args[1],
        InputArg::SubBuffer {
            parent: 1,
            origin: 1024,
            ..
        }
    ));
    let input = LaunchInput::from_record(&capture, &capture.launches[1]).unwrap();
    assert!(matches!(input.args[1], InputArg::Buffer { .. }));

    // In guard zones (mutation testing, fuzzing) the parent is a view into a padded
    // allocation and the sub-buffer is cut from that allocation: the same results, no breach.
    let session = Session::open(&DeviceSelector::default()).expect("an OpenCL device (PoCL)");
    let rec = &capture.launches[0];
    let record = capture.program(&rec.program).unwrap();
    let built = session
        .build(&capture, &record, &Default::default())
        .unwrap();
    let input = LaunchInput::from_record(&capture, rec).unwrap();
    let plain = session.run(&built, &input, &[]).unwrap();
    let (guarded, breaches) = session.run_guarded(&built, &input, &[]).unwrap();
    assert_eq!(plain.outputs, guarded.outputs);
    assert_eq!(guarded.outputs[0].as_deref(), Some(&f32s(&whole1)[..]));
    assert!(breaches.is_empty(), "{breaches:?}");
}

const STRAY: &str = "__kernel void stray(__global int* a, __global int* b, int at) {\n  if (get_global_id(0) == 0) { a[at] = 7; b[-1] = 9; }\n}\n";

#[test]
fn guard_zones_catch_stray_writes_on_both_sides_and_keep_them_out_of_the_outputs() {
    let session = Session::open(&DeviceSelector::default()).expect("an OpenCL device (PoCL)");
    let built = session.build_source(STRAY, "").unwrap();
    let buf = |mem: u64| InputArg::Buffer {
        mem: Some(mem),
        flags: 1,
        bytes: i32s(&[0; 4]),
    };
    let input = |at: i32| LaunchInput {
        kernel: "stray".into(),
        work_dim: 1,
        global_offset: None,
        global_size: vec![1],
        local_size: None,
        args: vec![buf(1), buf(2), InputArg::Scalar(at.to_le_bytes().to_vec())],
        stand_ins: vec![],
    };
    // a[5]: 8 bytes past a's end (its last int is a[3]); b[-1]: 4 bytes before b's start.
    let (out, breaches) = session.run_guarded(&built, &input(5), &[]).unwrap();
    assert_eq!(out.outputs[0].as_deref(), Some(&i32s(&[0; 4])[..]));
    assert_eq!(out.outputs[1].as_deref(), Some(&i32s(&[0; 4])[..]));
    let found: Vec<(usize, Option<u64>, Option<u64>)> = breaches
        .iter()
        .map(|b| (b.arg_index, b.before, b.after))
        .collect();
    assert_eq!(found, vec![(0, None, Some(8)), (1, Some(4), None)]);
    // In bounds for a: only b's stray write is left.
    let (out, breaches) = session.run_guarded(&built, &input(2), &[]).unwrap();
    assert_eq!(out.outputs[0].as_deref(), Some(&i32s(&[0, 0, 7, 0])[..]));
    assert_eq!(breaches.len(), 1);
    assert_eq!(breaches[0].arg_index, 1);
}
