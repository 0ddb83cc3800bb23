//! `cltrap run --coverage` on the real PoCL runtime: instrumented kernels swapped into real C
//! applications and third-party programs, results unchanged, the report exact.

mod swap_support;

use cltrap_capture::{Capture, ProgramOrigin};
use serde_json::Value;
use std::collections::BTreeSet;
use swap_support::*;

fn report(dir: &std::path::Path) -> Value {
    let path = dir.join("coverage/coverage.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} missing: {e}", path.display()));
    serde_json::from_str(&text).expect("report is JSON")
}

#[test]
fn coverage_of_a_live_app_is_exact_and_the_app_sees_its_own_kernel() {
    let app = build("swap_cov", &[]);
    let native = native(&app, &[], &[]);
    assert_ok(&native, "native run");
    let dir = tmp("cov");
    let live = under_cltrap(&dir, &["--coverage"], &app, &[], &[]);
    assert_ok(&live, "cltrap run --coverage");
    // Same results, same view of the kernel: 3 arguments, and setting a 4th is
    // CL_INVALID_ARG_INDEX (-49) although the running kernel has a 4th (the counters).
    assert_eq!(stdout(&live), stdout(&native), "{}", stderr(&live));
    assert!(stdout(&live).contains("num_args 3\n"), "{}", stdout(&live));
    assert!(stdout(&live).contains("set_arg_past_last -49\n"));

    let r = report(&dir);
    let programs = r["programs"].as_array().expect("programs");
    assert_eq!(programs.len(), 1, "{r}");
    let kernels = programs[0]["kernels"].as_array().expect("kernels");
    assert_eq!(kernels.len(), 1);
    let k = &kernels[0];
    assert_eq!(k["kernel"], "classify");
    assert_eq!(k["unnumbered_launches"], 1);
    let branches: BTreeSet<(u64, String, bool)> = k["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|i| i["kind"] == "branch")
        .map(|i| {
            (
                i["line"].as_u64().expect("line"),
                i["outcome"].as_str().expect("outcome").to_string(),
                i["hit"].as_bool().expect("hit"),
            )
        })
        .collect();
    // Line 3: `if (i >= n) return;` — work-items 100..127 return early, the rest go on.
    // Line 6: `if (v < 0)` — both ways. Line 8: `else if (v > LIMIT)` (LIMIT from the app's
    // -DLIMIT=1000) — never true with this input.
    let expected: BTreeSet<(u64, String, bool)> = [
        (3, "true", true),
        (3, "false", true),
        (6, "true", true),
        (6, "false", true),
        (8, "true", false),
        (8, "false", true),
    ]
    .into_iter()
    .map(|(l, o, h)| (l, o.to_string(), h))
    .collect();
    assert_eq!(branches, expected);
    assert_eq!(k["branches"]["covered"], 5);
    assert_eq!(k["branches"]["total"], 6);
    assert!(
        stderr(&live).contains("not covered: 8:"),
        "{}",
        stderr(&live)
    );

    // LCOV and HTML next to it, on the user's own lines.
    let lcov = std::fs::read_to_string(dir.join("coverage/coverage.lcov")).expect("lcov");
    assert!(lcov.contains("BRDA:8,"), "{lcov}");
    assert!(lcov.contains("end_of_record"));
    assert!(dir.join("coverage/html/index.html").is_file());

    // The capture still describes the application's own program and arguments.
    let cap = Capture::open(&dir).expect("capture");
    assert_eq!(cap.launches.len(), 1);
    let l = &cap.launches[0];
    assert_eq!(l.args.len(), 3);
    let prog = cap.program(&l.program).expect("program record");
    let ProgramOrigin::Source { sources } = &prog.origin else {
        panic!("not a source program: {:?}", prog.origin)
    };
    let src = String::from_utf8(cap.blob(&sources[0]).expect("source blob")).expect("utf8");
    assert!(
        !src.contains("__cltrap"),
        "instrumentation leaked into the capture"
    );
    assert_eq!(prog.options, "-DLIMIT=1000");
}

#[test]
fn a_kernel_the_front_end_refuses_runs_unchanged_with_one_note() {
    let app = build("swap_cov", &["-DUNSUPPORTED"]);
    let native = native(&app, &[], &[]);
    assert_ok(&native, "native run");
    let dir = tmp("cov-refused");
    let live = under_cltrap(&dir, &["--coverage"], &app, &[], &[]);
    assert_ok(&live, "cltrap run --coverage");
    assert_eq!(stdout(&live), stdout(&native));
    let err = stderr(&live);
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("uninstrumented"))
        .collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(
        notes[0].contains("5:20") && notes[0].contains("goto"),
        "{err}"
    );
    assert!(!dir.join("coverage").exists(), "no report without counters");
    // The refusal is cached: the front-end is asked once per distinct program.
    let cached = std::fs::read_dir(dir.join("instrument"))
        .expect("cache")
        .count();
    assert_eq!(cached, 1);
}

