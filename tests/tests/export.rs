//! `cltrap export` and `cltrap show --kernel`: GPUVerify records of a real capture checked
//! field by field against a hand-written expectation, the generalisation of launches that
//! vary in known ways, and standalone reproducers compiled with `cc`, run on PoCL and held to
//! the same verdict as `cltrap replay` (a mismatching launch included).

use cltrap_e2e::*;
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

fn cltrap_ok(args: &[&OsStr]) -> Outcome {
    let out = cltrap(args);
    out.assert_no_panic();
    assert!(out.success(), "{}", out.describe());
    out
}

/// The hand-written expectation for `tests/apps/varying.c` (see its header comment): one
/// record per distinct global size of `scale` (n = 100 twice shares one), one for `fill`.
fn expected_records() -> Vec<(Value, &'static str)> {
    let scale = |file: &str, global: u64, n: &str, bytes: u64| {
        json!({
            "language": "OpenCL",
            "endianness": "little",
            "kernel_file": file,
            "entry_point": "scale",
            "compiler_flags": "-DOFFSET=1 -cl-mad-enable",
            "global_size": [global],
            "local_size": [64],
            "kernel_arguments": [
                {"type": "array", "address_space": "global",
                 "flags": ["CL_MEM_READ_WRITE", "CL_MEM_COPY_HOST_PTR"], "size": bytes,
                 "data": file.replace(".cl", ".arg0.bin")},
                {"type": "scalar", "value": n},
                {"type": "scalar", "value": "0x40200000"}
            ]
        })
    };
    vec![
        (
            scale("scale.0.cl", 128, "0x00000064", 400),
            "--local_size=64 --num_groups=2 -DOFFSET=1 --kernel-args=scale,0x00000064,0x40200000",
        ),
        (
            scale("scale.1.cl", 256, "0x000000c8", 800),
            "--local_size=64 --num_groups=4 -DOFFSET=1 --kernel-args=scale,0x000000c8,0x40200000",
        ),
        (
            scale("scale.2.cl", 320, "0x0000012c", 1200),
            "--local_size=64 --num_groups=5 -DOFFSET=1 --kernel-args=scale,0x0000012c,0x40200000",
        ),
        (
            scale("scale.3.cl", 1024, "0x000003e8", 4000),
            "--local_size=64 --num_groups=16 -DOFFSET=1 --kernel-args=scale,0x000003e8,0x40200000",
        ),
        (
            json!({
                "language": "OpenCL",
                "endianness": "little",
                "kernel_file": "fill.0.cl",
                "entry_point": "fill",
                "compiler_flags": "-DOFFSET=1 -cl-mad-enable",
                "global_size": [16],
                "kernel_arguments": [
                    {"type": "array", "address_space": "global", "flags": ["CL_MEM_WRITE_ONLY"], "size": 64},
                    {"type": "scalar", "value": "0x00000007"}
                ]
            }),
            "--local_size=* --global_size=16 -DOFFSET=1 --kernel-args=fill,0x00000007",
        ),
    ]
}

/// The rules GPUVerify's JSON reader (`GPUVerifyScript/json_loader.py`, strict mode) applies to
/// `log.json`: known keys only, the required ones present, sizes positive, flags as names,
/// scalar values as `0x` hex. A record that breaks one would make GPUVerify refuse the file.
fn assert_gpuverify_readable(log: &Value) {
    let positive = |v: &Value| {
        v.as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(|n| n.as_u64().is_some_and(|n| n > 0)))
    };
    for entry in log.as_array().expect("an array of kernel instantiations") {
        let e = entry.as_object().expect("objects");
        for key in e.keys() {
            assert!(
                [
                    "language",
                    "endianness",
                    "kernel_file",
                    "entry_point",
                    "compiler_flags",
                    "global_size",
                    "global_offset",
                    "local_size",
                    "kernel_arguments",
                    "host_api_calls"
                ]
                .contains(&key.as_str()),
                "unknown key {key}: {entry}"
            );
        }
        assert_eq!(e["language"], "OpenCL");
        assert!(["little", "big"].contains(&e["endianness"].as_str().unwrap_or("")));
        assert!(e["kernel_file"].is_string() && e["entry_point"].is_string());
        for key in ["global_size", "local_size", "global_offset"] {
            assert!(e.get(key).is_none_or(positive), "{key}: {entry}");
        }
        for a in e["kernel_arguments"].as_array().expect("kernel_arguments") {
            let a = a.as_object().expect("argument objects");
            let allowed: &[&str] = match a["type"].as_str() {
                Some("scalar") => &["type", "value"],
                Some("array") => &["type", "size", "flags", "data", "address_space"],
                Some("image" | "sampler") => &["type"],
                other => panic!("argument type {other:?}"),
            };
            assert!(a.keys().all(|k| allowed.contains(&k.as_str())), "{a:?}");
            if let Some(v) = a.get("value") {
                assert!(
                    v.as_str().is_some_and(|v| v.starts_with("0x")
                        && v.len() > 2
                        && v[2..].chars().all(|c| c.is_ascii_hexdigit())),
                    "{a:?}"
                );
            }
            assert!(
                a.get("size")
                    .is_none_or(|s| s.as_u64().is_some_and(|s| s > 0)),
                "{a:?}"
            );
            assert!(
                a.get("flags")
                    .is_none_or(|f| f.as_array().is_some_and(|f| f.iter().all(Value::is_string))),
                "{a:?}"
            );
            assert!(
                a.get("address_space").is_none_or(
                    |s| ["global", "local", "constant"].contains(&s.as_str().unwrap_or(""))
                ),
                "{a:?}"
            );
        }
        for c in e["host_api_calls"].as_array().expect("host_api_calls") {
            let c = c.as_object().expect("call objects");
            assert_eq!(c.len(), 3, "{c:?}");
            assert!(c["function_name"].is_string() && c["compilation_unit"].is_string());
            assert!(c["line_number"].as_u64().is_some_and(|l| l > 0));
        }
    }
}

