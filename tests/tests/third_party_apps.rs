//! Third-party OpenCL applications from Debian packages run under the shim with their own
//! results unchanged, and every launch they make is captured and replays ok:
//! clpeak (kernel-latency, all ~20,000 launches; integer compute, two launches per kernel), clFFT-client, hashcat, CLBlast's tuner, an ffmpeg OpenCL
//! filter chain and a GEGL filter (whose programs are two source strings, and whose
//! brightness-contrast kernel crashes Oclgrind's uninitialised-value plugin). Each test skips
//! with a printed reason only when the program is not installed.

use cltrap_capture::Capture;
use cltrap_e2e::*;
use std::ffi::OsStr;
use std::path::PathBuf;

/// clpeak prints measurements; the structure of its report (every line with numbers masked)
/// must be identical with and without the shim.
fn mask_numbers(text: &str) -> String {
    let mut out = String::new();
    let mut in_num = false;
    for c in text.chars() {
        if c.is_ascii_digit() || (in_num && c == '.') {
            if !in_num {
                out.push('#');
            }
            in_num = true;
        } else {
            in_num = false;
            out.push(c);
        }
    }
    out
}

/// Runs `program args` captured into a fresh directory `label`: it behaves as it did natively,
/// the capture is quiet, and it holds launches (else it fails with `none_captured`).
fn capture_like_native<S: AsRef<OsStr>>(
    label: &str,
    program: &PathBuf,
    args: &[S],
    native: &Outcome,
    none_captured: &str,
) -> (TestDir, Capture) {
    let dir = fresh_capture_dir(label);
    let captured = run_captured(&dir, &[], program, args);
    captured.assert_no_panic();
    assert_same_behaviour(native, &captured);
    assert_quiet_capture(native, &captured);
    let cap = open_capture(&dir);
    assert!(!cap.launches.is_empty(), "{none_captured}");
    (dir, cap)
}

/// Runs one clpeak mode natively and captured; returns the capture directory (None when
/// clpeak is not installed).
fn clpeak_mode(mode: &str, flags: &[&str], min_launches: usize) -> Option<TestDir> {
    let clpeak = installed("clpeak", "clpeak")?;
    let native = run_native(&clpeak, &[mode]).expect_success();
    let dir = fresh_capture_dir(&format!("clpeak{mode}"));
    let captured = run_captured(&dir, flags, &clpeak, &[mode]);
    captured.assert_no_panic();
    assert_eq!(
        native.ending(),
        captured.ending(),
        "{}",
        captured.describe()
    );
    assert_eq!(
        mask_numbers(&native.stdout_text()),
        mask_numbers(&captured.stdout_text()),
        "clpeak's report changed shape under the shim\n{}",
        captured.describe()
    );
    assert_quiet_capture(&native, &captured);
    let cap = open_capture(&dir);
    assert!(
        cap.launches.len() >= min_launches,
        "{} launches: {:?}",
        cap.launches.len(),
        kernel_counts(&cap)
    );
    assert_list_shows(&dir, &cap);
    assert_replays_ok(&dir, cap.launches.len());
    Some(dir)
}

#[test]
fn clpeak_kernel_latency_runs_unchanged_and_all_its_launches_replay_ok() {
    // About 20,000 launches of one kernel on unchanged buffers: everything is captured, the
    // contents are stored about once, and every launch replays ok.
    let Some(dir) = clpeak_mode("--kernel-latency", &[], 10_000) else {
        return;
    };
    let blobs = dir_size(&dir.join("blobs"));
    assert!(
        blobs < 4 << 20,
        "{blobs} bytes of blobs for one kernel on unchanged buffers"
    );
}

#[test]
fn clpeak_integer_compute_runs_unchanged_and_its_launches_replay_ok() {
    // Five kernels (int, int2, int4, int8, int16); the first two launches of each.
    clpeak_mode("--compute-integer", &["--per-kernel", "2"], 10);
}

