//! Device-side digests (`--device-digest on`, which forces on PoCL's CPU device what `auto`
//! does on GPUs): the digest the device computes is the host's `dd128` of the same bytes, hash
//! mode records it (and replay compares with it), full mode reads back only contents it has
//! not stored yet and still replays bit for bit, and applications behave as without the shim.

use cltrap_capture::devdigest::dd128;
use cltrap_capture::{Capture, Content, DigestKind};
use cltrap_e2e::*;
use std::path::Path;

fn blob_bytes(_dir: &Path, cap: &Capture, c: &Content) -> Vec<u8> {
    cap.content(c, "test").expect("stored contents read back")
}

#[test]
fn hash_mode_records_the_device_digest_which_is_the_host_dd128_of_the_same_bytes() {
    // The same deterministic application, once with every content stored and read back...
    let (full_dir, full, read) =
        capture_with_stats("sequence", "dd-ref", &["--device-digest", "off"]);
    assert!(counter(&read, "content_reads") > 0);
    assert_eq!(counter(&read, "device_digests"), 0);
    // ... and once with digests computed on the device: nothing but digests crosses the bus.
    let (dir, hashed, dev) = capture_with_stats(
        "sequence",
        "dd-hash",
        &["--buffers", "hash", "--device-digest", "on"],
    );
    assert_eq!(counter(&dev, "content_reads"), 0, "{dev}");
    assert!(counter(&dev, "device_digests") >= 12, "{dev}");
    assert_eq!(counter(&dev, "snapshot_reads"), 0, "{dev}");
    // In its in-order queue a digest and the read of its partials follow each other without
    // events of their own: at most one event per launch (its last read's).
    assert!(
        counter(&dev, "events") <= hashed.launches.len() as u64,
        "{} launches: {dev}",
        hashed.launches.len()
    );
    let (a, b) = (content_sides(&full), content_sides(&hashed));
    assert_eq!(a.len(), b.len());
    assert!(a.len() >= 24);
    for ((seq, arg, side, stored), (_, _, _, digest)) in a.iter().zip(&b) {
        let bytes = blob_bytes(&full_dir, &full, stored);
        match digest {
            Content::Digest {
                hash,
                size,
                algo: DigestKind::Dd128,
            } => {
                assert_eq!(*size, bytes.len() as u64);
                assert_eq!(
                    *hash,
                    dd128(&bytes),
                    "enqueue {seq} argument {arg} {side}: device digest != host dd128"
                );
            }
            other => panic!("enqueue {seq} argument {arg} {side}: {other:?}"),
        }
    }
    // Replay compares a replayed output with the recorded device digest (fill's input is all
    // zeros, restorable from its dd128 digest)...
    let fills: Vec<u64> = launches_of(&hashed, "fill").iter().map(|l| l.id).collect();
    assert_eq!(fills.len(), 4);
    assert_replay_ids_ok(&dir, &fills);
    // ... and really compares: a wrong recorded digest is a mismatch.
    assert_wrong_digest_mismatches(&dir, fills[1], &dd128(b"not the output"));
}

#[test]
fn full_mode_reads_back_only_contents_it_has_not_stored_and_replays_bit_for_bit() {
    // 100 launches over one unchanged 1 MiB input and a small output.
    let (dir, cap, dev) = capture_with_stats("dedup", "dd-full", &["--device-digest", "on"]);
    assert_eq!(cap.launches.len(), 100);
    assert_full_contents(&cap);
    assert_eq!(counter(&dev, "content_reads"), 0, "{dev}");
    assert!(counter(&dev, "device_digests") >= 100, "{dev}");
    // The input once, the output once (and its zeros before the first launch, at most).
    assert!(counter(&dev, "snapshot_reads") <= 3, "{dev}");
    // The first launch's new contents were read on a thread of their own while the writer
    // stored the first of them (its input and its output before and after: one batch).
    assert!(counter(&dev, "snapshots_read_ahead") >= 2, "{dev}");
    assert!(
        counter(&dev, "snapshot_read_bytes") < (1 << 20) + 4096,
        "{dev}"
    );
    assert_replays_ok(&dir, 100);
    // The same blobs as a capture that read every content back.
    let (_ref_dir, reference, _) =
        capture_with_stats("dedup", "dd-full-ref", &["--device-digest", "off"]);
    // The output buffer is never initialised: what it held before the first launch is
    // whatever the allocator left.
    assert_same_contents("dedup", &reference, &cap, &[(0, 1)]);
}

