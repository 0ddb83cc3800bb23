//! Errors an application provokes on purpose reach it unchanged under the shim.

use cltrap_e2e::*;

#[test]
fn provoked_errors_reach_the_application_unchanged() {
    let exe = fixture("errors");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let text = native.stdout_text();
    for expected in [
        "clGetDeviceIDs(ACCELERATOR) = -1",
        "clBuildProgram(broken.cl) = -11",
        "clSetKernelArg(index 7 of 3) = -49",
        "clEnqueueNDRangeKernel(args unset) = -52",
    ] {
        assert!(
            text.contains(expected),
            "native run lacks `{expected}`\n{}",
            native.describe()
        );
    }
    let dir = fresh_capture_dir("errors");
    let captured = run_captured(&dir, &[], &exe, &[] as &[&str]);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    // Only the one valid launch ran; the failed enqueues must not appear as launches that
    // replay would then try (and fail) to reproduce.
    let cap = open_capture(&dir);
    let ok: Vec<_> = cap.launches.iter().filter(|l| l.status == 0).collect();
    assert_eq!(
        ok.len(),
        1,
        "one successful launch: {:?}",
        kernel_sequence(&cap)
    );
    assert_eq!(ok[0].kernel, "vadd");
    assert_replay_ids_ok(&dir, &[ok[0].id]);
}
