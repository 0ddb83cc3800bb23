//! The shim under launch storms past its in-flight launch cap, on the real PoCL runtime: every
//! launch is recorded, in order, with exactly the contents it saw; and launches held behind an
//! unset user event never make the application wait for the capture (the cap must not turn
//! into a deadlock or a 30 s stall).
//!
//! Each test compiles `fixtures/storm.c`, runs it natively and under `libcltrap.so`, and
//! compares. Needs `cc`, the OpenCL headers, ocl-icd and PoCL.

use cltrap_capture::{ArgRecord, Capture, Content};
mod swap_support;
use swap_support::{build, f32s, shim, tmp};

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// More launches than the shim lets be in flight at once (`MAX_INFLIGHT_LAUNCHES` = 4096).
const STORM: usize = 9000;

fn run(app: &Path, args: &[&str], cap: Option<&Path>) -> (Output, Duration) {
    let mut c = Command::new(app);
    c.args(args)
        .env_remove("OPENCL_LAYERS")
        .env_remove("LD_PRELOAD");
    if let Some(cap) = cap {
        c.env("LD_PRELOAD", shim())
            .env("CLTRAP_DIR", cap)
            .env("CLTRAP_BUFFERS", "full");
    }
    let t = Instant::now();
    let out = c.output().expect("storm runs");
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "storm failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, took)
}

/// `y` (argument 1) after the launch, as floats.
fn y_after(c: &Capture, launch: usize) -> Vec<f32> {
    let ArgRecord::Buffer { after, .. } = &c.launches[launch].args[1] else {
        panic!("argument 1 of launch {launch} is not a buffer");
    };
    assert!(
        !matches!(after, Content::Missing { .. }),
        "launch {launch}: contents missing: {after:?}"
    );
    f32s(c, after)
}

/// Every launch is recorded once, in order, and each one's `y` after is the running sum of
/// the launch indices up to it: exactly what that launch produced.
fn assert_complete(c: &Capture) {
    assert_eq!(c.launches.len(), STORM, "every launch is recorded");
    let seqs: Vec<u64> = c.launches.iter().map(|l| l.seq).collect();
    assert_eq!(seqs, (0..STORM as u64).collect::<Vec<_>>());
    // The running sum as the kernel makes it, one f32 addition per launch (past 2^24 it
    // rounds, so not the closed form).
    let mut sums = Vec::with_capacity(STORM);
    let mut y = 0f32;
    for j in 0..STORM {
        y += j as f32;
        sums.push(y);
    }
    for j in (0..STORM).step_by(97).chain([STORM - 1]) {
        assert_eq!(y_after(c, j), vec![sums[j]; 16], "launch {j}");
    }
}

#[test]
fn a_storm_past_the_launch_cap_is_recorded_completely_and_in_order() {
    let app = build("storm", &[]);
    let n = STORM.to_string();
    let (native, _) = run(&app, &[&n], None);
    let cap = tmp("plain");
    let (shimmed, _) = run(&app, &[&n], Some(&cap));
    assert_eq!(native.stdout, shimmed.stdout, "results must not change");
    let c = Capture::open(&cap).expect("capture reads back");
    assert_complete(&c);
}

#[test]
fn slow_launches_piling_up_past_the_launch_cap_are_recorded_completely_and_in_order() {
    let app = build("storm", &[]);
    let n = STORM.to_string();
    let (native, _) = run(&app, &[&n, "slow"], None);
    let cap = tmp("slow");
    let (shimmed, _) = run(&app, &[&n, "slow"], Some(&cap));
    assert_eq!(native.stdout, shimmed.stdout, "results must not change");
    let c = Capture::open(&cap).expect("capture reads back");
    assert_complete(&c);
}

#[test]
fn a_storm_behind_an_unset_user_event_never_waits_for_the_capture() {
    let app = build("storm", &[]);
    let n = STORM.to_string();
    let (native, native_took) = run(&app, &[&n, "gate"], None);
    let cap = tmp("gate");
    let (shimmed, took) = run(&app, &[&n, "gate"], Some(&cap));
    assert_eq!(native.stdout, shimmed.stdout, "results must not change");
    // Waiting for the launch cap behind the gate would stall 30 s and lose the contents. The
    // bound is relative to the same storm without the shim, measured on the same (possibly
    // loaded) machine: the capture's own cost stays far below 20 s, the stall does not.
    assert!(
        took < native_took + Duration::from_secs(20),
        "took {took:?} under the shim, {native_took:?} without"
    );
    let c = Capture::open(&cap).expect("capture reads back");
    assert_complete(&c);
}