fn read_log(out_dir: &Path) -> Value {
    let log: Value = serde_json::from_slice(
        &std::fs::read(out_dir.join("log.json")).expect("log.json is written"),
    )
    .expect("log.json is JSON");
    assert_gpuverify_readable(&log);
    log
}

#[test]
fn gpuverify_records_match_the_hand_written_expectation() {
    let (dir, _cap) = round_trip("varying", &[], &[]);
    let (out_dir, out) = export_to(&dir, None, "--gpuverify", "varying");
    let log = read_log(&out_dir);
    let records = log.as_array().expect("log.json is an array");
    let expected = expected_records();
    assert_eq!(records.len(), expected.len(), "{log:#}");
    let source = std::fs::read_to_string(fixture_source_dir("kernels").join("varying.cl"))
        .expect("kernel source");
    for (got, (want, invocation)) in records.iter().zip(&expected) {
        let file = want["kernel_file"].as_str().expect("file");
        for (field, value) in want.as_object().expect("object") {
            assert_eq!(&got[field], value, "{file}: field {field}\n{got:#}");
        }
        for field in got.as_object().expect("object").keys() {
            assert!(
                want.get(field).is_some() || field == "host_api_calls",
                "{file}: unexpected field {field}"
            );
        }
        // Buffer contents before the launch (the same in every launch of the record).
        if let Some(data) = want["kernel_arguments"][0]["data"].as_str() {
            let bytes = std::fs::read(out_dir.join(data)).expect("data file");
            let n = want["kernel_arguments"][0]["size"].as_u64().expect("size") as usize / 4;
            let floats: Vec<u8> = (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect();
            assert_eq!(
                bytes, floats,
                "{data}: a[i] = i as the application filled it"
            );
        }
        // Where the application built the program and launched the kernel.
        let calls = got["host_api_calls"].as_array().expect("host_api_calls");
        let names: Vec<&str> = calls
            .iter()
            .filter_map(|c| c["function_name"].as_str())
            .collect();
        assert_eq!(
            names,
            ["clBuildProgram", "clEnqueueNDRangeKernel"],
            "{got:#}"
        );
        let launch = &calls[1];
        assert!(
            launch["compilation_unit"]
                .as_str()
                .is_some_and(|u| u.ends_with("varying.c")),
            "{launch}"
        );
        assert!(
            launch["line_number"].as_u64().is_some_and(|l| l > 0),
            "{launch}"
        );
        // The kernel file: the invocation as its first line, then the user's source unchanged.
        let text = std::fs::read_to_string(out_dir.join(file)).expect("kernel file");
        assert_eq!(text, format!("//{invocation}\n#line 1\n{source}"), "{file}");
        // The listing names the file, the launches it covers and the command line.
        let listing = out.stdout_text();
        assert!(
            listing.contains(&format!("gpuverify {invocation} {file}")),
            "{file}\n{listing}"
        );
    }
    let listing = out.stdout_text();
    assert!(
        listing.contains(
            "[0] scale.0.cl: kernel scale, local 64, global 128 (2 groups), 2 launch(es) (ids 0-1)"
        ),
        "{listing}"
    );
    assert!(
        listing
            .contains("[4] fill.0.cl: kernel fill, local NULL, global 16, 2 launch(es) (ids 5-6)"),
        "{listing}"
    );
    assert!(
        listing.contains("5 configuration(s) covering 7 launch(es)"),
        "{listing}"
    );
    assert!(
        listing.contains("build options GPUVerify does not take: -cl-mad-enable"),
        "{listing}"
    );
    let intercepted =
        std::fs::read_to_string(out_dir.join("intercepted.txt")).expect("listing file");
    assert!(listing.starts_with(&intercepted), "{intercepted}");
    let script = std::fs::read_to_string(out_dir.join("run_gpuverify.sh")).expect("script");
    assert!(script.contains("gpuverify '--local_size=*' --global_size=16 -DOFFSET=1 --kernel-args=fill,0x00000007 fill.0.cl"), "{script}");
}

#[test]
fn generalisation_finds_what_varies_and_how() {
    let (dir, _cap) = round_trip("varying", &[], &[]);
    let out = cltrap_ok(&[
        OsStr::new("show"),
        dir.as_os_str(),
        OsStr::new("--kernel"),
        OsStr::new("scale"),
        OsStr::new("--json"),
    ]);
    let p: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(p["launches"], json!([0, 1, 2, 3, 4]));
    let q = |name: &str| -> Value {
        p["quantities"]
            .as_array()
            .expect("quantities")
            .iter()
            .find(|q| q["name"] == name)
            .unwrap_or_else(|| panic!("no quantity {name}: {p:#}"))["param"]
            .clone()
    };
    assert_eq!(q("local[0]"), json!({"kind": "constant", "value": 64}));
    assert_eq!(q("k"), json!({"kind": "constant", "value": 2.5}));
    assert_eq!(
        q("n"),
        json!({"kind": "set", "values": [100, 200, 300, 1000]})
    );
    assert_eq!(
        q("global[0]"),
        json!({"kind": "set", "values": [128, 256, 320, 1024]})
    );
    assert_eq!(
        q("a.elements"),
        json!({"kind": "set", "values": [100, 200, 300, 1000]})
    );
    let rels = p["relations"].as_array().expect("relations");
    for want in [
        json!({"kind": "equal", "left": "a.elements", "right": "n"}),
        json!({"kind": "round_up", "left": "global[0]", "right": "n", "multiple": "local[0]"}),
        json!({"kind": "multiple", "left": "a.bytes", "right": "n", "factor": 4}),
    ] {
        assert!(rels.contains(&want), "missing {want}: {rels:#?}");
    }
    // Nothing invented: no relation mentions the constant k or local size alone.
    assert!(
        rels.iter().all(|r| r["left"] != "k" && r["right"] != "k"),
        "{rels:#?}"
    );
    let text = cltrap_ok(&[
        OsStr::new("show"),
        dir.as_os_str(),
        OsStr::new("--kernel"),
        OsStr::new("fill"),
    ])
    .stdout_text();
    assert!(
        text.contains("kernel fill: 2 launch(es), ids 5-6"),
        "{text}"
    );
    let has_line = |want: &str| {
        text.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>().join(" ") == want)
    };
    assert!(has_line("local[0] NULL in every launch"), "{text}");
    assert!(has_line("v constant 7"), "{text}");
    let bad = cltrap(&[
        OsStr::new("show"),
        dir.as_os_str(),
        OsStr::new("--kernel"),
        OsStr::new("nope"),
    ]);
    bad.assert_no_panic();
    assert_eq!(bad.code, Some(2), "{}", bad.describe());
    assert!(
        bad.stderr.contains("its kernels: fill, scale"),
        "{}",
        bad.describe()
    );
}