#[test]
fn instrumentation_is_cached_across_runs() {
    let app = build("swap_cov", &[]);
    let dir = tmp("cov-cache");
    let first = under_cltrap(&dir, &["--coverage"], &app, &[], &[]);
    assert_ok(&first, "first run");
    let cache = dir.join("instrument");
    let files: Vec<_> = std::fs::read_dir(&cache)
        .expect("cache")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(files.len(), 1);
    // Without CLTRAP_BIN the shim could not instrument anything: a second run that still
    // measures coverage proves the answer came from the cache.
    let mut c = std::process::Command::new(&app);
    c.env("LD_PRELOAD", shim())
        .env("CLTRAP_DIR", &dir)
        .env("CLTRAP_COVERAGE", "on")
        .env_remove("CLTRAP_BIN")
        .env_remove("OPENCL_LAYERS");
    let second = c.output().expect("app runs");
    assert_ok(&second, "second run");
    let lines = std::fs::read_to_string(dir.join("coverage.jsonl")).expect("jsonl");
    assert_eq!(lines.lines().count(), 2, "{lines}");
    assert!(stderr(&second).is_empty(), "{}", stderr(&second));
}

/// The first of `candidates` on PATH, or None (then the test says SKIP and why).
fn installed(name: &str, package: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        eprintln!("SKIP: {name} is not installed (Debian package {package})");
    }
    found
}