#[test]
fn clfft_client_result_is_unchanged_and_its_launches_replay_ok() {
    let Some(client) = installed("clFFT-client", "clfft-client") else {
        return;
    };
    let args = ["-x", "64", "-y", "64", "-c", "-p", "1"];
    let native = run_native(&client, &args).expect_success();
    assert!(
        native.stdout_text().contains("PASS"),
        "{}",
        native.describe()
    );
    let (dir, cap) = capture_like_native(
        "clfft",
        &client,
        &args,
        &native,
        "clFFT's launches were not captured",
    );
    assert_list_shows(&dir, &cap);
    assert_replays_ok(&dir, cap.launches.len());
}

#[test]
fn ffmpeg_opencl_filter_output_is_bit_identical_and_its_launches_replay_ok() {
    let Some(ffmpeg) = installed("ffmpeg", "ffmpeg") else {
        return;
    };
    let args: Vec<&OsStr> = [
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
    ]
    .iter()
    .map(OsStr::new)
    .collect();
    let native = run_native(&ffmpeg, &args).expect_success();
    assert_eq!(
        native.stdout.len(),
        64 * 64 * 4 * 3,
        "three 64x64 RGBA frames"
    );
    let (dir, cap) = capture_like_native(
        "ffmpeg",
        &ffmpeg,
        &args,
        &native,
        "ffmpeg's filter launches were not captured",
    );
    assert!(
        cap.launches.iter().any(|l| l.kernel.contains("avgblur")),
        "{:?}",
        kernel_counts(&cap)
    );
    assert_list_shows(&dir, &cap);
    assert_replays_ok(&dir, cap.launches.len());
}

/// `cltrap run --out cap FLAGS -- program ARGS` with `env` added to the environment (and the
/// shim the tests use), in `cwd`.
fn run_captured_in<S: AsRef<OsStr>>(
    cap: &std::path::Path,
    flags: &[&str],
    program: &std::path::Path,
    args: &[S],
    env: &[(&str, &OsStr)],
    cwd: Option<&std::path::Path>,
) -> Outcome {
    let t = tools();
    let mut all: Vec<std::ffi::OsString> = vec!["run".into(), "--out".into(), cap.into()];
    all.extend(flags.iter().map(|f| f.into()));
    all.push("--".into());
    all.push(program.into());
    all.extend(args.iter().map(|a| a.as_ref().to_os_string()));
    let mut env = env.to_vec();
    env.push(("CLTRAP_SHIM", t.shim.as_os_str()));
    run_with_env(&t.cltrap, &all, &env, cwd)
}

/// The origins of the programs of every launch in `cap`.
fn launch_origins(cap: &Capture) -> Vec<(String, cltrap_capture::ProgramOrigin)> {
    cap.launches
        .iter()
        .map(|l| {
            let p = cap.program(&l.program).expect("program record");
            (l.kernel.clone(), p.origin)
        })
        .collect()
}

/// Runs hashcat (`-m 0`, a dictionary attack on one MD5) with its home, kernel cache and data
/// in `home`, natively or under `cltrap run --out cap FLAGS` (a fresh `home` builds hashcat's
/// kernels from source, with its `-D` macros and `#include`d headers, and leaves them in its
/// kernel cache there; a later run in the same `home` loads them as binaries).
fn hashcat_run(
    hashcat: &PathBuf,
    home: &std::path::Path,
    cap: Option<(&std::path::Path, &[&str])>,
) -> Outcome {
    std::fs::create_dir_all(home).expect("hashcat home");
    let hash = home.join("hash.txt");
    let words = home.join("words.txt");
    // md5("hashcat")
    std::fs::write(&hash, "8743b52063cd84097a65d1633f5c74f5\n").expect("hash file");
    std::fs::write(&words, "foo\nbar\nhashcat\nbaz\n").expect("word list");
    let hashcat_args: Vec<std::ffi::OsString> = [
        "-m",
        "0",
        "-a",
        "0",
        "--force",
        "-D",
        "1",
        "--potfile-disable",
        "--quiet",
    ]
    .iter()
    .map(|s| s.into())
    .chain([hash.into_os_string(), words.into_os_string()])
    .collect();
    let env: Vec<(&str, &OsStr)> = vec![
        ("HOME", home.as_os_str()),
        ("XDG_CACHE_HOME", home.as_os_str()),
        ("XDG_DATA_HOME", home.as_os_str()),
        ("XDG_CONFIG_HOME", home.as_os_str()),
    ];
    match cap {
        None => run_with_env(hashcat, &hashcat_args, &env, Some(home)),
        Some((cap, flags)) => run_captured_in(cap, flags, hashcat, &hashcat_args, &env, Some(home)),
    }
}

