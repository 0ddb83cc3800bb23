//! A replay verifies outputs recorded as `dd128` digests on the device
//! (`CLTRAP_REPLAY_DEVICE_DIGEST=on`, which forces on PoCL's CPU device what `auto` does on
//! GPUs): only the digest's partials are read back, the verdicts are the ones of a replay
//! that reads every output back (`off`), a differing output is still reported with its
//! details, and outputs verified on the device stay bound as the next launch's inputs.
//!
//! The capture: a Gaussian elimination (Fan1/Fan2 per pivot over m, a, b, every launch
//! reading what the previous one left) under a 1 MB budget with digests computed on the
//! device, so past the budget its outputs are `dd128` digests and its inputs derived.

use cltrap_capture::devdigest::dd128;
use cltrap_capture::{ArgRecord, Capture, Content, DigestKind};
use cltrap_e2e::*;
use std::path::Path;

/// Matrix order: 2 * 95 = 190 launches over a 36 KiB matrix.
const N: &str = "96";
const LAUNCHES: usize = 190;

/// Captures `gauss N` under a 1 MB budget with device digests; checks that most outputs are
/// `dd128` digests.
fn capture(label: &str) -> (TestDir, Capture) {
    let exe = fixture("gauss");
    let native = run_native(&exe, &[N]).expect_success();
    let dir = fresh_capture_dir(label);
    let captured = run_captured(
        &dir,
        &["--max-mb", "1", "--device-digest", "on"],
        &exe,
        &[N],
    );
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    let cap = open_capture(&dir);
    assert_eq!(cap.launches.len(), LAUNCHES);
    let dd128_outputs = cap
        .launches
        .iter()
        .flat_map(|l| &l.args)
        .filter(|a| {
            matches!(
                contents(a),
                Some((
                    _,
                    Content::Digest {
                        algo: DigestKind::Dd128,
                        ..
                    }
                ))
            )
        })
        .count();
    assert!(
        dd128_outputs >= 3 * LAUNCHES / 2,
        "only {dd128_outputs} outputs are dd128 digests"
    );
    (dir, cap)
}

/// What `cltrap replay DIR ARGS --timing` with `CLTRAP_REPLAY_DEVICE_DIGEST=mode` said.
struct Replay {
    out: Outcome,
    /// The per-launch lines and the summary.
    stdout: String,
    bound: u64,
    on_device: u64,
    read_back_bytes: f64,
    /// Times the replay waited for the device, the launches it replayed, and the waits
    /// running them (the others restored inputs).
    waits: (u64, u64, u64),
}

fn replay(dir: &Path, mode: &str, ids: &[String], env: &[(&str, &str)]) -> Replay {
    let t = tools();
    let mut args = vec![
        "replay".to_string(),
        dir.display().to_string(),
        "--timing".into(),
    ];
    args.extend(ids.iter().cloned());
    let mut vars: Vec<(&str, &std::ffi::OsStr)> = vec![
        ("CLTRAP_SHIM", t.shim.as_os_str()),
        ("CLTRAP_REPLAY_DEVICE_DIGEST", std::ffi::OsStr::new(mode)),
    ];
    vars.extend(env.iter().map(|(k, v)| (*k, std::ffi::OsStr::new(*v))));
    let out = run_with_env(&t.cltrap, &args, &vars, None);
    out.assert_no_panic();
    let line = replay_timing_line(&out);
    let count = |word: &str| count_before(&line, word);
    let read_back_bytes = line
        .split(" read back (")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|mb| mb.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no read-back megabytes in {line}"));
    let waits = replay_waits_line(&out);
    Replay {
        waits: (
            count_before(&waits, " for "),
            count_before(&waits, " launch(es)"),
            count_before(&waits, " running them"),
        ),
        stdout: out.stdout_text(),
        bound: count(" bound on the device"),
        on_device: count(" verified on the device"),
        read_back_bytes,
        out,
    }
}