#[test]
fn a_snapshot_larger_than_mapped_memory_is_read_through_stages_into_the_same_bytes() {
    // 72 MiB: more than an engine's mapped memory (64 MiB), read in 16 MiB pieces (the last
    // one partial) through two stages; the same contents as a capture that read the
    // application's buffer back without snapshots, and the launches replay.
    let args = ["2", "72"];
    let flags = ["--derive-after-mb", "4096", "--device-digest"];
    let exe = fixture("slices");
    let native = run_native(&exe, &args).expect_success();
    let mut caps = Vec::new();
    for (label, how) in [("dd-staged", "on"), ("dd-staged-ref", "off")] {
        let dir = fresh_capture_dir(label);
        let mut f = flags.to_vec();
        f.push(how);
        let (captured, counters) = run_captured_with_stats(&dir, &f, &exe, &args);
        captured.assert_no_panic();
        assert_same_behaviour(&native, &captured);
        let mut cap = open_capture(&dir);
        cap.launches.sort_by_key(|l| l.seq);
        assert_eq!(cap.launches.len(), 2);
        assert_full_contents(&cap);
        caps.push((dir, cap, counters));
    }
    let dev = &caps[0].2;
    assert!(counter(dev, "snapshot_reads_staged") >= 1, "{dev}");
    assert_eq!(counter(&caps[1].2, "snapshot_reads_staged"), 0);
    let (a, b) = (content_sides(&caps[0].1), content_sides(&caps[1].1));
    assert_eq!((a.len(), b.len()), (4, 4));
    for ((seq, arg, side, x), (_, _, _, y)) in a.iter().zip(&b) {
        assert_eq!(x, y, "enqueue {seq} argument {arg} {side}");
    }
    assert_replays_ok(&caps[0].0, 2);
}

#[test]
fn queues_events_sub_buffers_and_host_pointers_behave_and_replay_with_device_digests() {
    // Out-of-order queues with event chains, profiling, callbacks (queues); user events
    // (gated); sub-buffers, aliasing, CL_MEM_USE_HOST_PTR with map/unmap (memory); several
    // threads (threads): the application's results are unchanged and every launch replays.
    for name in ["queues", "gated", "memory", "threads"] {
        let (_dir, cap) = round_trip(name, &[], &["--device-digest", "on"]);
        assert_full_contents(&cap);
    }
}

#[test]
fn images_stay_on_the_read_path() {
    let (dir, cap, dev) = capture_with_stats("images", "dd-images", &["--device-digest", "on"]);
    assert!(counter(&dev, "content_reads") > 0, "{dev}");
    assert_full_contents(&cap);
    assert_replays_ok(&dir, cap.launches.len());
}

#[test]
fn an_idle_digest_engine_gives_back_its_snapshots_and_is_used_again() {
    // Pauses of 4 s between launches over a 1 MiB buffer: the writer releases the idle
    // engine's pooled snapshot buffers, and the next launch digests with the same engine,
    // while another thread keeps launching on its own queue.
    let (dir, cap, dev) = capture_with_stats("idle", "dd-idle", &["--device-digest", "on"]);
    assert_eq!(cap.launches.len(), 53);
    assert_eq!(counter(&dev, "engines_built"), 1, "{dev}");
    assert!(counter(&dev, "snapshots_released") >= 1, "{dev}");
    assert_eq!(counter(&dev, "content_reads"), 0, "{dev}");
    assert_full_contents(&cap);
    assert_replays_ok(&dir, 53);
}

/// Cycles of the context fixture in the transparency test (each builds two programs on PoCL).
const CONTEXT_CYCLES: u64 = 30;