/// hashcat (Debian's package; it `dlopen`s the OpenCL loader) cracks the same hash under the
/// shim, its launches (its own `m00000_*` attack kernels among them, built from sources that
/// include headers through macros and take `u64` typedef'd scalars) are captured, listed with
/// their scalar values decoded, every one replays bit for bit, and `cltrap cover` instruments
/// its linked programs. Run again in the same home, hashcat loads its kernels from its own
/// cache: see [`hashcat_with_a_warm_kernel_cache`].
#[test]
fn hashcat_cracks_the_same_hash_and_its_launches_replay_ok() {
    let Some(hashcat) = installed("hashcat", "hashcat") else {
        return;
    };
    let base = fresh_dir("apps", "hashcat");
    let native = hashcat_run(&hashcat, &base.join("native"), None).expect_success();
    assert!(
        native
            .stdout_text()
            .contains("8743b52063cd84097a65d1633f5c74f5:hashcat"),
        "{}",
        native.describe()
    );
    let dir = fresh_capture_dir("hashcat");
    let captured = hashcat_run(&hashcat, &base.join("captured"), Some((&dir, &[])));
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    assert_quiet_capture(&native, &captured);
    let cap = open_capture(&dir);
    let kernels = kernel_counts(&cap);
    assert!(
        kernels.keys().any(|k| k.starts_with("m00000")),
        "hashcat's MD5 kernels were not captured: {kernels:?}"
    );
    let list = assert_list_shows(&dir, &cap).stdout_text();
    // `u64 gid_max` is a typedef'd scalar: shown as its integer value, not as raw bytes.
    assert!(
        list.contains("gid_max=") && !list.contains("gid_max=0x"),
        "hashcat's u64 scalars are not decoded\n{list}"
    );
    // Its headers, named through macros (`#include M2S(INCLUDE_PATH/inc_vendor.h)`), travel
    // with the capture.
    let m0 = cap
        .launches
        .iter()
        .find(|l| l.kernel.starts_with("m00000"))
        .map(|l| l.id)
        .unwrap_or_default();
    let show = cltrap(&[
        OsStr::new("show"),
        dir.as_os_str(),
        OsStr::new(&m0.to_string()),
    ]);
    assert!(show.success(), "{}", show.describe());
    let text = show.stdout_text();
    assert!(
        text.contains("inc_vendor.h, captured") && text.contains("inc_common.cl"),
        "hashcat's headers were not captured\n{text}"
    );
    assert_replays_ok(&dir, cap.launches.len());
    // hashcat builds each kernel by clCompileProgram + clLinkProgram of one unit, and spells
    // `__kernel` as KERNEL_FQ from a header: coverage instruments the unit and runs it.
    let cover = cltrap(&[OsStr::new("cover"), dir.as_os_str()]);
    cover.assert_no_panic();
    assert!(cover.success(), "{}", cover.describe());
    let text = cover.stdout_text();
    let line = text
        .lines()
        .find(|l| l.starts_with("kernel m00000_sxx"))
        .unwrap_or_else(|| panic!("hashcat's kernel was not covered\n{}", cover.describe()));
    assert!(
        line.contains("branches") && !line.contains("branches 0/0"),
        "{line}"
    );
    assert!(
        text.contains("(0 skipped, 0 failed)"),
        "{}",
        cover.describe()
    );
    hashcat_with_a_warm_kernel_cache(&hashcat, &base.join("captured"), &native);
}