/// The replay exited 0 with all `n` launches matched.
fn assert_all_matched(r: &Replay, n: usize) {
    assert_eq!(r.out.code, Some(0), "{}", r.out.describe());
    assert!(
        r.stdout.contains(&format!("{n} matched, 0 mismatched")),
        "{}",
        r.out.describe()
    );
}

/// The ids `from..to` as words.
fn ids(range: impl Iterator<Item = usize>) -> Vec<String> {
    range.map(|i| i.to_string()).collect()
}

#[test]
fn dd128_outputs_are_verified_on_the_device_and_bound_as_the_next_inputs() {
    let (dir, _cap) = capture("dv-order");
    let host = replay(&dir, "off", &[], &[]);
    let device = replay(&dir, "on", &[], &[]);
    for r in [&host, &device] {
        assert_all_matched(r, LAUNCHES);
    }
    assert_eq!(host.stdout, device.stdout, "the same verdicts");
    assert_eq!(host.on_device, 0);
    assert!(
        device.on_device >= 3 * LAUNCHES as u64 / 2,
        "{} outputs verified on the device\n{}",
        device.on_device,
        device.out.describe()
    );
    // Outputs verified on the device are bound as the next launch's inputs as read-back
    // ones are: every launch binds its three buffers but the first and the checkpoints
    // (their inputs are stored, named by another digest).
    assert!(
        host.bound >= 3 * (LAUNCHES as u64 - 4),
        "{}",
        host.out.describe()
    );
    assert_eq!(device.bound, host.bound, "{}", device.out.describe());
    assert!(
        device.read_back_bytes * 4.0 < host.read_back_bytes,
        "{} MB read back on the device path, {} MB reading everything back",
        device.read_back_bytes,
        host.read_back_bytes
    );
    // `auto` leaves a CPU device reading back: the host digest is as cheap as the device's.
    let auto = replay(&dir, "auto", &[], &[]);
    assert_eq!(auto.on_device, 0, "{}", auto.out.describe());
    assert_eq!(auto.stdout, host.stdout);
}

/// Each launch waits on the device once: its kernel, the reads of its outputs and the
/// digests of those verified on the device (with the read of their partials) go to the
/// device in one trip, so verifying on the device adds no wait to a launch.
#[test]
fn a_launch_verified_on_the_device_waits_on_it_once() {
    let (dir, _cap) = capture("dv-waits");
    let host = replay(&dir, "off", &[], &[]);
    let device = replay(&dir, "on", &[], &[]);
    for r in [&host, &device] {
        assert_eq!(r.out.code, Some(0), "{}", r.out.describe());
    }
    assert_eq!(host.stdout, device.stdout, "the same verdicts");
    assert!(
        device.on_device >= 3 * LAUNCHES as u64 / 2,
        "{}",
        device.out.describe()
    );
    // One wait per launch run, whether its outputs are verified on the device or read back.
    let n = LAUNCHES as u64;
    assert_eq!(host.waits, (n, n, n), "{}", host.out.describe());
    let (all, launches, running) = device.waits;
    assert_eq!((launches, running), (n, n), "{}", device.out.describe());
    // The others read back, once per launch that needs it, the outputs kept on the device
    // that a later launch derives its input from (where a launch does not bind them: the
    // budget's checkpoints), all of a launch's in one wait.
    assert!(all - running <= 3, "{}", device.out.describe());
}

#[test]
fn derived_inputs_replay_bit_exact_in_any_order_with_device_verification() {
    let (dir, cap) = capture("dv-derived");
    let last = cap.launches.last().expect("launches").id as usize;
    // The last launch alone (its chain re-executed), the second half last first, and every
    // other launch: the device keeps no output the host later needs to derive from.
    for selection in [
        ids(std::iter::once(last)),
        ids((LAUNCHES / 2..LAUNCHES).rev()),
        ids((0..LAUNCHES).step_by(2)),
    ] {
        let host = replay(&dir, "off", &selection, &[]);
        let device = replay(&dir, "on", &selection, &[]);
        assert_eq!(device.out.code, Some(0), "{}", device.out.describe());
        assert!(
            device
                .stdout
                .contains(&format!("{} matched, 0 mismatched", selection.len())),
            "{}",
            device.out.describe()
        );
        // Same verdicts and the same count of launches re-executed to derive inputs.
        assert_eq!(host.stdout, device.stdout);
        assert!(device.on_device > 0, "{}", device.out.describe());
    }
}

