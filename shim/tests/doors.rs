//! The shim on the real PoCL runtime: both doors, exactly-once recording, transparency, and
//! captures that read back with `cltrap_capture::Capture::open`.
//!
//! Each test compiles a small C host program from `fixtures/`, runs it natively and under
//! `libcltrap.so`, and compares. Needs `cc`, the OpenCL headers, ocl-icd and PoCL.

use cltrap_capture::{ArgRecord, Capture, ProgramOrigin, ProgramRecord};
mod swap_support;
use swap_support::{build, f32s, i32s, shim, tmp};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(cmd: &Path, args: &[&str], env: &[(&str, &Path)], extra: &[(&str, &str)]) -> Output {
    let mut c = Command::new(cmd);
    c.args(args)
        .env_remove("OPENCL_LAYERS")
        .env_remove("LD_PRELOAD");
    for (k, v) in env {
        c.env(k, v);
    }
    for (k, v) in extra {
        c.env(k, v);
    }
    let out = c
        .output()
        .unwrap_or_else(|e| panic!("{} cannot run: {e}", cmd.display()));
    assert!(
        out.status.success(),
        "{} failed: {}",
        cmd.display(),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

fn kernels(c: &Capture) -> Vec<&str> {
    c.launches.iter().map(|l| l.kernel.as_str()).collect()
}

#[test]
fn preloaded_vector_add_is_recorded_once_with_arguments_contents_and_program() {
    let app = build("vadd", &[]);
    let cap = tmp("vadd");
    let native = run(&app, &["2"], &[], &[]);
    let shimmed = run(
        &app,
        &["2"],
        &[("LD_PRELOAD", &shim()), ("CLTRAP_DIR", &cap)],
        &[],
    );
    assert_eq!(
        native.stdout, shimmed.stdout,
        "results must not change under the shim"
    );
    assert!(
        shimmed.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&shimmed.stderr)
    );

    let c = Capture::open(&cap).expect("capture reads back");
    assert_eq!(kernels(&c), ["vadd", "twice", "vadd", "twice"]);
    assert_eq!(
        c.launches.iter().map(|l| l.seq).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    let l = &c.launches[0];
    assert_eq!(
        (l.work_dim, l.global_size.clone(), l.local_size.clone()),
        (1, vec![1024], Some(vec![64]))
    );
    assert_eq!(
        c.launches[1].local_size, None,
        "a NULL local size stays NULL"
    );
    let kinds: Vec<&str> = l
        .args
        .iter()
        .map(|a| match a {
            ArgRecord::Buffer { .. } => "buffer",
            ArgRecord::Scalar { .. } => "scalar",
            ArgRecord::Local { .. } => "local",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        ["buffer", "buffer", "buffer", "scalar", "scalar", "local"]
    );
    match (&l.args[3], &l.args[4], &l.args[5]) {
        (
            ArgRecord::Scalar { bytes: s, info },
            ArgRecord::Scalar { bytes: p, .. },
            ArgRecord::Local { size, .. },
        ) => {
            assert_eq!(s, "0000003f", "0.5f as raw bytes");
            assert_eq!(info.type_name, "float");
            assert_eq!(p, "030000000000803e", "struct {{3, 0.25f}} as raw bytes");
            assert_eq!(*size, 256);
        }
        other => panic!("unexpected arguments {other:?}"),
    }
    let (
        ArgRecord::Buffer { before: a, .. },
        ArgRecord::Buffer { before: b, .. },
        ArgRecord::Buffer { after: out, .. },
    ) = (&l.args[0], &l.args[1], &l.args[2])
    else {
        panic!("buffers expected")
    };
    let (a, b, out) = (f32s(&c, a), f32s(&c, b), f32s(&c, out));
    for i in [0, 1, 500, 1023] {
        assert_eq!(
            out[i],
            a[i] + b[i] * 0.5 + 3.0 + 0.25,
            "post-launch contents at {i}"
        );
    }
    let program: ProgramRecord =
        serde_json::from_slice(&c.blob(&l.program).expect("program blob")).expect("program json");
    assert_eq!(
        program.options, "-DFOO=1",
        "the app's options, without cltrap's additions"
    );
    let ProgramOrigin::Source { sources } = &program.origin else {
        panic!("source program expected")
    };
    let source = String::from_utf8(c.blob(&sources[0]).expect("source blob")).expect("utf8");
    assert!(source.contains("__kernel void vadd"), "{source}");
    assert_eq!(
        c.launches[0].program, c.launches[1].program,
        "one record per program"
    );
    let site = l.launch_site.as_ref().expect("launch site");
    assert!(
        site.module.ends_with("/vadd") && site.offset > 0,
        "{site:?}"
    );
}

#[test]
fn an_app_that_dlopens_the_loader_is_caught_through_the_layer() {
    let app = build("dl", &[]);
    let native = run(&app, &[], &[], &[]);
    for (name, var) in [("dl-preload", "LD_PRELOAD"), ("dl-layer", "OPENCL_LAYERS")] {
        let cap = tmp(name);
        let out = run(&app, &[], &[(var, &shim()), ("CLTRAP_DIR", &cap)], &[]);
        assert_eq!(native.stdout, out.stdout);
        let c = Capture::open(&cap).expect("capture reads back");
        assert_eq!(kernels(&c), ["inc"], "{var}");
        assert!(
            matches!(&c.launches[0].args[1], ArgRecord::Scalar { bytes, .. } if bytes == "05000000")
        );
    }
}

/// A scenario: its name, the program, and the variables that open the doors.
type Case<'a> = (String, &'a PathBuf, Vec<(&'a str, &'a Path)>);

/// Every way of opening the doors for fixture `app` (`no_layer`: built with `-DNO_LAYER`);
/// captures are named `prefix` + the door.
fn door_cases<'a>(
    prefix: &str,
    app: &'a PathBuf,
    no_layer: &'a PathBuf,
    lib: &'a Path,
) -> [Case<'a>; 4] {
    [
        (format!("{prefix}preload"), app, vec![("LD_PRELOAD", lib)]),
        (format!("{prefix}layer"), app, vec![("OPENCL_LAYERS", lib)]),
        (
            format!("{prefix}both"),
            app,
            vec![("LD_PRELOAD", lib), ("OPENCL_LAYERS", lib)],
        ),
        (
            format!("{prefix}exports-only"),
            no_layer,
            vec![("LD_PRELOAD", lib)],
        ),
    ]
}

#[test]
fn every_door_combination_records_each_launch_exactly_once() {
    let app = build("vadd", &[]);
    let no_layer = build("vadd", &["-DNO_LAYER"]);
    let lib = shim();
    for (name, bin, mut env) in door_cases("", &app, &no_layer, &lib) {
        let cap = tmp(&name);
        env.push(("CLTRAP_DIR", &cap));
        run(bin, &["3"], &env, &[]);
        let c = Capture::open(&cap).expect("capture reads back");
        assert_eq!(c.launches.len(), 6, "{name}: {:?}", kernels(&c));
    }
}

/// The source line `addr2line` gives for a recorded launch site (the call before the return
/// address).
fn site_line(site: &cltrap_capture::Site) -> u32 {
    let out = Command::new("addr2line")
        .args(["-e", &site.module, &format!("{:#x}", site.offset - 1)])
        .output()
        .expect("addr2line runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.trim().rsplit(':').next().unwrap_or("");
    let line = line.split_whitespace().next().unwrap_or("");
    line.parse()
        .unwrap_or_else(|_| panic!("no line for {site:?}: {text}"))
}

#[test]
fn launch_sites_name_the_calling_line_for_one_kernel_launched_from_several_places() {
    // The launch entry points note their caller's return address instead of unwinding
    // (`caller.rs`): two call sites of one kernel and a task must still get their own lines,
    // through every door.
    let app = build("sites", &[]);
    let no_layer = build("sites", &["-DNO_LAYER"]);
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sites.c"),
    )
    .expect("fixture source");
    let line_of = |mark: &str| {
        source
            .lines()
            .position(|l| l.contains(mark))
            .map(|i| i as u32 + 1)
            .expect("marked line")
    };
    let expected: Vec<u32> = (0..3)
        .flat_map(|_| [line_of("SITE_A"), line_of("SITE_B"), line_of("SITE_T")])
        .collect();
    let lib = shim();
    for (name, bin, mut env) in door_cases("sites-", &app, &no_layer, &lib) {
        let cap = tmp(&name);
        env.push(("CLTRAP_DIR", &cap));
        run(bin, &["3"], &env, &[]);
        let c = Capture::open(&cap).expect("capture reads back");
        let lines: Vec<u32> = c
            .launches
            .iter()
            .map(|l| site_line(l.launch_site.as_ref().expect("launch site")))
            .collect();
        assert_eq!(lines, expected, "{name}");
    }
}

#[test]
fn edge_cases_keep_the_apps_behaviour_and_are_recorded() {
    let app = build("edge", &[]);
    let cap = tmp("edge");
    let native = run(&app, &[], &[], &[]);
    let out = run(
        &app,
        &[],
        &[("LD_PRELOAD", &shim()), ("CLTRAP_DIR", &cap)],
        &[],
    );
    assert_eq!(
        String::from_utf8_lossy(&native.stdout),
        String::from_utf8_lossy(&out.stdout)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("accelerator: -1"),
        "CL_DEVICE_NOT_FOUND passes through: {text}"
    );
    assert!(text.contains("build options seen by app: ''"), "{text}");
    let c = Capture::open(&cap).expect("capture reads back");
    let names = kernels(&c);
    assert_eq!(&names[..6], ["img", "sub", "sub", "task", "task", "task"]);
    assert_eq!(
        names.iter().filter(|n| **n == "add3").count(),
        20,
        "4 threads x 5 launches"
    );
    let img = &c.launches[0];
    let (
        ArgRecord::Image { before, image, .. },
        ArgRecord::Image { after, .. },
        ArgRecord::Sampler {
            addressing_mode, ..
        },
    ) = (&img.args[0], &img.args[1], &img.args[2])
    else {
        panic!("image, image, sampler expected: {:?}", img.args)
    };
    assert_eq!((image.width, image.height, image.element_size), (8, 4, 16));
    assert_eq!(*addressing_mode, 0x1132, "CL_ADDRESS_CLAMP");
    let (inp, outp) = (f32s(&c, before), f32s(&c, after));
    assert!(
        inp.iter().zip(&outp).all(|(i, o)| *o == 2.0 * i),
        "host-inaccessible image read via staging"
    );
    let ArgRecord::Buffer { sub_of, .. } = &c.launches[1].args[1] else {
        panic!("sub-buffer expected")
    };
    assert_eq!(sub_of.map(|(_, off)| off), Some(128));
    assert_eq!(c.launches[3].api, cltrap_capture::LaunchApi::Task);
    // A launch behind an unset user event is recorded in the queue once the gate opens:
    // before and after contents are what the kernel saw and wrote.
    let gated = &c.launches[4];
    assert!(
        gated.not_replayable.is_empty(),
        "{:?}",
        gated.not_replayable
    );
    let ArgRecord::Buffer { before, after, .. } = &gated.args[0] else {
        panic!("buffer expected: {:?}", gated.args)
    };
    assert_eq!(i32s(&c, before), [42, 0, 0, 0], "the task wrote 42 before");
    assert_eq!(i32s(&c, after), [42, 0, 0, 0]);
}

#[test]
fn processes_without_opencl_and_capture_off_stay_untouched() {
    let lib = shim();
    let cap = tmp("silent");
    for (cmd, args) in [("/usr/bin/ld", vec!["--version"]), ("ls", vec!["/"])] {
        let native = Command::new(cmd).args(&args).output().expect("runs");
        let shimmed = Command::new(cmd)
            .args(&args)
            .env("LD_PRELOAD", &lib)
            .env("CLTRAP_DIR", &cap)
            .output()
            .expect("runs");
        assert_eq!(native.stdout, shimmed.stdout, "{cmd}");
        assert_eq!(native.stderr, shimmed.stderr, "{cmd}");
    }
    let app = build("vadd", &[]);
    run(
        &app,
        &["1"],
        &[("LD_PRELOAD", &lib), ("CLTRAP_DIR", &cap)],
        &[("CLTRAP_CAPTURE", "off")],
    );
    assert!(
        !cap.join("manifest.json").exists(),
        "nothing written without OpenCL or with capture off"
    );
}

#[test]
fn bad_settings_and_unwritable_dirs_are_said_once_and_the_app_carries_on() {
    let app = build("vadd", &[]);
    let native = run(&app, &["3"], &[], &[]);
    let bad = run(
        &app,
        &["3"],
        &[("LD_PRELOAD", &shim())],
        &[("CLTRAP_BUFFERS", "most")],
    );
    let unwritable = run(
        &app,
        &["3"],
        &[("LD_PRELOAD", &shim())],
        &[("CLTRAP_DIR", "/proc/no/such/dir")],
    );
    for out in [bad, unwritable] {
        assert_eq!(native.stdout, out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("cltrap: "), "{err}");
    }
}

#[test]
fn asynchronous_reads_see_exactly_what_each_launch_saw_in_order_and_out_of_order_queues() {
    let app = build("chain", &[]);
    for mode in ["0", "1", "2"] {
        let cap = tmp(&format!("chain{mode}"));
        let native = run(&app, &["300", mode], &[], &[]);
        let out = run(
            &app,
            &["300", mode],
            &[("LD_PRELOAD", &shim()), ("CLTRAP_DIR", &cap)],
            &[],
        );
        assert!(native.status.success(), "mode {mode}");
        assert_eq!(native.stdout, out.stdout, "mode {mode}");
        assert!(out.status.success(), "mode {mode}");
        let c = Capture::open(&cap).expect("capture reads back");
        assert_eq!(c.launches.len(), 300, "mode {mode}: every launch recorded");
        for (i, l) in c.launches.iter().enumerate() {
            assert_eq!(l.id, i as u64, "mode {mode}: ids follow the enqueues");
            let ArgRecord::Buffer { before, after, .. } = &l.args[0] else {
                panic!("buffer expected: {:?}", l.args)
            };
            // Launch i sees i in every element and leaves i + 1.
            assert_eq!(
                i32s(&c, before),
                vec![i as i32; 64],
                "mode {mode}, launch {i} before"
            );
            assert_eq!(
                i32s(&c, after),
                vec![i as i32 + 1; 64],
                "mode {mode}, launch {i} after"
            );
            // The __constant argument is read once: after = before.
            let ArgRecord::Buffer { before, after, .. } = &l.args[1] else {
                panic!("buffer expected: {:?}", l.args)
            };
            assert_eq!(i32s(&c, before), [1], "mode {mode}");
            assert_eq!(before, after, "mode {mode}");
        }
    }
}