/// `cltrap export DIR [ID] FLAG OUT` into a fresh directory OUT, which it returns.
fn export_to(dir: &Path, id: Option<u64>, flag: &str, label: &str) -> (PathBuf, Outcome) {
    let out_dir = fresh_dir(flag.trim_start_matches('-'), label);
    let id = id.map(|i| i.to_string());
    let mut args = vec![OsStr::new("export"), dir.as_os_str()];
    args.extend(id.as_deref().map(OsStr::new));
    args.extend([OsStr::new(flag), out_dir.as_os_str()]);
    let out = cltrap_ok(&args);
    (out_dir, out)
}

/// Exports launch `id` as a pyopencl reproducer and checks that it is valid Python.
fn py_reproducer(dir: &Path, id: u64, label: &str) -> PathBuf {
    let script = export_to(dir, Some(id), "--python", label)
        .0
        .join("repro.py");
    let compiled = run_native(
        "python3",
        &[
            OsStr::new("-m"),
            OsStr::new("py_compile"),
            script.as_os_str(),
        ],
    );
    assert!(compiled.success(), "{}", compiled.describe());
    script
}

/// Exports launch `id` as a C reproducer, compiles it with `cc … -lOpenCL` and runs it.
fn c_reproducer(dir: &Path, id: u64, label: &str) -> Outcome {
    let out_dir = export_to(dir, Some(id), "--c", label).0;
    let exe = out_dir.join("repro");
    let built = run_native(
        "cc",
        &[
            OsStr::new("-std=c99"),
            OsStr::new("-Wall"),
            out_dir.join("main.c").as_os_str(),
            OsStr::new("-o"),
            exe.as_os_str(),
            OsStr::new("-lOpenCL"),
        ],
    );
    assert!(
        built.success(),
        "the reproducer does not compile\n{}",
        built.describe()
    );
    assert!(
        built.stderr.trim().is_empty(),
        "compiler warnings\n{}",
        built.describe()
    );
    // Run from elsewhere: the data files are found next to the executable.
    run_native(&exe, &["0", "0"])
}

fn replay_code(dir: &Path, id: u64) -> Option<i32> {
    let out = cltrap(&[
        OsStr::new("replay"),
        dir.as_os_str(),
        OsStr::new(&id.to_string()),
    ]);
    out.assert_no_panic();
    out.code
}

/// Every launch of `app` exported, compiled, run: same verdict as `cltrap replay` (ok).
fn reproducers_agree_with_replay(app: &str) -> TestDir {
    let (dir, cap) = round_trip(app, &[], &[]);
    for l in &cap.launches {
        let run = c_reproducer(&dir, l.id, app);
        assert_eq!(
            run.code,
            replay_code(&dir, l.id),
            "launch {} ({})\n{}",
            l.id,
            l.kernel,
            run.describe()
        );
        assert!(
            run.success(),
            "launch {} ({})\n{}",
            l.id,
            l.kernel,
            run.describe()
        );
        assert!(
            run.stdout_text()
                .contains("ok: every output matches the recording"),
            "{}",
            run.describe()
        );
    }
    dir
}

