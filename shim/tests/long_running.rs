//! A long-running application under the shim, on the real PoCL runtime: 100 000 cycles of
//! creating, launching and releasing programs, kernels, buffers and sub-buffers (with a
//! `clFinish` after every launch), recorded with `--buffers hash`. The shim forgets what the
//! application released (`core/lifetime.rs`), so the process's resident memory at the end is
//! within a few MB of what it was after the first 2 000 cycles; results are unchanged and
//! every launch is recorded. Needs `cc`, the OpenCL headers, ocl-icd and PoCL.

mod swap_support;
use swap_support::{build, shim, tmp};

use std::process::Command;

/// Cycles of the run (an hour-long application, compressed).
const CYCLES: u64 = 100_000;
/// Resident memory the shim may add between cycle 2 000 and the end: room for allocator
/// noise. A shim that kept released objects would add about 80 bytes per cycle here (7-8 MB
/// over the run, on top of what PoCL's handle reuse hides), past the limit.
const MAX_GROWTH_KB: i64 = 4 << 10;

fn field(line: &str, name: &str) -> i64 {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{name}=")))
        .and_then(|v| v.split('.').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name}= in {line:?}"))
}

#[test]
fn memory_stays_flat_over_100000_create_launch_release_cycles() {
    let app = build("lifecycle", &[]);
    let cap = tmp("lifecycle");
    let out = Command::new(&app)
        .arg(CYCLES.to_string())
        .env_remove("OPENCL_LAYERS")
        .env("LD_PRELOAD", shim())
        .env("CLTRAP_DIR", &cap)
        .env("CLTRAP_BUFFERS", "hash")
        .output()
        .expect("lifecycle runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every launch wrote y[63] = (c % 7) * 63: the sum over all cycles, as natively.
    let want: u64 = (0..CYCLES).map(|c| (c % 7) * 63).sum();
    assert_eq!(field(&text, "sum"), want as i64, "{text}");
    let (start, end) = (field(&text, "rss_start_kb"), field(&text, "rss_end_kb"));
    assert!(start > 0 && end > 0, "{text}");
    assert!(
        end - start <= MAX_GROWTH_KB,
        "resident memory grew by {} kB over {CYCLES} cycles: {text}",
        end - start
    );
    // Every launch was recorded (the capture's records are not kept in memory).
    let log = std::fs::read_to_string(cap.join("launches.jsonl")).expect("launch log");
    assert_eq!(log.lines().count() as u64, CYCLES);
    let _ = std::fs::remove_dir_all(&cap);
}
