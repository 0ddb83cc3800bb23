//! `cltrap fuzz --captured-ranges` on the real PoCL runtime: with the bounds taken from how
//! the application called a kernel, no generated case leaves them; without, the same
//! campaign does (so the narrowing is what keeps them in).

use cltrap_analyzer::executor::{DeviceSelector, InputArg, Session};
use cltrap_analyzer::fuzz::campaign::Budget;
use cltrap_analyzer::fuzz::{self, Settings};
use cltrap_analyzer::generalise::ScalarBounds;
use cltrap_analyzer::values::Scalar;
use std::time::Duration;

const SOURCE: &str = "__kernel void gate(__global int *out, int n) {\n    size_t g = get_global_id(0);\n    if (n > 5000)\n        out[g] = 1;\n    else if (n < 0)\n        out[g] = 2;\n    else\n        out[g] = 3;\n}\n";

fn settings() -> Settings {
    Settings {
        budget: Budget {
            executions: Some(400),
            // No wall-clock budget: the execution and fruitless counts bound the run, and a loaded machine
            // must not cut the fuzzing or the solver short.
            time: None,
            fruitless: Some(400),
            exhaust: false,
        },
        seed: 7,
        solve: false,
        worker: None,
        watchdog: Duration::from_secs(10),
        progress: false,
        device: DeviceSelector::default(),
        limits: Default::default(),
        full_launches: false,
        check_cases: false,
    }
}

/// Runs the campaign; returns every kept case's `n`.
fn kept_ns(bounds: Option<ScalarBounds>) -> Vec<i32> {
    let session = Session::open(&DeviceSelector::default()).expect("PoCL device");
    let mut t = fuzz::targets_from_source(SOURCE, "", Some("gate"), None, 7, Default::default())
        .expect("target")
        .remove(0);
    t.seeds[0].args[1] = InputArg::Scalar(100i32.to_le_bytes().to_vec());
    t.scalar_bounds = bounds;
    let o = fuzz::run_target(&session, t, &settings()).expect("campaign runs");
    o.campaign
        .cases
        .iter()
        .map(|c| match &c.input.args[1] {
            InputArg::Scalar(b) => i32::from_le_bytes(b[..4].try_into().expect("4 bytes")),
            other => panic!("n is not a scalar: {other:?}"),
        })
        .collect()
}

#[test]
fn captured_ranges_keep_generated_scalars_inside_what_the_application_used() {
    let free = kept_ns(None);
    assert!(
        free.iter().any(|n| !(100..=1000).contains(n)),
        "without bounds the fuzzer leaves [100, 1000]: {free:?}"
    );
    let bounded = kept_ns(Some(ScalarBounds {
        args: vec![(1, Scalar::I32, 100, 1000)],
    }));
    assert!(!bounded.is_empty());
    assert!(
        bounded.iter().all(|n| (100..=1000).contains(n)),
        "every kept case stays in [100, 1000]: {bounded:?}"
    );
}