#[test]
fn c_reproducers_of_buffers_local_memory_sub_buffers_and_aliases_match_replay() {
    let dir = reproducers_agree_with_replay("memory");
    let cap = open_capture(&dir);
    // Launch 8 of memory.c: `add_into(dst, src)` with dst a sub-buffer of src.
    let l = cap.launch(8).expect("launch 8");
    assert_eq!(l.kernel, "add_into");
    assert!(
        matches!(l.args[0], cltrap_capture::ArgRecord::Buffer { sub_of: Some((p, _)), .. } if matches!(l.args[1], cltrap_capture::ArgRecord::Buffer { mem, .. } if mem == p))
    );
    // The recorded result altered: replay and the reproducer both say MISMATCH (exit 1),
    // and the reproducer names the first differing element with both values.
    let mut original = 0;
    alter_after(&dir, 8, 0, |b| {
        original = i32::from_le_bytes(b[20..24].try_into().expect("4 bytes"));
        b[20..24].copy_from_slice(&(original + 1).to_le_bytes());
    });
    assert_eq!(replay_code(&dir, 8), Some(1));
    let run = c_reproducer(&dir, 8, "memory-altered");
    assert_eq!(run.code, Some(1), "{}", run.describe());
    let text = run.stdout_text();
    let want = format!(
        "MISMATCH argument 0 (dst): first difference at element 5 (byte 20): expected {}, got {original}",
        original + 1
    );
    assert!(text.contains(&want), "want {want:?}\n{}", run.describe());
}

#[test]
fn c_reproducers_of_struct_vector_and_scalar_arguments_match_replay() {
    reproducers_agree_with_replay("args");
}

#[test]
fn c_reproducers_of_images_and_samplers_match_replay() {
    reproducers_agree_with_replay("images");
}

#[test]
fn python_reproducers_give_the_same_verdicts() {
    let (dir, cap) = round_trip("memory", &[], &[]);
    let exported: Vec<(u64, PathBuf)> = [0u64, 4, 8, 9]
        .iter()
        .map(|&id| (id, py_reproducer(&dir, id, "memory")))
        .collect();
    let python = match venv_python() {
        Ok(p) => p,
        Err(why) => {
            skip(
                "python_reproducers_give_the_same_verdicts (running them)",
                &why,
            );
            return;
        }
    };
    for (id, script) in &exported {
        let run = run_native(&python, &[script.as_os_str()]);
        assert_eq!(
            run.code,
            replay_code(&dir, *id),
            "launch {id}\n{}",
            run.describe()
        );
        assert!(
            run.stdout_text()
                .contains("ok: every output matches the recording"),
            "{}",
            run.describe()
        );
    }
    assert_eq!(cap.launches[8].kernel, "add_into");
    alter_after(&dir, 8, 0, |b| b[20] ^= 1);
    let script = py_reproducer(&dir, 8, "memory-altered");
    let run = run_native(&python, &[script.as_os_str()]);
    assert_eq!(run.code, Some(1), "{}", run.describe());
    assert_eq!(replay_code(&dir, 8), Some(1));
    assert!(
        run.stdout_text()
            .contains("MISMATCH argument 0 (dst): first difference at element 5 (byte 20)"),
        "{}",
        run.describe()
    );
}

#[test]
fn python_reproducers_of_struct_and_image_arguments_match_replay() {
    let cases: Vec<(TestDir, u64)> = [("args", 2u64), ("images", 0)]
        .iter()
        .map(|(app, id)| (round_trip(app, &[], &[]).0, *id))
        .collect();
    let python = venv_python();
    for (dir, id) in &cases {
        let script = py_reproducer(dir, *id, "struct-image");
        let Ok(python) = &python else {
            continue;
        };
        let run = run_native(
            python,
            &[script.as_os_str(), OsStr::new("0"), OsStr::new("0")],
        );
        assert_eq!(run.code, replay_code(dir, *id), "{}", run.describe());
        assert!(run.success(), "{}", run.describe());
        assert!(!run.stderr.contains("Warning"), "{}", run.describe());
    }
    if let Err(why) = python {
        skip(
            "python_reproducers_of_struct_and_image_arguments_match_replay (running them)",
            &why,
        );
    }
}

#[test]
fn exports_refuse_bad_requests_with_one_sentence() {
    let (dir, _cap) = round_trip("varying", &[], &[]);
    for args in [
        vec![OsStr::new("export"), dir.as_os_str()],
        vec![
            OsStr::new("export"),
            dir.as_os_str(),
            OsStr::new("99"),
            OsStr::new("--c"),
            OsStr::new("/tmp/never"),
        ],
    ] {
        let out = cltrap(&args);
        out.assert_no_panic();
        assert_eq!(out.code, Some(2), "{}", out.describe());
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.describe());
    }
}