#[test]
fn contexts_the_application_releases_are_destroyed_under_the_capture() {
    // Every cycle of `contexts` creates a context with a destructor callback, launches once
    // over a buffer digested on the device and releases everything; natively every callback
    // fires. The shim gives its digest engine back with the context: an engine kept past it
    // would keep every context alive, no callback would fire under the capture, and the
    // fixture would fail.
    let exe = fixture("contexts");
    let cycles = CONTEXT_CYCLES.to_string();
    let args = [cycles.as_str()];
    let native = run_native(&exe, &args).expect_success();
    assert!(
        native
            .stdout_text()
            .contains(&format!("destroyed={CONTEXT_CYCLES} ")),
        "{}",
        native.describe()
    );
    for mode in ["full", "hash"] {
        let dir = fresh_capture_dir(&format!("dd-contexts-{mode}"));
        let flags = ["--buffers", mode, "--device-digest", "on"];
        let (captured, dev) = run_captured_with_stats(&dir, &flags, &exe, &args);
        captured.assert_no_panic();
        assert_same_behaviour(&native, &captured);
        assert_quiet_capture(&native, &captured);
        assert_eq!(counter(&dev, "engines_built"), CONTEXT_CYCLES, "{dev}");
        assert_eq!(counter(&dev, "engines_released"), CONTEXT_CYCLES, "{dev}");
        assert_eq!(counter(&dev, "content_reads"), 0, "{dev}");
        let cap = open_capture(&dir);
        assert_eq!(cap.launches.len() as u64, CONTEXT_CYCLES);
        if mode == "full" {
            assert_full_contents(&cap);
            assert_replays_ok(&dir, CONTEXT_CYCLES as usize);
        }
    }
    // With a 1 MiB buffer released before the `clFinish` that ends its launch, the capture
    // lands the launch on the application's thread after the release and reads its new
    // contents into mapped memory of the engine, in the context: not kept as the buffer's
    // version (the buffer is gone), it must not keep the context alive.
    let fin_args = [cycles.as_str(), "finish"];
    let native_fin = run_native(&exe, &fin_args).expect_success();
    let dir = fresh_capture_dir("dd-contexts-finish");
    let flags = ["--buffers", "full", "--device-digest", "on"];
    let (captured, dev) = run_captured_with_stats(&dir, &flags, &exe, &fin_args);
    captured.assert_no_panic();
    assert_same_behaviour(&native_fin, &captured);
    assert_eq!(counter(&dev, "engines_released"), CONTEXT_CYCLES, "{dev}");
    // Each cycle's new contents, read by its `clFinish` (the application's thread), land in
    // mapped memory; the writer thread may have landed a launch first, never all of them.
    assert!(counter(&dev, "finish_written") > 0, "{dev}");
    assert!(counter(&dev, "snapshot_reads_mapped") > 0, "{dev}");
    let cap = open_capture(&dir);
    assert_full_contents(&cap);
    assert_replays_ok(&dir, CONTEXT_CYCLES as usize);
    // The loader-layer door counts the same contexts.
    let dir = fresh_capture_dir("dd-contexts-layer");
    let layered = run_with_env(
        &exe,
        &args,
        &[
            ("OPENCL_LAYERS", tools().shim.as_os_str()),
            ("CLTRAP_DIR", dir.as_os_str()),
            ("CLTRAP_DEVICE_DIGEST", std::ffi::OsStr::new("on")),
        ],
        None,
    );
    layered.assert_no_panic();
    assert_same_behaviour(&native, &layered);
    assert_eq!(open_capture(&dir).launches.len() as u64, CONTEXT_CYCLES);
}

/// Context cycles of the memory test, and what its resident memory may grow by between
/// cycle 20 and the end: what a native run shows (a few hundred kB: BENCHMARKS.md, "Memory of
/// long-running applications"). A context kept alive with the digest engine's objects would
/// add about 1.1 MB of resident memory per cycle on PoCL, far past the limit.
const MEMORY_CYCLES: u64 = 200;
const MAX_GROWTH_KB: i64 = 6 << 10;

#[test]
fn memory_stays_flat_while_the_application_creates_and_releases_contexts() {
    let exe = fixture("contexts");
    let cycles = MEMORY_CYCLES.to_string();
    let dir = fresh_capture_dir("dd-contexts-rss");
    let captured = run_captured(
        &dir,
        &["--buffers", "hash", "--device-digest", "on"],
        &exe,
        &[cycles.as_str(), "rss"],
    );
    captured.assert_no_panic();
    let text = captured.stdout_text();
    assert!(captured.success(), "{}", captured.describe());
    let field = |name: &str| -> i64 {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.split('.').next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {name}= in {text:?}"))
    };
    assert_eq!(field("destroyed"), MEMORY_CYCLES as i64, "{text}");
    let (start, end) = (field("rss_start_kb"), field("rss_end_kb"));
    assert!(start > 0 && end > 0, "{text}");
    assert!(
        end - start <= MAX_GROWTH_KB,
        "resident memory grew by {} kB over {MEMORY_CYCLES} context cycles: {text}",
        end - start
    );
    assert_eq!(open_capture(&dir).launches.len() as u64, MEMORY_CYCLES);
}