/// hashcat run again in `home`, whose kernel cache the first run filled: it loads every
/// kernel with `clCreateProgramWithBinary`, so the capture holds binaries and the shim says
/// so once, naming a kernel and `--refuse-binaries`. hashcat has no fallback: with
/// `--refuse-binaries` it reports `CL_INVALID_BINARY`, says the kernel build failed and exits
/// 255 without launching anything (emptying its kernel cache, as the first run had it, is
/// what makes it build from source).
fn hashcat_with_a_warm_kernel_cache(hashcat: &PathBuf, home: &std::path::Path, native: &Outcome) {
    let base = fresh_dir("apps", "hashcat-warm");
    let dir = base.join("cap-binary");
    let warm = hashcat_run(hashcat, home, Some((&dir, &[])));
    warm.assert_no_panic();
    assert_same_behaviour(native, &warm);
    let said = shim_lines_of_launcher_run(&warm.stderr);
    assert_eq!(said.len(), 1, "{}", warm.describe());
    assert!(
        said[0].contains("comes from a program created from a binary")
            && said[0].contains("--refuse-binaries"),
        "{}",
        warm.describe()
    );
    let cap = open_capture(&dir);
    let origins = launch_origins(&cap);
    assert!(
        origins.iter().any(|(k, _)| k.starts_with("m00000")),
        "{origins:?}"
    );
    assert!(
        origins
            .iter()
            .all(|(_, o)| matches!(o, cltrap_capture::ProgramOrigin::Binary { .. })),
        "{origins:?}"
    );
    assert!(
        origins
            .iter()
            .any(|(k, _)| said[0].contains(&format!("kernel '{k}'"))),
        "the warning names a kernel of the binary programs\n{}",
        warm.describe()
    );

    let dir = base.join("cap-refused");
    let refused = hashcat_run(hashcat, home, Some((&dir, &["--refuse-binaries"])));
    refused.assert_no_panic();
    assert_eq!(refused.code, Some(255), "{}", refused.describe());
    assert!(
        refused.stderr.contains("refused a program binary")
            && refused
                .stderr
                .contains("clCreateProgramWithBinary(): CL_INVALID_BINARY")
            && refused.stderr.contains("build failed"),
        "{}",
        refused.describe()
    );
    assert!(
        !refused.stdout_text().contains(":hashcat"),
        "{}",
        refused.describe()
    );
    assert!(
        refused.stderr.contains("no OpenCL launches were captured"),
        "{}",
        refused.describe()
    );
}