/// A third-party application: ffmpeg's `avgblur_opencl` on YUV 4:2:0 frames launches each
/// kernel once per plane (64x48 luma, 32x24 chroma). The generalisation finds the two sizes
/// and that the global size is the image size; a launch's C reproducer agrees with replay.
#[test]
fn ffmpeg_per_plane_launches_generalise_to_the_image_sizes() {
    if !run_native("ffmpeg", &["-version"]).success() {
        skip(
            "ffmpeg_per_plane_launches_generalise_to_the_image_sizes",
            "ffmpeg is not installed (apt-get install ffmpeg)",
        );
        return;
    }
    let dir = fresh_capture_dir("ffmpeg-planes");
    let args = [
        "-nostdin",
        "-v",
        "error",
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=64x48:rate=5",
        "-frames:v",
        "2",
        "-init_hw_device",
        "opencl=ocl:0.0",
        "-filter_hw_device",
        "ocl",
        "-vf",
        "format=yuv420p,hwupload,avgblur_opencl=sizeX=2,hwdownload,format=yuv420p",
        "-f",
        "rawvideo",
        "-",
    ];
    let captured = run_captured(&dir, &[], "ffmpeg", &args);
    assert!(captured.success(), "{}", captured.describe());
    let out = cltrap_ok(&[
        OsStr::new("show"),
        dir.as_os_str(),
        OsStr::new("--kernel"),
        OsStr::new("avgblur_horiz"),
        OsStr::new("--json"),
    ]);
    let p: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(p["launches"].as_array().map(Vec::len), Some(6), "{p:#}");
    let q = |name: &str| {
        p["quantities"]
            .as_array()
            .and_then(|a| a.iter().find(|q| q["name"] == name))
            .map(|q| q["param"].clone())
    };
    assert_eq!(
        q("global[0]"),
        Some(json!({"kind": "set", "values": [32, 64]}))
    );
    assert_eq!(
        q("global[1]"),
        Some(json!({"kind": "set", "values": [24, 48]}))
    );
    assert_eq!(q("local[0]"), Some(json!({"kind": "absent"})));
    assert_eq!(q("rad"), Some(json!({"kind": "constant", "value": 2})));
    let rels = p["relations"].as_array().expect("relations");
    for want in [
        json!({"kind": "equal", "left": "global[0]", "right": "src.width"}),
        json!({"kind": "equal", "left": "global[1]", "right": "src.height"}),
    ] {
        assert!(rels.contains(&want), "missing {want}: {rels:#?}");
    }
    read_log(&export_to(&dir, None, "--gpuverify", "ffmpeg").0);
    let run = c_reproducer(&dir, 2, "ffmpeg");
    assert_eq!(run.code, replay_code(&dir, 2), "{}", run.describe());
    assert!(run.success(), "{}", run.describe());
}

/// A program linked from separately compiled units, one of which includes a header given to
/// `clCompileProgram` as an embedded program: the GPUVerify kernel file is one self-contained
/// text with the header inlined between `#line` directives, and the reproducers compile and
/// link the units as the application did; a program made from a binary is listed as not
/// exported, and refused by the reproducers in one sentence.
#[test]
fn a_linked_program_with_a_captured_header_exports_and_reproduces() {
    let (dir, cap) = round_trip("programs", &[], &[]);
    let (out_dir, out) = export_to(&dir, None, "--gpuverify", "programs");
    read_log(&out_dir);
    let listing = out.stdout_text();
    let linked = cap
        .launches
        .iter()
        .find(|l| l.kernel.ends_with("mix"))
        .expect("the linked program's launch");
    let file = format!("{}.0.cl", linked.kernel);
    let kernels = fixture_source_dir("kernels");
    let read = |name: &str| std::fs::read_to_string(kernels.join(name)).expect("kernel source");
    let (main, header, lib) = (
        read("linked_main.cl"),
        read("mix_helper.h"),
        read("linked_lib.cl"),
    );
    let inlined = main.replacen(
        "#include \"mix_helper.h\"\n",
        &format!("#line 1 \"mix_helper.h\"\n{header}#line 3 \"{file}\"\n"),
        1,
    );
    assert_ne!(inlined, main, "linked_main.cl includes mix_helper.h");
    let text = std::fs::read_to_string(out_dir.join(&file)).expect("kernel file");
    assert_eq!(
        text,
        format!("//--local_size=* --global_size=32\n#line 1\n{inlined}{lib}"),
        "{listing}"
    );
    let binary = cap
        .launches
        .iter()
        .find(|l| {
            open_capture(&dir)
                .program(&l.program)
                .is_ok_and(|p| matches!(p.origin, cltrap_capture::ProgramOrigin::Binary { .. }))
        })
        .expect("programs.c launches a kernel of a binary program");
    assert!(
        listing.contains(&format!(
            "launch {} not exported: its program was created from a binary",
            binary.id
        )),
        "{listing}"
    );
    let run = c_reproducer(&dir, linked.id, "linked");
    assert_eq!(run.code, replay_code(&dir, linked.id), "{}", run.describe());
    assert!(run.success(), "{}", run.describe());
    let script = py_reproducer(&dir, linked.id, "linked");
    match venv_python() {
        Ok(python) => {
            let run = run_native(&python, &[script.as_os_str()]);
            assert!(run.success(), "{}", run.describe());
            assert!(!run.stderr.contains("Warning"), "{}", run.describe());
        }
        Err(why) => skip(
            "the linked program's pyopencl reproducer (running it)",
            &why,
        ),
    }
    let refused = cltrap(&[
        OsStr::new("export"),
        dir.as_os_str(),
        OsStr::new(&binary.id.to_string()),
        OsStr::new("--c"),
        fresh_dir("repro", "binary").as_os_str(),
    ]);
    refused.assert_no_panic();
    assert_eq!(refused.code, Some(2), "{}", refused.describe());
    assert!(
        refused
            .stderr
            .contains("rebuilds programs from OpenCL C source"),
        "{}",
        refused.describe()
    );
}

