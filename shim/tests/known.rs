//! The capture skips a launch's pre-read when it already knows the contents (what the
//! previous launch on the same queue left there); these tests prove that every way of
//! writing a memory object between two recorded launches makes the next launch record what it
//! really saw, on the real PoCL runtime.
//!
//! `fixtures/known.c` writes its buffers and images through each write path (write, rect
//! write, copy, rect copy, fill, map + unmap, a kernel left out of the capture, another queue
//! ordered by an event or by the host, a sub-buffer's parent, image write/fill/copy, image to
//! buffer, buffer to image, host writes to `CL_MEM_USE_HOST_PTR` memory) and prints what each
//! recorded launch must have seen.

use cltrap_capture::{ArgRecord, Capture, Content};
mod swap_support;
use swap_support::{build, i32s, shim, tmp};

use std::process::Command;

/// One expectation printed by the fixture: launch `index`'s argument `arg` held `value` in
/// every element right before it ran.
struct Pre {
    index: usize,
    arg: usize,
    value: i32,
}

fn expectations(stdout: &str) -> Vec<Pre> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("pre ")?.split(' ');
            Some(Pre {
                index: w.next()?.parse().ok()?,
                arg: w.next()?.parse().ok()?,
                value: w.next()?.parse().ok()?,
            })
        })
        .collect()
}

#[test]
fn launches_record_what_they_saw_after_every_kind_of_write_in_between() {
    let app = build("known", &[]);
    let native = Command::new(&app)
        .env_remove("OPENCL_LAYERS")
        .env_remove("LD_PRELOAD")
        .output()
        .expect("fixture runs");
    let cap = tmp("known");
    let shimmed = Command::new(&app)
        .env_remove("OPENCL_LAYERS")
        .env("LD_PRELOAD", shim())
        .env("CLTRAP_DIR", &cap)
        .env("CLTRAP_BUFFERS", "full")
        .env("CLTRAP_KERNELS", "bump,peek")
        .output()
        .expect("fixture runs under the shim");
    let out = String::from_utf8_lossy(&shimmed.stdout);
    assert!(
        native.status.success() && shimmed.status.success(),
        "fixture failed: {}{}",
        out,
        String::from_utf8_lossy(&shimmed.stderr)
    );
    assert_eq!(native.stdout, shimmed.stdout, "results must not change");

    let want = expectations(&out);
    assert!(
        want.len() > 20,
        "the fixture printed its expectations: {out}"
    );
    let c = Capture::open(&cap).expect("capture reads back");
    assert_eq!(
        c.launches.len(),
        want.len(),
        "one record per recorded launch"
    );
    for p in &want {
        let launch = &c.launches[p.index];
        let (ArgRecord::Buffer { before, .. } | ArgRecord::Image { before, .. }) =
            &launch.args[p.arg]
        else {
            panic!(
                "launch {} argument {} is not a memory object",
                p.index, p.arg
            );
        };
        assert!(
            !matches!(before, Content::Missing { .. }),
            "launch {} ({}): contents before missing: {before:?}",
            p.index,
            launch.kernel
        );
        let got = i32s(&c, before);
        assert_eq!(
            got,
            vec![p.value; got.len().max(1)],
            "launch {} ({}): contents before",
            p.index,
            launch.kernel
        );
    }
}
