//! The third-party matrix (see `cltrap_e2e::matrix`): real OpenCL code from Debian packages —
//! ffmpeg's OpenCL filters, CLBlast, ViennaCL and Boost.Compute driven by small hosts,
//! pyopencl's library, array and algorithm kernels, OpenCV's UMat kernels (a binary cache),
//! clFFT through gpyfft and its own client, clpeak and hashcat (kernels in headers) — through
//! capture, replay, `--schedules`, cover, check against Oclgrind, fuzz, mutate and export. The ffmpeg row runs by default; the others take minutes each on two
//! cores and run with `CLTRAP_MATRIX=1` (`scripts/test.sh --matrix`). A row skips, saying
//! why, only when its package is not installed.

use cltrap_e2e::matrix::{debian_pyopencl, full_matrix, run_pipeline, App};
use cltrap_e2e::*;
use std::ffi::OsString;
use std::path::PathBuf;

/// Builds a host of `tests/thirdparty/` with `compiler` and `libs`; None (after a SKIP line)
/// when the library's headers are not installed.
fn host(source: &str, compiler: &str, libs: &[&str], package: &str) -> Option<PathBuf> {
    let src = fixture_source_dir("thirdparty").join(source);
    let bin_dir = e2e_dir().join("bin");
    std::fs::create_dir_all(&bin_dir).expect("bin dir");
    let exe = bin_dir.join(source.split('.').next().unwrap_or(source));
    let mut args: Vec<OsString> = vec!["-O1".into(), "-o".into(), exe.clone().into(), src.into()];
    args.extend(libs.iter().map(OsString::from));
    let out = run_native(compiler, &args);
    if !out.success() {
        skip(
            source,
            &format!(
                "it does not build here (apt-get install {package})\n{}",
                out.describe()
            ),
        );
        return None;
    }
    Some(exe)
}

fn slow_row(name: &str) -> bool {
    if !full_matrix() {
        skip(
            name,
            "a slow row of the third-party matrix: set CLTRAP_MATRIX=1 to run it",
        );
    }
    full_matrix()
}

#[test]
fn ffmpeg_opencl_filters_through_every_analysis() {
    let Some(ffmpeg) = installed("ffmpeg", "ffmpeg") else {
        return;
    };
    let vf = "format=rgba,hwupload,unsharp_opencl,sobel_opencl,transpose_opencl,boxblur_opencl,\
              erosion_opencl,dilation_opencl,prewitt_opencl,roberts_opencl,hwdownload,format=rgba";
    let args = [
        "-nostdin",
        "-v",
        "error",
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=64x64:rate=5",
        "-frames:v",
        "2",
        "-init_hw_device",
        "opencl=ocl:0.0",
        "-filter_hw_device",
        "ocl",
        "-vf",
        vf,
        "-f",
        "rawvideo",
        "-",
    ];
    let app = App {
        name: "ffmpeg-filters",
        program: ffmpeg,
        args: args.iter().map(OsString::from).collect(),
        env: vec![],
        expect_stdout: "",
        fuzz_kernel: "transpose",
        mutate_kernel: "sobel_global",
        export_kernel: "transpose",
        ..App::default()
    };
    let (_dir, verdicts) = run_pipeline(&app);
    verdicts.assert_none(app.name);
}

#[test]
fn clblast_library_through_every_analysis() {
    if !slow_row("clblast") {
        return;
    }
    let Some(exe) = host(
        "clblast_host.c",
        "cc",
        &["-lclblast", "-lOpenCL", "-lm"],
        "libclblast-dev",
    ) else {
        return;
    };
    let app = App {
        name: "clblast",
        program: exe,
        args: vec![],
        env: vec![],
        expect_stdout: "sgemv, sgemm, saxpy, snrm2 ok",
        fuzz_kernel: "XaxpyFaster",
        mutate_kernel: "Xnrm2Epilogue",
        export_kernel: "XgemmDirectTN",
        ..App::default()
    };
    let (_dir, verdicts) = run_pipeline(&app);
    verdicts.assert_none(app.name);
}

