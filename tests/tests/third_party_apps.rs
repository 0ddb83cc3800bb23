//! Third-party OpenCL applications from Debian packages run under the shim with their own
//! results unchanged, and every launch they make is captured and replays ok:
//! clpeak (kernel-latency, all ~20,000 launches; integer compute, two launches per kernel), clFFT-client, and an ffmpeg OpenCL
//! filter chain. Each test skips with a printed reason only when the program is not installed.

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
