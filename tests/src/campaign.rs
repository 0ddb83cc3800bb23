//! Helpers for campaign tests (`--shard`, `cltrap merge`, `--resume`, `--devices`): reports
//! compared without their timings, journals read back, a campaign stopped partway.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Fields that hold timings (wall or device time), which differ between any two runs.
pub const TIMING_FIELDS: [&str; 6] = [
    "millis",
    "kernel_ns",
    "baseline_kernel_ns",
    "seconds_elapsed",
    "elapsed_ms",
    "wall_ms",
];

/// `v` with every timing field set to 0, recursively.
pub fn without_timings(mut v: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    if TIMING_FIELDS.contains(&k.as_str()) && x.is_number() {
                        *x = Value::from(0);
                    } else {
                        walk(x);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut v);
    v
}

/// The lines of the journal in campaign folder `dir` (header first), parsed.
pub fn journal(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("units.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The devices the units of the journal in `dir` ran on.
pub fn journal_devices(dir: &Path) -> BTreeSet<String> {
    journal(dir)
        .iter()
        .skip(1)
        .filter_map(|l| l["device"].as_str().map(str::to_string))
        .collect()
}

/// Starts `cltrap ARGS` (its output discarded) with `env` added.
pub fn spawn_cltrap(args: &[&str], env: &[(&str, &str)]) -> Child {
    let t = crate::tools();
    let mut cmd = Command::new(&t.cltrap);
    cmd.args(args)
        .envs(env.iter().copied())
        .env_remove("LD_PRELOAD")
        .env_remove("OPENCL_LAYERS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd.spawn().expect("cltrap starts")
}

/// Waits until the journal in `dir` holds `units` finished units (or `child` ended), then
/// sends `signal` to `child`; returns how many units the journal held then.
pub fn stop_after(child: &mut Child, dir: &Path, units: usize, signal: i32) -> usize {
    let start = Instant::now();
    loop {
        let n = journal(dir).len().saturating_sub(1);
        if n >= units || matches!(child.try_wait(), Ok(Some(_))) {
            // SAFETY: signals a child this test started.
            unsafe {
                libc::kill(child.id() as libc::pid_t, signal);
            }
            return n;
        }
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "the campaign finished no unit in 10 minutes"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
