//! The third-party matrix (see `cltrap_e2e::matrix`): real OpenCL code from Debian packages —
//! ffmpeg's OpenCL filters, CLBlast and ViennaCL driven by small hosts, pyopencl's library
//! kernels — through capture, replay, `--schedules`, cover, check against Oclgrind, fuzz,
//! mutate and export. The ffmpeg row runs by default; the others take minutes each on two
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
        skip(source, &format!("it does not build here (apt-get install {package})\n{}", out.describe()));
        return None;
    }
    Some(exe)
}

fn slow_row(name: &str) -> bool {
    if !full_matrix() {
        skip(name, "a slow row of the third-party matrix: set CLTRAP_MATRIX=1 to run it");
    }
    full_matrix()
}

#[test]
fn ffmpeg_opencl_filters_through_every_analysis() {
    let Some(ffmpeg) = installed("ffmpeg", "ffmpeg") else { return };
    let vf = "format=rgba,hwupload,unsharp_opencl,sobel_opencl,transpose_opencl,boxblur_opencl,\
              erosion_opencl,dilation_opencl,prewitt_opencl,roberts_opencl,hwdownload,format=rgba";
    let args = [
        "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x64:rate=5", "-frames:v", "2",
        "-init_hw_device", "opencl=ocl:0.0", "-filter_hw_device", "ocl", "-vf", vf, "-f", "rawvideo",
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
    };
    let (_dir, verdicts) = run_pipeline(&app);
    verdicts.assert_none(app.name);
}

#[test]
fn clblast_library_through_every_analysis() {
    if !slow_row("clblast") {
        return;
    }
    let Some(exe) = host("clblast_host.c", "cc", &["-lclblast", "-lOpenCL", "-lm"], "libclblast-dev") else {
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
        return skip("pyopencl-library", "Debian's python3-pyopencl is not installed");
    }
    let app = App {
        name: "pyopencl-library",
        program: PathBuf::from("/usr/bin/python3"),
        args: vec![fixture_source_dir("thirdparty").join("pyopencl_library.py").into()],
        // pyopencl loads programs from its binary cache after a first run: a capture of
        // those holds binaries only, which the analyses cannot instrument.
        env: vec![("PYOPENCL_NO_CACHE", "1".into())],
        expect_stdout: "pyopencl library kernels: ok",
        fuzz_kernel: "lin",
        mutate_kernel: "reduce_kernel_stage1",
        export_kernel: "scan_lev1",
    };
    let (_dir, verdicts) = run_pipeline(&app);
    verdicts.assert_none(app.name);
}