#[test]
fn a_differing_output_is_reported_with_its_details_as_when_read_back() {
    let (dir, cap) = capture("dv-mismatch");
    // A wrong recorded digest of launch 150's `a` (past the budget: a dd128)...
    let Some((_, Content::Digest { algo, .. })) = contents(&cap.launches[150].args[1]) else {
        panic!(
            "launch 150's `a` is not a digest: {:?}",
            cap.launches[150].args[1]
        )
    };
    assert_eq!(*algo, DigestKind::Dd128);
    rewrite_launch(&dir, 150, |l| {
        if let ArgRecord::Buffer {
            after: Content::Digest { hash, .. },
            ..
        } = &mut l.args[1]
        {
            *hash = dd128(b"not the output");
        }
    });
    // ... and launch 120 run with another `n` (argument 3 of Fan1 and Fan2).
    assert!(matches!(
        cap.launches[120].args[3],
        ArgRecord::Scalar { .. }
    ));
    rewrite_launch(&dir, 120, |l| {
        if let ArgRecord::Scalar { bytes, .. } = &mut l.args[3] {
            *bytes = "5f000000".into();
        }
    });
    let host = replay(&dir, "off", &[], &[]);
    let device = replay(&dir, "on", &[], &[]);
    assert_eq!(device.out.code, Some(1), "{}", device.out.describe());
    let line = |r: &Replay, id: u64| {
        r.stdout
            .lines()
            .find(|l| l.starts_with(&format!("launch {id} ")))
            .unwrap_or_else(|| panic!("no line for launch {id}\n{}", r.out.describe()))
            .to_string()
    };
    for id in [120, 150] {
        assert!(
            line(&device, id).contains("MISMATCH"),
            "{}",
            line(&device, id)
        );
        assert!(
            line(&device, id).contains("digest"),
            "{}",
            line(&device, id)
        );
    }
    assert!(
        line(&device, 150).contains(&format!("expected {}", &dd128(b"not the output")[..16])),
        "{}",
        line(&device, 150)
    );
    // Every line and the summary as when every output is read back.
    assert_eq!(host.stdout, device.stdout);
    assert!(device.on_device > 0, "{}", device.out.describe());
}

#[test]
fn a_device_where_the_digest_does_not_build_reads_back_and_says_so_once() {
    let (dir, _cap) = capture("dv-fallback");
    let r = replay(
        &dir,
        "on",
        &["--in-process".to_string()],
        &[("CLTRAP_TEST_DIGEST_BUILD", "fail")],
    );
    assert_eq!(r.out.code, Some(0), "{}", r.out.describe());
    assert!(r.stdout.contains(&format!("{LAUNCHES} matched")));
    assert_eq!(r.on_device, 0);
    let said = cltrap_lines(&r.out.stderr)
        .into_iter()
        .filter(|l| l.contains("cannot be verified on the device"))
        .count();
    assert_eq!(said, 1, "{}", r.out.describe());
    // A misspelt mode is refused in one sentence.
    let bad = replay_refused(&dir, "sometimes");
    assert_eq!(bad.code, Some(2), "{}", bad.describe());
    assert!(
        bad.stderr.contains("CLTRAP_REPLAY_DEVICE_DIGEST")
            && bad.stderr.contains("auto, on or off"),
        "{}",
        bad.describe()
    );
}

/// `cltrap replay DIR` with a mode that is not one.
fn replay_refused(dir: &Path, mode: &str) -> Outcome {
    let t = tools();
    let out = run_with_env(
        &t.cltrap,
        &["replay".as_ref(), dir.as_os_str()],
        &[
            ("CLTRAP_SHIM", t.shim.as_os_str()),
            ("CLTRAP_REPLAY_DEVICE_DIGEST", std::ffi::OsStr::new(mode)),
        ],
        None,
    );
    out.assert_no_panic();
    out
}