/// Strings of a capture are data, never code: a device name with `*/`, quotes and a newline,
/// and argument names that try to close a C string and call `system()`, land escaped in the
/// C and Python reproducers, which still compile (no warning), run and match; a kernel name
/// that is not an OpenCL C identifier is refused by `--c` and `--python` in one sentence and
/// left out of the GPUVerify export with the reason.
#[test]
fn capture_strings_are_escaped_in_exports_and_bad_kernel_names_refused() {
    let (dir, _cap) = round_trip("sequence", &[], &[]);
    let trap = tempfile::tempdir().expect("temporary folder");
    let pwned = trap.path().join("PWNED");
    let inject = format!("x\"); system(\"touch {}\"); printf(\"(", pwned.display());
    rewrite_launch(&dir, 0, |l| {
        l.device.name = format!("evil */ int broken; /*\n{inject} \"\"\" \\ ??/").into();
        l.device.platform = "*/ #error out\n\"\"\"".into();
        for a in &mut l.args {
            let info = match a {
                cltrap_capture::ArgRecord::Buffer { info, .. }
                | cltrap_capture::ArgRecord::Scalar { info, .. } => info,
                _ => continue,
            };
            info.name = format!("{inject}\n\"\"\"{}", info.index).into();
        }
    });
    let run = c_reproducer(&dir, 0, "escaped");
    assert!(run.success(), "{}", run.describe());
    assert!(
        run.stdout_text()
            .contains("ok: every output matches the recording"),
        "{}",
        run.describe()
    );
    let script = py_reproducer(&dir, 0, "escaped");
    if let Ok(python) = venv_python() {
        let run = run_native(&python, &[script.as_os_str()]);
        assert!(run.success(), "{}", run.describe());
    }
    assert!(!pwned.exists(), "a capture string ran as code");

    let evil_kernel = format!(
        "fill\") ; system(\"touch {}\"); printf(\"(",
        pwned.display()
    );
    rewrite_launch(&dir, 1, |l| l.kernel = evil_kernel.clone());
    // The capture reader refuses the record itself (`cltrap_capture::validate`): exporting
    // that launch is refused in one sentence naming it.
    for flag in ["--c", "--python"] {
        let out_dir = tempfile::tempdir().expect("temporary folder");
        let out = cltrap(&[
            OsStr::new("export"),
            dir.as_os_str(),
            OsStr::new("1"),
            OsStr::new(flag),
            out_dir.path().as_os_str(),
        ]);
        out.assert_no_panic();
        assert_eq!(out.code, Some(2), "{}", out.describe());
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.describe());
        assert!(
            out.stderr.contains("is not an OpenCL C identifier"),
            "{}",
            out.describe()
        );
    }
    // A GPUVerify export of the whole capture names the damaged launch once, exports the
    // others, and ends with exit 2.
    let gv = tempfile::tempdir().expect("temporary folder");
    let out = cltrap(&[
        OsStr::new("export"),
        dir.as_os_str(),
        OsStr::new("--gpuverify"),
        gv.path().as_os_str(),
    ]);
    out.assert_no_panic();
    assert_eq!(out.code, Some(2), "{}", out.describe());
    assert!(
        out.stderr.contains("(launch 1)") && out.stderr.contains("is not an OpenCL C identifier"),
        "{}",
        out.describe()
    );
    assert_eq!(
        out.stderr.matches("(launch 1)").count(),
        1,
        "{}",
        out.describe()
    );
    let sh = std::fs::read_to_string(gv.path().join("run_gpuverify.sh")).expect("script");
    assert!(!sh.contains("system("), "{sh}");
    assert!(!out.stdout_text().contains("system("), "{}", out.describe());
    assert!(!pwned.exists(), "a capture string ran as code");
}

/// Captures the `headers` fixture (see [`exports_carry_the_captured_headers_inlined`]) with
/// the application's headers removed afterwards: only the capture holds them.
fn capture_headers_fixture(label: &str) -> TestDir {
    let exe = fixture("headers");
    let app = tempfile::tempdir().expect("temporary folder");
    let a = app.path();
    std::fs::create_dir_all(a.join("inc/nested")).expect("mkdir");
    std::fs::write(a.join("main.h"), "#pragma once\n#define SCALE 3\n").expect("write");
    std::fs::write(
        a.join("inc/defs.h"),
        "#include \"nested/offset.h\"\n#define LIMIT 100\n",
    )
    .expect("write");
    std::fs::write(a.join("inc/nested/offset.h"), "#define OFFSET 7\n").expect("write");
    std::fs::create_dir_all(a.join("extra")).expect("mkdir");
    std::fs::write(a.join("extra/extra.h"), "#define EXTRA 0\n").expect("write");
    let opts = format!("-I inc -D EXTRA_DIR={}", a.join("extra").display());
    let dir = fresh_capture_dir(label);
    let t = tools();
    let captured = run_with_env(
        &t.cltrap,
        &[
            OsStr::new("run"),
            OsStr::new("--out"),
            dir.as_os_str(),
            OsStr::new("--"),
            exe.as_os_str(),
            OsStr::new(&opts),
        ],
        &[("CLTRAP_SHIM", t.shim.as_os_str())],
        Some(a),
    );
    assert!(captured.success(), "{}", captured.describe());
    drop(app); // the application's headers are gone
    dir
}