/// CLBlast's tuner (Debian's clblast-utils) explores 96 configurations of its `Xaxpy`
/// kernel, one program built per configuration with its own `-D` parameters, and checks
/// every result against a reference: under the shim every configuration still matches, all
/// its launches replay bit for bit (one rebuilt program per configuration), and coverage
/// instruments CLBlast's macro-generated kernel text.
#[test]
fn clblast_tuner_results_match_and_its_launches_replay_ok() {
    let Some(tuner) = installed("clblast_tuner_xaxpy", "clblast-utils") else {
        return;
    };
    // Timings (and so the best parameters) differ run to run: compare what does not.
    let verdicts = |o: &Outcome| {
        let text = o.stdout_text();
        (
            text.matches("results match").count(),
            text.contains("Completed tuning process"),
        )
    };
    let args = ["-n", "262144", "-runs", "1", "-fraction", "0.05"];
    let work = fresh_dir("apps", "clblast");
    let t = tools();
    let native = run_with_env(&tuner, &args, &[], Some(&work)).expect_success();
    assert_eq!(verdicts(&native), (96, true), "{}", native.describe());
    let dir = fresh_capture_dir("clblast");
    let mut all: Vec<std::ffi::OsString> = vec![
        "run".into(),
        "--out".into(),
        dir.as_os_str().into(),
        "--".into(),
    ];
    all.push(tuner.clone().into());
    all.extend(args.iter().map(|a| a.into()));
    let captured = run_with_env(
        &t.cltrap,
        &all,
        &[("CLTRAP_SHIM", t.shim.as_os_str())],
        Some(&work),
    );
    captured.assert_no_panic();
    assert_eq!(captured.code, Some(0), "{}", captured.describe());
    assert_eq!(verdicts(&captured), (96, true), "{}", captured.describe());
    let cap = open_capture(&dir);
    let programs: std::collections::BTreeSet<&str> =
        cap.launches.iter().map(|l| l.program.as_str()).collect();
    assert!(
        cap.launches.len() >= 96 && programs.len() >= 96,
        "{} launches of {} programs",
        cap.launches.len(),
        programs.len()
    );
    let list = assert_list_shows(&dir, &cap);
    assert!(
        list.stdout_text().contains(" arg_alpha=2.0 "),
        "{}",
        list.describe()
    );
    assert_replays_ok(&dir, cap.launches.len());
    // `real_arg arg_alpha` is a typedef of CLBlast's own: `show` asks clang what it is.
    let show = cltrap(&[OsStr::new("show"), dir.as_os_str(), OsStr::new("0")]);
    assert!(show.success(), "{}", show.describe());
    assert!(
        show.stdout_text()
            .contains("value 2.0 (`real_arg` is `const float`"),
        "{}",
        show.describe()
    );
    let cover = cltrap(&[OsStr::new("cover"), dir.as_os_str(), OsStr::new("0")]);
    assert!(cover.success(), "{}", cover.describe());
    assert!(
        cover.stdout_text().contains("kernel XaxpyFastest")
            || cover.stdout_text().contains("kernel Xaxpy"),
        "{}",
        cover.describe()
    );
}