#[test]
fn clfft_client_under_coverage_gives_a_report_and_the_same_output() {
    let Some(fft) = installed("clFFT-client", "clfft-client") else {
        return;
    };
    let args = ["-x", "64", "-y", "64"];
    let native = native(&fft, &args, &[]);
    assert_ok(&native, "clFFT-client");
    let dir = tmp("clfft");
    let live = under_cltrap(&dir, &["--coverage"], &fft, &args, &[]);
    assert_ok(&live, "clFFT-client under --coverage");
    assert_eq!(stdout(&live), stdout(&native));
    let r = report(&dir);
    let kernels: BTreeSet<String> = r["programs"]
        .as_array()
        .expect("programs")
        .iter()
        .flat_map(|p| p["kernels"].as_array().cloned().unwrap_or_default())
        .map(|k| k["kernel"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(kernels.contains("fft_fwd"), "{kernels:?}");
    assert!(kernels.contains("transpose_square"), "{kernels:?}");
}

#[test]
fn ffmpeg_opencl_filter_under_coverage_gives_a_report_and_identical_frames() {
    let Some(ffmpeg) = installed("ffmpeg", "ffmpeg") else {
        return;
    };
    let args = [
        "-nostdin",
        "-v",
        "error",
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=64x64:rate=5",
        "-frames:v",
        "3",
        "-init_hw_device",
        "opencl=ocl:0.0",
        "-filter_hw_device",
        "ocl",
        "-vf",
        "format=rgba,hwupload,avgblur_opencl,hwdownload,format=rgba",
        "-f",
        "rawvideo",
        "-",
    ];
    let native = native(&ffmpeg, &args, &[]);
    assert_ok(&native, "ffmpeg");
    assert_eq!(native.stdout.len(), 64 * 64 * 4 * 3);
    let dir = tmp("ffmpeg");
    let live = under_cltrap(&dir, &["--coverage"], &ffmpeg, &args, &[]);
    assert_ok(&live, "ffmpeg under --coverage");
    assert!(
        live.stdout == native.stdout,
        "frames differ under --coverage"
    );
    let r = report(&dir);
    let k = &r["programs"][0]["kernels"];
    let names: Vec<&str> = k
        .as_array()
        .expect("kernels")
        .iter()
        .filter_map(|k| k["kernel"].as_str())
        .collect();
    assert_eq!(names, ["avgblur_horiz", "avgblur_vert"], "{r}");
    assert_eq!(k[0]["unnumbered_launches"], 3);
}

#[test]
fn four_threads_on_out_of_order_queues_are_all_counted_and_stay_right() {
    let app = build("swap_threads", &[]);
    let native = native(&app, &[], &[]);
    assert_ok(&native, "native run");
    let dir = tmp("cov-threads");
    let live = under_cltrap(&dir, &["--coverage", "--buffers", "none"], &app, &[], &[]);
    assert_ok(&live, "cltrap run --coverage");
    assert_eq!(stdout(&live), stdout(&native));
    let r = report(&dir);
    let k = &r["programs"][0]["kernels"][0];
    assert_eq!(k["kernel"], "classify");
    assert_eq!(k["unnumbered_launches"], 100, "{r}");
    // n < 128 in every launch: the early return is taken; no input exceeds 1000.
    assert_eq!(k["branches"]["covered"], 5);
    assert_eq!(k["branches"]["total"], 6);
}

#[test]
fn barriers_of_a_live_reduction_are_reached_by_whole_groups() {
    let app = build("swap_cov", &["-DBARRIER"]);
    let native = native(&app, &[], &[]);
    assert_ok(&native, "native run");
    let dir = tmp("cov-barrier");
    let live = under_cltrap(&dir, &["--coverage"], &app, &[], &[]);
    assert_ok(&live, "cltrap run --coverage");
    assert_eq!(stdout(&live), stdout(&native));
    let r = report(&dir);
    let k = &r["programs"][0]["kernels"][0];
    let sites = k["barrier_sites"].as_array().expect("barrier sites");
    let lines: Vec<(u64, &str, u64)> = sites
        .iter()
        .map(|b| {
            (
                b["line"].as_u64().expect("line"),
                b["status"].as_str().expect("status"),
                b["groups_all"].as_u64().expect("groups_all"),
            )
        })
        .collect();
    assert_eq!(lines, [(5, "covered", 4), (8, "covered", 4)], "{r}");
    assert!(k["divergences"].as_array().expect("divergences").is_empty());
    assert_eq!(k["branches"]["covered"], k["branches"]["total"]);
    // The loop always runs 5 times: only the "more than once" boundary is reached.
    assert_eq!(k["loop_boundaries"]["covered"], 1);
    assert_eq!(k["loop_boundaries"]["total"], 3);
}

#[test]
fn a_program_made_by_compile_and_link_is_swapped_like_a_built_one() {
    let app = build("swap_link", &[]);
    let native = native(&app, &[], &[]);
    assert_ok(&native, "native run");
    let dir = tmp("cov-link");
    let live = under_cltrap(&dir, &["--coverage"], &app, &[], &[]);
    assert_ok(&live, "cltrap run --coverage");
    assert_eq!(stdout(&live), stdout(&native), "{}", stderr(&live));
    assert!(
        !stderr(&live).contains("unchanged") && !stderr(&live).contains("without"),
        "{}",
        stderr(&live)
    );
    // One report program per compiled source (each with its own options and header), each
    // kernel measured once, every branch of this input taken.
    let r = report(&dir);
    let programs = r["programs"].as_array().expect("programs");
    assert_eq!(programs.len(), 2, "{r}");
    let mut kernels: Vec<(String, u64, u64)> = programs
        .iter()
        .flat_map(|p| p["kernels"].as_array().expect("kernels").iter())
        .map(|k| {
            (
                k["kernel"].as_str().expect("name").to_string(),
                k["branches"]["covered"].as_u64().expect("covered"),
                k["branches"]["total"].as_u64().expect("total"),
            )
        })
        .collect();
    kernels.sort();
    assert_eq!(kernels.len(), 2, "{r}");
    assert_eq!(kernels[0].0, "clamp_to");
    assert_eq!(kernels[1].0, "shift");
    for (name, covered, total) in &kernels {
        assert!(*total > 0 && covered == total, "{name}: {covered}/{total}");
    }
}

#[test]
fn a_linked_program_calling_across_its_sources_runs_unchanged_with_one_note() {
    let app = build("swap_link", &["-DCROSS"]);
    let native = native(&app, &[], &[]);
    assert_ok(&native, "native run");
    let dir = tmp("cov-cross");
    let live = under_cltrap(&dir, &["--coverage"], &app, &[], &[]);
    // Instrumenting each source on its own would give `twice` an extra parameter its caller
    // does not pass (PoCL aborts at the launch): the program must run as the application's.
    assert_ok(&live, "cltrap run --coverage");
    assert_eq!(stdout(&live), stdout(&native), "{}", stderr(&live));
    let err = stderr(&live);
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("uninstrumented"))
        .collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(notes[0].contains("twice"), "{err}");
}

/// A hotspot-style stencil (Rodinia hotspot's host loop and kernel shape: barriers and a
/// conditional `break` in one loop) under `--coverage`: the instrumented kernel runs as the
/// original does (same checksum, no crash), every launch is measured and every barrier is
/// reached by whole groups.
#[test]
fn a_stencil_with_barriers_and_a_break_in_a_loop_runs_unchanged_under_coverage() {
    let kernel = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../analyzer/tests/kernels/hotspot.cl");
    let define = format!("-DKERNEL_FILE=\"{}\"", kernel.display());
    let app = build("swap_hotspot", &[&define]);
    let native = native(&app, &[], &[]);
    assert_ok(&native, "native run");
    assert!(
        stdout(&native).starts_with("launches 3 "),
        "{}",
        stdout(&native)
    );
    let dir = tmp("cov-hotspot");
    let live = under_cltrap(&dir, &["--coverage"], &app, &[], &[]);
    assert_ok(&live, "cltrap run --coverage");
    assert_eq!(stdout(&live), stdout(&native), "{}", stderr(&live));
    let r = report(&dir);
    let k = &r["programs"][0]["kernels"][0];
    assert_eq!(k["kernel"], "hotspot", "{r}");
    assert_eq!(k["unnumbered_launches"], 3, "{r}");
    let status: Vec<(u64, String)> = k["barrier_sites"]
        .as_array()
        .expect("barrier sites")
        .iter()
        .map(|b| {
            (
                b["line"].as_u64().expect("line"),
                b["status"].as_str().expect("status").to_string(),
            )
        })
        .collect();
    assert_eq!(
        status,
        [
            (41, "covered".to_string()),
            (67, "covered".to_string()),
            (72, "covered".to_string())
        ],
        "{r}"
    );
}