/// An output recorded as a stored blob (buffer mode `full`) that a replay found equal to that
/// blob on the host teaches the replay the blob's `dd128` digest, computed on the device in
/// the same trip: the next outputs recorded as that blob are verified on the device instead of
/// read back, with the verdicts of a replay that reads every output back. The capture: 20
/// launches each writing the same sums into a 1 MiB buffer, with `clFinish` after each.
#[test]
fn repeated_stored_outputs_are_verified_on_the_device_once_learned() {
    const REWRITES: usize = 20;
    let exe = fixture("rewrites");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let dir = fresh_capture_dir("dv-blob");
    let captured = run_captured(&dir, &["--buffers", "full"], &exe, &[] as &[&str]);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    let cap = open_capture(&dir);
    assert_eq!(cap.launches.len(), REWRITES);
    let sums: std::collections::HashSet<&str> = cap
        .launches
        .iter()
        .filter_map(|l| match &l.args[2] {
            ArgRecord::Buffer {
                after: Content::Blob { hash, .. },
                ..
            } => Some(hash.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(sums.len(), 1, "c after every launch is one stored blob");
    let host = replay(&dir, "off", &[], &[]);
    let device = replay(&dir, "on", &[], &[]);
    for r in [&host, &device] {
        assert_all_matched(r, REWRITES);
    }
    assert_eq!(host.stdout, device.stdout, "the same verdicts");
    assert_eq!(host.on_device, 0);
    // The first launch's outputs are read back and teach their digests; the others are
    // verified on the device: c, and a and b, whose contents the capture records after each
    // launch too.
    assert_eq!(
        device.on_device,
        3 * (REWRITES as u64 - 1),
        "{}",
        device.out.describe()
    );
    assert!(
        device.read_back_bytes * 4.0 < host.read_back_bytes,
        "{} MB read back on the device path, {} MB reading everything back",
        device.read_back_bytes,
        host.read_back_bytes
    );
}

/// A later output that differs from the stored blob its record names is a mismatch when that
/// blob's digest was learned, with the details of a replay that reads every output back: the
/// capture of `rewrites` with launch 10's record naming `a`'s contents (another stored blob of
/// the same size, learned at launch 0) as c's contents after it.
#[test]
fn an_output_that_differs_from_a_learned_blob_is_a_mismatch() {
    let exe = fixture("rewrites");
    let dir = fresh_capture_dir("dv-blob-bad");
    let captured = run_captured(&dir, &["--buffers", "full"], &exe, &[] as &[&str]);
    captured.assert_no_panic();
    let cap = open_capture(&dir);
    let ArgRecord::Buffer {
        after: Content::Blob { hash: a, .. },
        ..
    } = &cap.launches[0].args[0]
    else {
        panic!("a's contents after launch 0 are stored");
    };
    let log = dir.join(cltrap_capture::LAUNCHES_FILE);
    let text = std::fs::read_to_string(&log).expect("launch log");
    let forged: Vec<String> = text
        .lines()
        .map(|line| match line.starts_with("{\"id\":10,") {
            true => format!(
                "{{\"id\":10,\"base\":9,\"patch\":{{\"seq\":10,\"args\":{{\"2\":{{\"after\":{{\"hash\":\"{a}\"}}}}}}}}}}"
            ),
            false => line.to_string(),
        })
        .collect();
    assert_ne!(
        forged.join("\n") + "\n",
        text,
        "launch 10's line is a delta of launch 9"
    );
    std::fs::write(&log, forged.join("\n") + "\n").expect("forged log");
    let host = replay(&dir, "off", &[], &[]);
    let device = replay(&dir, "on", &[], &[]);
    // Launches 11 to 19 are recorded as deltas of launch 10: they name `a` too.
    for r in [&host, &device] {
        assert!(
            r.stdout.contains("10 matched, 10 mismatched"),
            "{}",
            r.out.describe()
        );
    }
    assert_eq!(host.stdout, device.stdout, "the same verdicts and details");
    assert!(device.on_device > 0, "{}", device.out.describe());
}