/// pyopencl (Debian's python3-pyopencl) keeps the binaries of the programs it builds in its
/// cache (`$XDG_CACHE_HOME/pyopencl`) and, once that is warm, creates them with
/// `clCreateProgramWithBinary`: the capture then holds binaries only, and the shim says so
/// once, naming a kernel and `--refuse-binaries`. With `--refuse-binaries` pyopencl catches
/// the `CL_INVALID_BINARY`, warns "PyOpenCL compiler caching failed" and builds from source:
/// the script's result is unchanged, every captured program is source and `cltrap cover`
/// instruments them.
#[test]
fn pyopencl_with_a_warm_binary_cache_is_said_and_refusing_binaries_captures_sources() {
    if !cltrap_e2e::matrix::debian_pyopencl() {
        return skip(
            "pyopencl_with_a_warm_binary_cache",
            "Debian's python3-pyopencl is not installed",
        );
    }
    let python = std::path::Path::new("/usr/bin/python3");
    let script = fixture_source_dir("thirdparty").join("pyopencl_library.py");
    let args = [script.as_os_str()];
    let base = fresh_dir("apps", "pyopencl-cache");
    let cache = base.join("cache");
    let env: Vec<(&str, &OsStr)> = vec![("XDG_CACHE_HOME", cache.as_os_str())];
    let first = run_with_env(python, &args, &env, None).expect_success();
    let ok = "pyopencl library kernels: ok";
    assert!(first.stdout_text().contains(ok), "{}", first.describe());
    assert!(cache.join("pyopencl").is_dir(), "pyopencl wrote no cache");
    let native = run_with_env(python, &args, &env, None).expect_success();

    let dir = base.join("cap-binary");
    let warm = run_captured_in(&dir, &[], python, &args, &env, None);
    warm.assert_no_panic();
    assert_same_behaviour(&native, &warm);
    assert_quiet_capture(&native, &{
        // The one line said about binaries is expected; nothing else may be added.
        let mut quiet = warm.clone();
        quiet.stderr = warm
            .stderr
            .lines()
            .filter(|l| !l.contains("comes from a program created from a binary"))
            .map(|l| format!("{l}\n"))
            .collect();
        quiet
    });
    let said = shim_lines_of_launcher_run(&warm.stderr);
    assert_eq!(said.len(), 1, "{}", warm.describe());
    let cap = open_capture(&dir);
    let origins = launch_origins(&cap);
    assert!(origins.len() >= 5, "{origins:?}");
    assert!(
        origins
            .iter()
            .all(|(_, o)| matches!(o, cltrap_capture::ProgramOrigin::Binary { .. })),
        "{origins:?}"
    );
    assert!(
        said[0].contains("comes from a program created from a binary")
            && said[0].contains("--refuse-binaries")
            && origins
                .iter()
                .any(|(k, _)| said[0].contains(&format!("kernel '{k}'"))),
        "{}",
        warm.describe()
    );
    let cover = cltrap(&[OsStr::new("cover"), dir.as_os_str()]);
    cover.assert_no_panic();
    assert!(
        cover
            .stdout_text()
            .contains(&format!("({} skipped, 0 failed)", origins.len())),
        "{}",
        cover.describe()
    );

    let dir = base.join("cap-refused");
    let refused = run_captured_in(&dir, &["--refuse-binaries"], python, &args, &env, None);
    refused.assert_no_panic();
    assert!(refused.success(), "{}", refused.describe());
    assert_eq!(refused.stdout, native.stdout, "{}", refused.describe());
    assert!(
        refused.stderr.contains("refused a program binary")
            && refused
                .stderr
                .contains("PyOpenCL compiler caching failed with an exception")
            && refused.stderr.contains("INVALID_BINARY"),
        "{}",
        refused.describe()
    );
    let cap = open_capture(&dir);
    let origins = launch_origins(&cap);
    assert!(origins.len() >= 5, "{origins:?}");
    assert!(
        origins
            .iter()
            .all(|(_, o)| matches!(o, cltrap_capture::ProgramOrigin::Source { .. })),
        "{origins:?}"
    );
    // Every program is one unit of source now: none is skipped, and pyopencl's own kernels
    // (the elementwise `lin`, the reduction, the scan) are instrumented and run.
    let cover = cltrap(&[OsStr::new("cover"), dir.as_os_str()]);
    cover.assert_no_panic();
    let text = cover.stdout_text();
    assert!(text.contains("(0 skipped,"), "{}", cover.describe());
    for kernel in ["lin", "reduce_kernel_stage1", "scan_lev1"] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("kernel {kernel} ")))
            .unwrap_or_else(|| panic!("{kernel} was not covered\n{}", cover.describe()));
        assert!(
            line.contains("branches") && !line.contains("branches 0/0"),
            "{line}"
        );
    }
}