#[test]
fn viennacl_library_through_every_analysis() {
    if !slow_row("viennacl") {
        return;
    }
    let Some(exe) = host("viennacl_host.cpp", "c++", &["-lOpenCL"], "libviennacl-dev") else {
        return;
    };
    let app = App {
        name: "viennacl",
        program: exe,
        args: vec![],
        env: vec![],
        expect_stdout: "axpy, inner_prod, norm_2, gemv, gemm ok",
        fuzz_kernel: "inner_prod1",
        mutate_kernel: "vec_mul",
        export_kernel: "_prod_TT",
        ..App::default()
    };
    let (_dir, verdicts) = run_pipeline(&app);
    verdicts.assert_none(app.name);
}

#[test]
fn pyopencl_library_kernels_through_every_analysis() {
    if !slow_row("pyopencl-library") {
        return;
    }
    if !debian_pyopencl() {
        return skip(
            "pyopencl-library",
            "Debian's python3-pyopencl is not installed",
        );
    }
    let app = App {
        name: "pyopencl-library",
        program: PathBuf::from("/usr/bin/python3"),
        args: vec![fixture_source_dir("thirdparty")
            .join("pyopencl_library.py")
            .into()],
        // pyopencl loads programs from its binary cache after a first run: a capture of
        // those holds binaries only, which the analyses cannot instrument.
        env: vec![("PYOPENCL_NO_CACHE", "1".into())],
        expect_stdout: "pyopencl library kernels: ok",
        fuzz_kernel: "lin",
        mutate_kernel: "reduce_kernel_stage1",
        export_kernel: "scan_lev1",
        ..App::default()
    };
    let (_dir, verdicts) = run_pipeline(&app);
    verdicts.assert_none(app.name);
}

#[test]
fn ffmpeg_more_opencl_filters_through_every_analysis() {
    if !slow_row("ffmpeg-more-filters") {
        return;
    }
    let Some(ffmpeg) = installed("ffmpeg", "ffmpeg") else {
        return;
    };
    // nlmeans_opencl works on planar YUV (buffer kernels, one program per plane size); the
    // others on RGBA images (image kernels with samplers, a constant-buffer convolution mask).
    let vf = "format=yuv420p,hwupload,nlmeans_opencl=s=2:p=3:r=3,hwdownload,format=yuv420p,\
              format=rgba,hwupload,avgblur_opencl=sizeX=2,convolution_opencl=0m='0 1 0 1 -4 1 0 1 0',\
              colorkey_opencl=color=red:similarity=0.2,pad_opencl=w=80:h=72:x=8:y=4,hwdownload,format=rgba";
    let args = [
        "-nostdin",
        "-v",
        "error",
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=64x64:rate=5",
        "-frames:v",
        "1",
        "-init_hw_device",
        "opencl=ocl:0.0",
        "-filter_hw_device",
        "ocl",
        "-vf",
        vf,
        "-f",
        "rawvideo",
        "-",
    ];
    let app = App {
        name: "ffmpeg-more-filters",
        program: ffmpeg,
        args: args.iter().map(OsString::from).collect(),
        expect_stdout: "",
        fuzz_kernel: "colorkey",
        mutate_kernel: "avgblur_horiz",
        export_kernel: "convolution_global",
        ..App::default()
    };
    let (_dir, verdicts) = run_pipeline(&app);
    verdicts.assert_none(app.name);
}