#[test]
fn a_digest_program_that_does_not_build_leaves_launches_on_the_read_path() {
    // `--test-digest-build fail` adds an `#error` line to the digest program: PoCL's real
    // compiler rejects it, the shim says once that device-side digests are not available,
    // and every buffer is read back instead; the capture is as complete and replays.
    let exe = fixture("sequence");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let dir = fresh_capture_dir("dd-build-fails");
    let (captured, dev) = run_captured_with_stats(
        &dir,
        &["--device-digest", "on", "--test-digest-build", "fail"],
        &exe,
        &[] as &[&str],
    );
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    let said: Vec<&str> = cltrap_lines(&captured.stderr)
        .into_iter()
        .filter(|l| l.contains("device-side digests are not available"))
        .collect();
    assert_eq!(said.len(), 1, "{}", captured.describe());
    assert!(said[0].contains("did not build"), "{}", said[0]);
    assert_eq!(counter(&dev, "engines_built"), 0, "{dev}");
    assert_eq!(counter(&dev, "device_digests"), 0, "{dev}");
    assert!(counter(&dev, "content_reads") >= 12, "{dev}");
    let mut cap = open_capture(&dir);
    cap.launches.sort_by_key(|l| l.seq);
    assert_full_contents(&cap);
    assert_replays_ok(&dir, cap.launches.len());
}

#[test]
fn a_launch_from_an_event_callback_reads_back_and_the_engine_is_built_on_the_main_thread() {
    // The first launch of `callback_launch` is enqueued from a completion callback, where
    // building a program is undefined: that launch's buffer is read back (no engine is built
    // inside the callback), and the launches that follow on the main thread build the engine
    // and digest on the device.
    // (`--prepare at-launch`: an engine made ahead of the launches would be there already.)
    let (dir, cap, dev) = capture_with_stats(
        "callback_launch",
        "dd-callback",
        &["--device-digest", "on", "--prepare", "at-launch"],
    );
    assert_eq!(cap.launches.len(), 4);
    assert_eq!(counter(&dev, "content_reads"), 2, "{dev}");
    assert_eq!(counter(&dev, "engines_built"), 1, "{dev}");
    assert!(counter(&dev, "device_digests") >= 3, "{dev}");
    assert_full_contents(&cap);
    assert_replays_ok(&dir, 4);
}

#[test]
fn the_digest_engine_is_made_ahead_of_the_launches_and_the_application_behaves_the_same() {
    // `prepared` makes its queue and a 1 MiB buffer, then launches four times over it
    // (`launch`) or exits at once without releasing anything (`exit`). Under `--prepare ahead`
    // (the default) the buffer's creation builds the digest engine: ahead of the launches, even
    // when the application never launches, and never twice. Under `--prepare at-launch` the
    // first launch builds it (and a process that never launches makes nothing: no writer, no
    // counters file). Either way the application's output, exit status and stderr are its
    // native ones, and the launches replay.
    let exe = fixture("prepared");
    for (mode, prepare, built, prepared) in [
        ("exit", "ahead", 1, 1),
        ("exit", "at-launch", 0, 0),
        ("launch", "ahead", 1, 1),
        ("launch", "at-launch", 1, 0),
    ] {
        let native = run_native(&exe, &[mode]).expect_success();
        let dir = fresh_capture_dir(&format!("dd-prepared-{mode}-{prepare}"));
        let flags = [
            "--buffers",
            "full",
            "--device-digest",
            "on",
            "--prepare",
            prepare,
        ];
        let (captured, dev) = run_captured_with_stats(&dir, &flags, &exe, &[mode]);
        captured.assert_no_panic();
        assert_same_behaviour(&native, &captured);
        assert_quiet_capture(&native, &captured);
        let what = format!("{mode}, --prepare {prepare}: {dev}");
        if (mode, prepare) == ("exit", "at-launch") {
            assert!(dev.is_null(), "{what}");
            continue;
        }
        assert_eq!(counter(&dev, "engines_built"), built, "{what}");
        assert_eq!(counter(&dev, "engines_prepared"), prepared, "{what}");
        if mode == "launch" {
            assert_eq!(counter(&dev, "content_reads"), 0, "{what}");
            let cap = open_capture(&dir);
            assert_eq!(cap.launches.len(), 4, "{what}");
            assert_full_contents(&cap);
            assert_replays_ok(&dir, 4);
        }
    }
}