/// GEGL (Debian's `gegl`, with `GEGL_USE_OPENCL=cpu` so it uses PoCL's CPU device) writes the
/// same image under the shim; its launches (programs of two source strings: GEGL's helpers,
/// then the kernel) replay bit for bit; and `cltrap check --engine oclgrind` checks both of
/// them for races and bounds. Oclgrind 21.10 dies of SIGSEGV on the brightness-contrast kernel
/// with its uninitialised-value plugin on: the launch is checked again without that plugin and
/// reported as incomplete (exit status 3, naming the crash), not as a launch that could not be
/// checked (exit status 2).
#[test]
fn gegl_writes_the_same_image_its_launches_replay_and_oclgrind_checks_them() {
    let Some(gegl) = installed("gegl", "gegl") else {
        return;
    };
    let base = fresh_dir("apps", "gegl");
    let home = base.join("home");
    std::fs::create_dir_all(&home).expect("home");
    let env: Vec<(&str, &OsStr)> = vec![
        ("GEGL_USE_OPENCL", OsStr::new("cpu")),
        ("HOME", home.as_os_str()),
        ("XDG_CACHE_HOME", home.as_os_str()),
        ("XDG_CONFIG_HOME", home.as_os_str()),
        ("XDG_DATA_HOME", home.as_os_str()),
    ];
    let input = base.join("in.png");
    // A 256x192 picture of GEGL's own making (noise over a checkerboard), made without OpenCL.
    let made = run_with_env(
        &gegl,
        &[
            OsStr::new("-o"),
            input.as_os_str(),
            OsStr::new("--"),
            OsStr::new("gegl:checkerboard"),
            OsStr::new("color1=red"),
            OsStr::new("color2=blue"),
            OsStr::new("x=13"),
            OsStr::new("y=17"),
            OsStr::new("gegl:crop"),
            OsStr::new("width=256"),
            OsStr::new("height=192"),
            OsStr::new("gegl:noise-rgb"),
        ],
        &[
            ("GEGL_USE_OPENCL", OsStr::new("no")),
            ("HOME", home.as_os_str()),
        ],
        None,
    );
    assert!(input.is_file(), "{}", made.describe());
    let filter = |out: &std::path::Path| -> Vec<std::ffi::OsString> {
        vec![
            input.clone().into_os_string(),
            "-o".into(),
            out.into(),
            "--".into(),
            "gegl:brightness-contrast".into(),
            "contrast=1.3".into(),
        ]
    };
    let native_png = base.join("native.png");
    let native = run_with_env(&gegl, &filter(&native_png), &env, None).expect_success();
    let dir = fresh_capture_dir("gegl");
    let captured_png = base.join("captured.png");
    let captured = run_captured_in(&dir, &[], &gegl, &filter(&captured_png), &env, None);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    assert_eq!(
        std::fs::read(&native_png).expect("native image"),
        std::fs::read(&captured_png).expect("captured image"),
        "GEGL wrote another image under the shim\n{}",
        captured.describe()
    );
    let cap = open_capture(&dir);
    let bc = cap
        .launches
        .iter()
        .find(|l| l.kernel == "gegl_brightness_contrast")
        .unwrap_or_else(|| panic!("GEGL's kernel was not launched: {:?}", kernel_counts(&cap)));
    let program = cap.program(&bc.program).expect("its program");
    assert!(
        matches!(&program.origin, cltrap_capture::ProgramOrigin::Source { sources } if sources.len() == 2),
        "GEGL builds its kernels from two source strings: {:?}",
        program.origin
    );
    assert_replays_ok(&dir, cap.launches.len());

    if !std::path::Path::new("/usr/lib/oclgrind/liboclgrind-rt-icd.so").is_file() {
        skip(
            "gegl_writes_the_same_image_its_launches_replay_and_oclgrind_checks_them (its check)",
            "Oclgrind is not installed (apt-get install oclgrind)",
        );
        return;
    }
    let check = cltrap(&[
        OsStr::new("check"),
        dir.as_os_str(),
        OsStr::new("--engine"),
        OsStr::new("oclgrind"),
    ]);
    check.assert_no_panic();
    let text = check.stdout_text();
    assert_eq!(check.code, Some(3), "{}", check.describe());
    assert!(
        text.contains(&format!(
            "checked {0} of {0} launch(es) on oclgrind: 0 finding(s)",
            cap.launches.len()
        )),
        "{}",
        check.describe()
    );
    assert!(
        text.lines().any(|l| l.starts_with(&format!(
            "launch {} gegl_brightness_contrast: uninitialised values not checked: Oclgrind crashes on this kernel with its uninitialised-value plugin on (signal: 11",
            bc.id
        ))),
        "{}",
        check.describe()
    );
}