#[test]
fn boost_compute_algorithms_through_every_analysis() {
    if !slow_row("boost-compute") {
        return;
    }
    let Some(exe) = host(
        "boost_compute_host.cpp",
        "c++",
        &["-lOpenCL"],
        "libboost-dev",
    ) else {
        return;
    };
    let app = App {
        name: "boost-compute",
        program: exe,
        expect_stdout:
            "boost.compute transform, accumulate, inclusive_scan, count_if, sort, reverse ok",
        fuzz_kernel: "reverse",
        mutate_kernel: "merge_sort_on_cpu_merge_blocks",
        export_kernel: "serial_scan",
        ..App::default()
    };
    let (_dir, verdicts) = run_pipeline(&app);
    verdicts.assert_none(app.name);
}

#[test]
fn pyopencl_array_and_algorithm_kernels_through_every_analysis() {
    if !slow_row("pyopencl-algorithms") {
        return;
    }
    if !debian_pyopencl() {
        return skip(
            "pyopencl-algorithms",
            "Debian's python3-pyopencl is not installed",
        );
    }
    let app = App {
        name: "pyopencl-algorithms",
        program: PathBuf::from("/usr/bin/python3"),
        args: vec![fixture_source_dir("thirdparty")
            .join("pyopencl_algorithms.py")
            .into()],
        env: vec![("PYOPENCL_NO_CACHE", "1".into())],
        expect_stdout: "pyopencl array and algorithm kernels: ok",
        fuzz_kernel: "take",
        mutate_kernel: "axpbyz",
        export_kernel: "rng_gen_threefry4x32_uniform",
        ..App::default()
    };
    let (_dir, verdicts) = run_pipeline(&app);
    verdicts.assert_none(app.name);
}

/// Whether `/usr/bin/python3` imports `module` (a Debian python3-* package); a SKIP line
/// names the package when it does not.
fn python_module(row: &str, module: &str, package: &str) -> bool {
    let ok = run_native("/usr/bin/python3", &["-c", &format!("import {module}")]).success();
    if !ok {
        skip(
            row,
            &format!("/usr/bin/python3 cannot import {module} (apt-get install {package})"),
        );
    }
    ok
}

#[test]
fn opencv_umat_kernels_from_its_binary_cache_through_every_analysis() {
    if !slow_row("opencv-umat") || !python_module("opencv-umat", "cv2", "python3-opencv") {
        return;
    }
    // OpenCV keeps a binary cache of its programs: the native run fills a private one, and the
    // capture refuses those binaries (`--refuse-binaries`), so OpenCV rebuilds from source and
    // the capture holds sources the analyses can read.
    let cache = fresh_dir("matrix-private", "opencv-cache");
    let app = App {
        name: "opencv-umat",
        program: PathBuf::from("/usr/bin/python3"),
        args: vec![fixture_source_dir("thirdparty")
            .join("opencv_umat.py")
            .into()],
        env: vec![
            ("OPENCV_OPENCL_DEVICE", ":CPU:".into()),
            ("OPENCV_OPENCL_CACHE_DIR", cache.into_os_string()),
        ],
        capture_flags: vec!["--refuse-binaries".into()],
        expect_stdout: "opencv umat cvtColor, blur, Sobel, threshold, resize, add: ok",
        fuzz_kernel: "threshold",
        mutate_kernel: "boxFilter",
        export_kernel: "resizeLN",
        ..App::default()
    };
    let (_dir, verdicts) = run_pipeline(&app);
    verdicts.assert_none(app.name);
}

#[test]
fn gpyfft_clfft_plans_through_every_analysis() {
    if !slow_row("gpyfft")
        || !debian_pyopencl()
        || !python_module("gpyfft", "gpyfft", "python3-gpyfft")
    {
        return;
    }
    let app = App {
        name: "gpyfft",
        program: PathBuf::from("/usr/bin/python3"),
        args: vec![fixture_source_dir("thirdparty")
            .join("gpyfft_fft.py")
            .into()],
        env: vec![("PYOPENCL_NO_CACHE", "1".into())],
        expect_stdout: "gpyfft clFFT c2c forward, inverse, batched r2c: ok",
        fuzz_kernel: "fft_fwd",
        mutate_kernel: "fft_back",
        // clFFT's generated FFT kernels have hundreds of arithmetic sites; the GPU operators
        // (barriers, fences, work-item ids) keep the campaign within the harness's limit.
        mutate_operators: Some("gpu"),
        export_kernel: "fft_fwd",
        ..App::default()
    };
    let (_dir, verdicts) = run_pipeline(&app);
    verdicts.assert_none(app.name);
}