/// A program that `#include`s headers (one relative to the working directory, one through
/// `-I` with a nested include, one named through macros): with the application's headers
/// gone, the C reproducer builds and runs from the captured copies inlined into
/// `program.cl`, and the GPUVerify kernel file has no `#include` left but the one in a
/// branch the build skipped (its header was never found), so clang compiles it alone.
#[test]
fn exports_carry_the_captured_headers_inlined() {
    let dir = capture_headers_fixture("export-headers");

    let run = c_reproducer(&dir, 0, "headers");
    assert!(run.success(), "{}", run.describe());
    assert!(
        run.stdout_text()
            .contains("ok: every output matches the recording"),
        "{}",
        run.describe()
    );

    let (gv, _) = export_to(&dir, None, "--gpuverify", "headers");
    let text = std::fs::read_to_string(gv.join("scaled.0.cl")).expect("kernel file");
    let includes: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("#include"))
        .collect();
    assert_eq!(includes, ["#include \"absent.h\""], "{text}");
    assert!(text.contains("#define OFFSET 7"), "{text}");
    if let Some(clang) = installed("clang-15", "clang-15") {
        let empty = tempfile::tempdir().expect("temporary folder");
        let file = gv.join("scaled.0.cl");
        let out = run_with_env(
            &clang,
            &[
                OsStr::new("-x"),
                OsStr::new("cl"),
                OsStr::new("-cl-std=CL1.2"),
                OsStr::new("-fsyntax-only"),
                OsStr::new("-DEXTRA_DIR=/nonexistent"),
                file.as_os_str(),
            ],
            &[],
            Some(empty.path()),
        );
        assert!(out.success(), "{}", out.describe());
    }
}

/// The Python reproducer without pyopencl says so and exits 2 ("could not run"), not 1
/// (the mismatch status).
#[test]
fn python_reproducer_without_pyopencl_exits_2() {
    let (dir, _cap) = round_trip("sequence", &[], &[]);
    let script = py_reproducer(&dir, 0, "no-pyopencl");
    let fake = tempfile::tempdir().expect("temporary folder");
    std::fs::write(
        fake.path().join("pyopencl.py"),
        "raise ImportError(\"No module named 'pyopencl'\")\n",
    )
    .expect("write");
    let python = venv_python().unwrap_or_else(|_| PathBuf::from("python3"));
    let run = run_with_env(
        &python,
        &[script.as_os_str()],
        &[("PYTHONPATH", fake.path().as_os_str())],
        None,
    );
    assert_eq!(run.code, Some(2), "{}", run.describe());
    assert!(
        run.stderr.contains("repro: cannot run without"),
        "{}",
        run.describe()
    );
}

