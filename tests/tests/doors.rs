//! Both doors into an application work on their own, and together see each call once:
//! `LD_PRELOAD` alone, `OPENCL_LAYERS` alone, and both at once (what `cltrap run` sets up).

use cltrap_e2e::*;

#[test]
fn the_preload_door_alone_captures_every_launch_once() {
    let exe = fixture("sequence");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let dir = fresh_capture_dir("preload-only");
    let pre = run_preloaded(&dir, &[], &exe, &[] as &[&str]);
    pre.assert_no_panic();
    assert_same_behaviour(&native, &pre);
    let cap = open_capture(&dir);
    assert_eq!(cap.launches.len(), 12, "12 enqueues, each captured once");
    assert_replays_ok(&dir, 12);
}

#[test]
fn the_layer_door_alone_captures_an_application_that_dlopens_the_loader() {
    let exe = fixture("dlopen_app");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let dir = fresh_capture_dir("layer-only");
    let layered = run_as_layer(&dir, &exe, &[] as &[&str]);
    layered.assert_no_panic();
    assert_same_behaviour(&native, &layered);
    let cap = open_capture(&dir);
    assert_eq!(kernel_sequence(&cap), ["vadd", "vadd", "vadd"]);
    assert_replays_ok(&dir, 3);
}

#[test]
fn both_doors_at_once_see_each_launch_exactly_once() {
    let exe = fixture("sequence");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let dir = fresh_capture_dir("both-doors");
    let layers = tools().shim.clone();
    let both = run_preloaded(
        &dir,
        &[("OPENCL_LAYERS", layers.as_os_str())],
        &exe,
        &[] as &[&str],
    );
    both.assert_no_panic();
    assert_same_behaviour(&native, &both);
    let cap = open_capture(&dir);
    assert_eq!(
        cap.launches.len(),
        12,
        "preload and layer together must not double-count"
    );
    let seqs: Vec<u64> = cap.launches.iter().map(|l| l.seq).collect();
    assert_eq!(
        seqs,
        (0..12).collect::<Vec<u64>>(),
        "enqueue numbers 0..11 once each"
    );
}

/// Preloaded alone (no `OPENCL_LAYERS` given), the shim still reaches an application that
/// `dlopen`s the loader: the loader's `getenv("OPENCL_LAYERS")` names the shim, though the
/// environment itself (what children inherit) does not.
#[test]
fn preloaded_alone_the_shim_reaches_an_application_that_dlopens_the_loader() {
    let exe = fixture("dlopen_app");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let dir = fresh_capture_dir("preload-dlopen");
    let pre = run_preloaded(&dir, &[], &exe, &[] as &[&str]);
    pre.assert_no_panic();
    assert_same_behaviour(&native, &pre);
    let cap = open_capture(&dir);
    assert_eq!(kernel_sequence(&cap), ["vadd", "vadd", "vadd"]);
}
