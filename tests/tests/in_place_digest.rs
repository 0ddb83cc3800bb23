//! Digests computed in place on a CPU device: a native kernel in the application's queue
//! hashes a buffer where it is instead of the capture reading it back (`--device-digest
//! host` for every buffer; what `auto` does on a CPU device for buffers of 64 KiB or more),
//! copying only new contents a launch stores. The digests are those a read back gives, the
//! application behaves as without the shim (in-order and out-of-order queues, user events,
//! sub-buffers, host pointers, threads), and replay compares with them. Sub-buffers and the
//! buffers they are cut from are read back (PoCL hands a native kernel the wrong address for
//! them: the test of `memory` saw it).

use cltrap_capture::{Content, DigestKind};
use cltrap_e2e::*;

/// [`assert_same_contents`], every content of `cap` a blake3 digest.
fn assert_same_digests(
    name: &str,
    reference: &cltrap_capture::Capture,
    cap: &cltrap_capture::Capture,
    uninitialised: &[(u64, u32)],
) {
    assert_same_contents(name, reference, cap, uninitialised);
    for (seq, arg, side, y) in content_sides(cap) {
        assert!(
            matches!(
                y,
                Content::Digest {
                    algo: DigestKind::Blake3,
                    ..
                }
            ),
            "{name}: enqueue {seq} argument {arg} {side}: {y:?}"
        );
    }
}

#[test]
fn hash_mode_digests_in_place_what_a_read_back_digests_and_replay_compares_them() {
    let read_back = ["--buffers", "hash", "--device-digest", "off"];
    let (_ref_dir, reference, read) = capture_with_stats("sequence", "ip-ref", &read_back);
    assert!(counter(&read, "content_reads") > 0, "{read}");
    assert_eq!(counter(&read, "digests_in_place"), 0, "{read}");
    let in_place = ["--buffers", "hash", "--device-digest", "host"];
    let (dir, cap, st) = capture_with_stats("sequence", "ip-hash", &in_place);
    // Nothing is read back: every side the launches read is hashed where it is.
    assert_eq!(counter(&st, "content_reads"), 0, "{st}");
    assert!(counter(&st, "digests_in_place") >= 12, "{st}");
    assert!(content_sides(&cap).len() >= 24);
    assert_same_digests("sequence", &reference, &cap, &[]);
    // `fill`'s only buffer is cleared before each launch (restorable from its digest): its
    // output is compared with the digest computed in place...
    let fills: Vec<u64> = launches_of(&cap, "fill").iter().map(|l| l.id).collect();
    assert_eq!(fills.len(), 4);
    assert_replay_ids_ok(&dir, &fills);
    // ... and really compared: a wrong recorded digest is a mismatch.
    let wrong = cltrap_capture::writer::digest(b"not the output");
    let out = assert_wrong_digest_mismatches(&dir, fills[1], &wrong);
    assert!(
        out.stdout_text().contains("1 mismatched"),
        "{}",
        out.describe()
    );
}