/// The first line of a launch log, as JSON.
fn first_launch(log: &Path) -> Value {
    let text = std::fs::read_to_string(log).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

/// A program whose source includes a header the capture did not record (here `./main.h`, taken
/// out of a captured program's record as an older or partial capture leaves it): the C,
/// Python and GPUVerify exports refuse that program in one sentence naming the header and
/// the kernel (exit 2) instead of writing files that cannot compile, and still export the
/// launches of a complete program of the same capture. The program's other unrecorded
/// include (`absent.h`, in a branch the build skips) refuses nothing.
#[test]
fn exports_refuse_programs_that_include_a_header_the_capture_did_not_record() {
    let dir = capture_headers_fixture("export-unrecorded");
    let log = dir.join("launches.jsonl");
    let first = first_launch(&log);
    let program = first["program"].as_str().unwrap().to_string();
    let blob = |h: &str| dir.join("blobs").join(&h[..2]).join(h);
    let mut record: Value =
        serde_json::from_slice(&std::fs::read(blob(&program)).unwrap()).unwrap();
    let mut dropped = 0;
    for f in record["includes"]["files"].as_array_mut().unwrap() {
        if f["name"] == "./main.h" {
            f["path"] = Value::Null;
            f["content"] = Value::Null;
            dropped += 1;
        }
    }
    assert_eq!(dropped, 1, "{record}");
    // The same launch again, as launch 100, of the program without `main.h`.
    let bytes = serde_json::to_vec(&record).unwrap();
    let partial = cltrap_capture::writer::digest(&bytes);
    std::fs::create_dir_all(blob(&partial).parent().unwrap()).unwrap();
    std::fs::write(blob(&partial), &bytes).unwrap();
    let mut second = first.clone();
    second["id"] = json!(100);
    second["program"] = json!(partial);
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str(&format!("{second}\n"));
    std::fs::write(&log, text).unwrap();
    let kernel = first["kernel"].as_str().unwrap();
    let refused = |o: &Outcome, what: &str| {
        o.assert_no_panic();
        assert_eq!(o.code, Some(2), "{what}: {}", o.describe());
        let said = meaningful_stderr_lines(&o.stderr);
        assert_eq!(said.len(), 1, "{what}: {}", o.describe());
        assert!(
            said[0].contains("\"./main.h\"")
                && said[0].contains(kernel)
                && said[0].contains("did not record"),
            "{what}: {}",
            o.describe()
        );
    };
    for flag in ["--c", "--python"] {
        let out_dir = fresh_dir(flag.trim_start_matches('-'), "unrecorded");
        let _ = std::fs::remove_dir_all(&out_dir);
        let o = cltrap(&[
            OsStr::new("export"),
            dir.as_os_str(),
            OsStr::new("100"),
            OsStr::new(flag),
            out_dir.as_os_str(),
        ]);
        refused(&o, flag);
        assert!(!out_dir.exists(), "{flag}: nothing written");
    }
    // The complete program's launch still exports and reproduces.
    let run = c_reproducer(&dir, 0, "unrecorded-complete");
    assert!(run.success(), "{}", run.describe());
    let gv = fresh_dir("gpuverify", "unrecorded");
    let o = cltrap(&[
        OsStr::new("export"),
        dir.as_os_str(),
        OsStr::new("--gpuverify"),
        gv.as_os_str(),
    ]);
    refused(&o, "--gpuverify");
    let listing = o.stdout_text();
    assert!(
        listing.contains("launch 100 not exported: "),
        "{}",
        o.describe()
    );
    let log_json: Value =
        serde_json::from_str(&std::fs::read_to_string(gv.join("log.json")).unwrap()).unwrap();
    assert_eq!(log_json.as_array().map(Vec::len), Some(1), "{log_json}");
    let text = std::fs::read_to_string(gv.join("scaled.0.cl")).expect("kernel file");
    assert!(text.contains("#define SCALE 3"), "{text}");
}

/// A hostile capture's program cannot make a reproducer's build (the user's own driver, PoCL
/// here) open a file outside its folder, whatever spelling of an include it uses, in the
/// program's text or in a unit of a linked program whose in-memory header has the outside
/// file's base name: the reproducer fails to build on the unrecorded-include sentinel.
#[test]
fn reproducers_of_hostile_programs_open_no_file_outside_their_folder() {
    let dir = capture_headers_fixture("export-hostile");
    let outside = tempfile::tempdir().expect("temporary folder");
    let secret = outside.path().join("secret.h");
    std::fs::write(&secret, "#define SECRET_READ 1\n").unwrap();
    let s = secret.display().to_string();
    let log = dir.join("launches.jsonl");
    let first = first_launch(&log);
    let blob = |h: &str| dir.join("blobs").join(&h[..2]).join(h);
    let put = |bytes: &[u8]| {
        let h = cltrap_capture::writer::digest(bytes);
        std::fs::create_dir_all(blob(&h).parent().unwrap()).unwrap();
        std::fs::write(blob(&h), bytes).unwrap();
        h
    };
    let record: Value =
        serde_json::from_slice(&std::fs::read(blob(first["program"].as_str().unwrap())).unwrap())
            .unwrap();
    let source = {
        let h = record["origin"]["sources"][0].as_str().unwrap();
        String::from_utf8(std::fs::read(blob(h)).unwrap()).unwrap()
    };
    let guard = "#ifdef SECRET_READ\n#error the outside file was read\n#endif\n";
    let mut text = std::fs::read_to_string(&log).unwrap();
    let mut cases = Vec::new();
    for (k, (what, prelude)) in [
        ("digraph", format!("%:include \"{s}\"\n")),
        ("lone CR", format!("int dummy_;\r#include \"{s}\"\n")),
        ("include_next", format!("#include_next \"{s}\"\n")),
        ("import", format!("#import \"{s}\"\n")),
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = record.clone();
        r["origin"]["sources"][0] = json!(put(format!("{prelude}{guard}{source}").as_bytes()));
        cases.push((what.to_string(), 100 + k as u64, r));
    }
    // A linked program: its unit includes the outside file by its full name, and carries an
    // in-memory header of the same base name.
    let mut linked = record.clone();
    let kernel = &source[source.find("kernel void").unwrap()..];
    let unit = put(format!(
        "#include \"{s}\"\n{guard}#define SCALE 3\n#define OFFSET 7\n#define EXTRA 0\n\
             #define LIMIT 100\n{kernel}"
    )
    .as_bytes());
    linked["origin"] = json!({"kind": "linked", "inputs": [{
        "origin": {"kind": "source", "sources": [unit]},
        "compile_options": "",
        "headers": [["secret.h", put(b"/* harmless */\n")]],
    }]});
    cases.push(("linked unit".into(), 110, linked));
    for (_, id, r) in &cases {
        let mut l = first.clone();
        l["id"] = json!(id);
        l["program"] = json!(put(&serde_json::to_vec(r).unwrap()));
        text.push_str(&format!("{l}\n"));
    }
    std::fs::write(&log, text).unwrap();
    for (what, id, _) in &cases {
        let (out_dir, _) = export_to(&dir, Some(*id), "--c", &format!("hostile-{id}"));
        for f in std::fs::read_dir(&out_dir).unwrap().flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            if name.ends_with(".cl") || name.ends_with(".h") {
                let t = std::fs::read_to_string(f.path()).unwrap();
                assert!(
                    !t.contains(&s),
                    "{what}: {name} still names the outside file:\n{t}"
                );
            }
        }
        let exe = out_dir.join("repro");
        let built = run_native(
            "cc",
            &[
                out_dir.join("main.c").as_os_str(),
                OsStr::new("-o"),
                exe.as_os_str(),
                OsStr::new("-lOpenCL"),
            ],
        );
        assert!(built.success(), "{what}: {}", built.describe());
        let run = run_native(&exe, &["0", "0"]);
        assert!(!run.success(), "{what}: {}", run.describe());
        assert!(
            run.stderr.contains("cltrap-unrecorded-include.h")
                && !run.stderr.contains("the outside file was read"),
            "{what}: {}",
            run.describe()
        );
    }
}