#[test]
fn clfft_client_2d_transform_through_every_analysis() {
    if !slow_row("clfft-client") {
        return;
    }
    let Some(client) = installed("clFFT-client", "clfft-client") else {
        return;
    };
    let app = App {
        name: "clfft-client",
        program: client,
        // A 64x32 out-of-place 2-D FFT on the CPU device, run once: two FFT passes and
        // clFFT's transpose kernels; the client checks its result against its own reference.
        args: ["-c", "-x", "64", "-y", "32", "-o", "-p", "1"]
            .iter()
            .map(OsString::from)
            .collect(),
        expect_stdout: "Internal Client Test *****PASS*****",
        fuzz_kernel: "transpose_gcn",
        mutate_kernel: "fft_fwd",
        mutate_operators: Some("gpu"),
        export_kernel: "transpose_gcn",
        ..App::default()
    };
    let (_dir, verdicts) = run_pipeline(&app);
    verdicts.assert_none(app.name);
}

#[test]
fn clpeak_kernel_latency_through_every_analysis() {
    if !slow_row("clpeak") {
        return;
    }
    let Some(clpeak) = installed("clpeak", "clpeak") else {
        return;
    };
    let app = App {
        name: "clpeak",
        program: clpeak,
        // The latency test launches one small kernel 20 000 times: the capture keeps the
        // first three, the launches the analyses need.
        args: vec!["--kernel-latency".into()],
        capture_flags: ["--per-kernel", "3"].iter().map(OsString::from).collect(),
        timed_stdout: true,
        expect_stdout: "Kernel launch latency",
        fuzz_kernel: "global_bandwidth_v1_local_offset",
        mutate_kernel: "global_bandwidth_v1_local_offset",
        export_kernel: "global_bandwidth_v1_local_offset",
        ..App::default()
    };
    let (_dir, verdicts) = run_pipeline(&app);
    verdicts.assert_none(app.name);
}

#[test]
fn hashcat_mask_attack_through_every_analysis() {
    if !slow_row("hashcat") {
        return;
    }
    let Some(hashcat) = installed("hashcat", "hashcat") else {
        return;
    };
    // An MD5 mask attack over three digits. hashcat builds its kernels from sources that
    // `#include` its headers (OpenCL/inc_*.cl) and caches the binaries under the XDG cache
    // folder, with no fallback to source when a cached binary is refused: every run of the
    // application gets fresh private folders instead.
    let work = fresh_dir("matrix-private", "hashcat-work");
    let hashes = work.join("hash.txt");
    // md5("427")
    std::fs::write(&hashes, "18997733ec258a9fcaf239cc55d53363\n").expect("hash file");
    let mut args: Vec<OsString> = [
        "--force",
        "--potfile-disable",
        "--quiet",
        "--logfile-disable",
        "--session",
        "matrix",
        "-m",
        "0",
        "-a",
        "3",
        "-D",
        "1,2",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    args.push(hashes.into_os_string());
    args.push("?d?d?d".into());
    let app = App {
        name: "hashcat",
        program: hashcat,
        args,
        private_dirs: vec!["HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"],
        expect_stdout: "18997733ec258a9fcaf239cc55d53363:427",
        fuzz_kernel: "l_markov",
        mutate_kernel: "gpu_atinit",
        export_kernel: "m00000_sxx",
        ..App::default()
    };
    let (_dir, verdicts) = run_pipeline(&app);
    verdicts.assert_none(app.name);
}