#[test]
fn queues_events_sub_buffers_host_pointers_and_threads_behave_with_digests_in_place() {
    // Out-of-order queues with event chains, profiling and callbacks (queues); user events
    // (gated); sub-buffers, aliasing, CL_MEM_USE_HOST_PTR with map/unmap (memory): the
    // application's results are unchanged and the digests are those a read back gives.
    // Buffers none of them initialises before their first kernel: (enqueue, argument); and
    // whether every side is digested in place (`memory`'s sub-buffers, and the buffers they
    // are cut from, are read back).
    let cases: [(&str, &[(u64, u32)], bool); 3] = [
        ("queues", &[(0, 0), (1, 0), (2, 2)], true),
        ("gated", &[(0, 0), (2, 0)], true),
        ("memory", &[(0, 1), (1, 2), (4, 2)], false),
    ];
    for (name, uninitialised, all_in_place) in cases {
        let off = ["--buffers", "hash", "--device-digest", "off"];
        let (_r, reference, _) = capture_with_stats(name, &format!("ip-{name}-ref"), &off);
        let host = ["--buffers", "hash", "--device-digest", "host"];
        let (_d, cap, st) = capture_with_stats(name, &format!("ip-{name}"), &host);
        assert!(counter(&st, "digests_in_place") > 0, "{name}: {st}");
        assert_eq!(
            counter(&st, "content_reads") == 0,
            all_in_place,
            "{name}: {st}"
        );
        assert_same_digests(name, &reference, &cap, uninitialised);
    }
    // Several threads launching at once (their order differs between runs): every side of
    // every launch has its digest.
    let host = ["--buffers", "hash", "--device-digest", "host"];
    let (_d, cap, st) = capture_with_stats("threads", "ip-threads", &host);
    assert!(counter(&st, "digests_in_place") > 0, "{st}");
    for (seq, arg, side, c) in content_sides(&cap) {
        assert!(
            matches!(c, Content::Digest { .. } | Content::Blob { .. }),
            "enqueue {seq} argument {arg} {side}: {c:?}"
        );
    }
}

#[test]
fn auto_digests_large_buffers_in_place_on_a_cpu_device_and_reads_small_ones() {
    // `dedup`: a 1 MiB input the kernel only reads and a 256-byte output, 100 launches.
    let (_dir, cap, st) = capture_with_stats("dedup", "ip-auto", &["--buffers", "hash"]);
    assert_eq!(cap.launches.len(), 100);
    // The input once (the later launches know it is unchanged), in place; the small output
    // read back at every launch.
    assert!(counter(&st, "digests_in_place") >= 1, "{st}");
    assert_eq!(
        counter(&st, "digested_in_place_bytes") % (1 << 20),
        0,
        "{st}"
    );
    assert!(counter(&st, "content_reads") >= 100, "{st}");
    assert!(counter(&st, "content_read_bytes") < 100 * 1024, "{st}");
    let first = &cap.launches[0];
    let input = contents(&first.args[0]).expect("the input's contents").0;
    assert!(
        matches!(input, Content::Digest { size, .. } if *size == 1 << 20),
        "{input:?}"
    );
}

#[test]
fn full_mode_copies_in_place_only_contents_the_capture_does_not_hold_and_replays_bit_for_bit() {
    // `dedup`: 100 launches over one unchanged 1 MiB input, whose output is the same each time.
    let host = ["--device-digest", "host"];
    let (dir, cap, st) = capture_with_stats("dedup", "ip-full", &host);
    assert_eq!(cap.launches.len(), 100);
    assert_full_contents(&cap);
    assert_eq!(counter(&st, "content_reads"), 0, "{st}");
    assert!(counter(&st, "digests_in_place") >= 100, "{st}");
    // The input once, the output once, and what the output held before the first launch: a
    // content left again by a launch in flight shares the first one's copy (or, once stored,
    // is not copied). A few more where a launch hashed it between its copy's landing and its
    // store; without the sharing, every one of the 100 outputs was copied.
    assert!(counter(&st, "copied_in_place") <= 10, "{st}");
    assert_replays_ok(&dir, 100);
    // The same blobs as a capture that read every content back.
    let off = ["--device-digest", "off"];
    let (_r, reference, _) = capture_with_stats("dedup", "ip-full-ref", &off);
    // The output buffer is never initialised: what it held before the first launch is
    // whatever the allocator left.
    assert_same_contents("dedup", &reference, &cap, &[(0, 1)]);
    // Out-of-order queues, user events, sub-buffers, host pointers and threads: stored
    // contents, the application's results unchanged, every launch replayed.
    for name in ["queues", "gated", "memory", "threads"] {
        let (dir, cap, st) = capture_with_stats(name, &format!("ip-full-{name}"), &host);
        assert!(counter(&st, "digests_in_place") > 0, "{name}: {st}");
        assert_full_contents(&cap);
        assert_replays_ok(&dir, cap.launches.len());
    }
}
