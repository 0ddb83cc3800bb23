//! The capture's own counters — contents read back over the bus, device-side digests, their
//! snapshots read back — written as JSON to `CLTRAP_STATS` when the application exits, so a
//! test or a benchmark can see what crossed the bus without timing anything.
//!
//! With `CLTRAP_STATS` set, the same file also says where the capture's time went: the
//! nanoseconds and calls of each [`Phase`] (on the application's threads and on the writer),
//! so a slow capture on a machine without a profiler (the GPU machines) can be taken apart.
//! Without it a span costs one relaxed load.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Declares [`Phase`] and the name each is written under in one list, so the two cannot
/// drift apart.
macro_rules! phases {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// The parts of the capture's work that [`span`] times.
        #[derive(Clone, Copy)]
        pub(super) enum Phase {
            $($(#[$doc])* $variant,)*
        }

        /// Each phase's name in the `CLTRAP_STATS` file, in the order of [`Phase`].
        const PHASES: &[&str] = &[$($name,)*];
    };
}

phases! {
    /// A recorded launch's whole hooked enqueue, on the application's thread.
    Launch => "launch",
    /// Planning its record (name, filters, arguments, program, device, launch site).
    Plan => "plan",
    /// Enqueueing the reads before the launch (and the known-contents check, reservation).
    Reads => "reads",
    /// The driver's own enqueue of the launch.
    Enqueue => "enqueue",
    /// Enqueueing the reads after the launch and handing the launch to the writer.
    HandOver => "hand_over",
    /// The driver's own `clFinish`.
    Finish => "finish",
    /// Writing the launches a `clFinish` finished, on the application's thread.
    FinishWrite => "finish_write",
    /// Turning one landed launch into its record (hashing, storing, releasing our events).
    Land => "land",
    /// Appending a batch of records to the launch log.
    Append => "append",
    /// A batch written by the writer thread.
    WriterBatch => "writer_batch",
    /// Waiting for room among the launches in flight ([`super::flight::admit`]).
    Admit => "admit",
    /// Enqueueing the reads after the launch.
    PostReads => "post_reads",
    /// Asking the driver for the status of a launch found complete by inference.
    LandStatus => "land_status",
    /// Hashing or storing a landed launch's contents into its record.
    LandFill => "land_fill",
    /// Releasing a landed launch's events, temporaries and queue reference.
    LandRelease => "land_release",
    /// Reading a device-side snapshot back (a content the capture has not stored yet).
    SnapshotRead => "snapshot_read",
    /// Of [`Phase::SnapshotRead`]: finding room for it (a kept vector, or fresh memory
    /// touched first).
    SnapshotRoom => "snapshot_room",
    /// Storing a large content read back (hashing, cutting, compressing, writing).
    Store => "store",
    /// Of [`Phase::Store`] and the small contents stored whole: handing a content to the
    /// blob store (the spool's append, or a small blob's file), hashing excluded.
    StorePut => "store_put",
    /// A spool lane writing a planned record ([`super::spool_lanes`]), on its own thread.
    LaneWrite => "lane_write",
    /// Waiting for the spool lanes before a batch's records are appended.
    LaneSettle => "lane_settle",
    /// Waiting for (or doing) a snapshot's read ahead ([`super::readahead`]).
    SnapshotWait => "snapshot_wait",
    /// Of [`Phase::Store`]: finding where a large content changed since its last version and
    /// hashing it (there, or whole).
    StoreHash => "store_hash",
    /// Of [`Phase::StorePut`]: waiting for the spool lanes to have room for a content.
    LaneRoom => "lane_room",
    /// A digest computed in place by a native kernel ([`super::inplace`]), on a driver thread.
    InPlace => "in_place",
}

static TIMING: AtomicBool = AtomicBool::new(false);
static NANOS: [AtomicU64; PHASES.len()] = [const { AtomicU64::new(0) }; PHASES.len()];
static CALLS: [AtomicU64; PHASES.len()] = [const { AtomicU64::new(0) }; PHASES.len()];

/// Turns the timing of phases on (the shim's settings have `CLTRAP_STATS`).
pub(crate) fn enable_timing() {
    TIMING.store(true, Ordering::Relaxed);
}

/// Times its phase until dropped (nothing when timing is off).
pub(super) struct Span(Phase, Option<Instant>);

/// Starts timing `phase`.
pub(super) fn span(phase: Phase) -> Span {
    Span(phase, TIMING.load(Ordering::Relaxed).then(Instant::now))
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some(t0) = self.1 {
            let i = self.0 as usize;
            NANOS[i].fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
            CALLS[i].fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Reads of contents (before or after a launch) enqueued, and their bytes.
pub(super) static CONTENT_READS: AtomicU64 = AtomicU64::new(0);
/// See [`CONTENT_READS`].
pub(super) static CONTENT_READ_BYTES: AtomicU64 = AtomicU64::new(0);
/// Digest kernels enqueued (one per buffer side digested on the device).
pub(super) static DEVICE_DIGESTS: AtomicU64 = AtomicU64::new(0);
/// Bytes of digest partials read back.
pub(super) static PARTIAL_BYTES: AtomicU64 = AtomicU64::new(0);
/// Digests computed in place by a native kernel on a host-memory device
/// ([`super::inplace`]), and their bytes.
pub(super) static DIGESTS_IN_PLACE: AtomicU64 = AtomicU64::new(0);
/// See [`DIGESTS_IN_PLACE`].
pub(super) static DIGESTED_IN_PLACE_BYTES: AtomicU64 = AtomicU64::new(0);
/// Of [`DIGESTS_IN_PLACE`], those whose bytes were copied: a stored side whose content the
/// capture did not hold yet.
pub(super) static COPIED_IN_PLACE: AtomicU64 = AtomicU64::new(0);
/// Snapshots read back (contents not stored yet in `full` mode), and their bytes.
pub(super) static SNAPSHOT_READS: AtomicU64 = AtomicU64::new(0);
/// See [`SNAPSHOT_READS`].
pub(super) static SNAPSHOT_READ_BYTES: AtomicU64 = AtomicU64::new(0);
/// Of [`SNAPSHOT_READS`], those read into an engine's mapped host memory (the driver copies
/// straight into it), not the heap.
pub(super) static SNAPSHOT_READS_MAPPED: AtomicU64 = AtomicU64::new(0);
/// Of [`SNAPSHOT_READS`], those too large for mapped memory of their size read through two
/// mapped stages into the heap ([`super::digest`]'s staged reads).
pub(super) static SNAPSHOT_READS_STAGED: AtomicU64 = AtomicU64::new(0);
/// Launches an application's `clFinish` wrote itself (`--at-finish write`) or handed to the
/// writer thread (`--at-finish hand`).
pub(super) static FINISH_WRITTEN: AtomicU64 = AtomicU64::new(0);
/// See [`FINISH_WRITTEN`].
pub(super) static FINISH_HANDED: AtomicU64 = AtomicU64::new(0);
/// Snapshots whose reads were started ahead, on a thread of their own ([`super::readahead`]).
pub(super) static SNAPSHOTS_READ_AHEAD: AtomicU64 = AtomicU64::new(0);
/// New contents spool lanes copied as parts while the landing hashed them
/// ([`super::spool_lanes::submit_unnamed`]).
pub(super) static COPIED_WHILE_HASHED: AtomicU64 = AtomicU64::new(0);
/// Memory objects a launch read only before it because its kernel's source never writes
/// them, though their type would allow it ([`super::unwritten`]).
pub(super) static UNWRITTEN_BY_SOURCE: AtomicU64 = AtomicU64::new(0);

/// Events the capture created for its own commands (reads, copies, digests, markers): on
/// NVIDIA each costs the launching thread microseconds, so most launches have none (riders).
pub(super) static EVENTS: AtomicU64 = AtomicU64::new(0);
/// Markers the writer put into queues whose riders nothing else answered for.
pub(super) static MARKERS: AtomicU64 = AtomicU64::new(0);

/// Digest engines built (one per context and device while the application holds the context).
pub(super) static ENGINES_BUILT: AtomicU64 = AtomicU64::new(0);
/// Of [`ENGINES_BUILT`], those built ahead of the launches ([`super::prepare`]).
pub(super) static ENGINES_PREPARED: AtomicU64 = AtomicU64::new(0);
/// Digest engines whose objects were released (their context retired, see `lifetime.rs`).
pub(super) static ENGINES_RELEASED: AtomicU64 = AtomicU64::new(0);
/// Pooled snapshot buffers released after their engine was idle.
pub(super) static SNAPSHOTS_RELEASED: AtomicU64 = AtomicU64::new(0);

/// Adds `n` to a counter.
pub(super) fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

/// Writes the counters to `path` (failures are said once on stderr).
pub(super) fn write(path: &std::path::Path) {
    let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let phases: Vec<String> = PHASES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            format!(
                "\"{name}\":{{\"ns\":{},\"calls\":{}}}",
                get(&NANOS[i]),
                get(&CALLS[i])
            )
        })
        .collect();
    // The counters, named as in the file, in its order (one list: names and values cannot
    // drift apart).
    let counters: [(&str, &AtomicU64); 22] = [
        ("content_reads", &CONTENT_READS),
        ("content_read_bytes", &CONTENT_READ_BYTES),
        ("device_digests", &DEVICE_DIGESTS),
        ("partial_bytes", &PARTIAL_BYTES),
        ("digests_in_place", &DIGESTS_IN_PLACE),
        ("digested_in_place_bytes", &DIGESTED_IN_PLACE_BYTES),
        ("copied_in_place", &COPIED_IN_PLACE),
        ("snapshot_reads", &SNAPSHOT_READS),
        ("snapshot_read_bytes", &SNAPSHOT_READ_BYTES),
        ("snapshot_reads_mapped", &SNAPSHOT_READS_MAPPED),
        ("snapshot_reads_staged", &SNAPSHOT_READS_STAGED),
        ("snapshots_read_ahead", &SNAPSHOTS_READ_AHEAD),
        ("copied_while_hashed", &COPIED_WHILE_HASHED),
        ("unwritten_by_source", &UNWRITTEN_BY_SOURCE),
        ("finish_written", &FINISH_WRITTEN),
        ("finish_handed", &FINISH_HANDED),
        ("engines_built", &ENGINES_BUILT),
        ("engines_prepared", &ENGINES_PREPARED),
        ("engines_released", &ENGINES_RELEASED),
        ("snapshots_released", &SNAPSHOTS_RELEASED),
        ("events", &EVENTS),
        ("markers", &MARKERS),
    ];
    let counted: String = counters
        .iter()
        .map(|(name, c)| format!("\"{name}\":{},", get(c)))
        .collect();
    // The spool's cost to the application (the time it waited for compaction).
    let spool = crate::sink::existing_writer()
        .and_then(|w| w.blobs.spool_stats())
        .map(|s| {
            format!(
                "\"spool\":{{\"records\":{},\"patches\":{},\"parts\":{},\"bytes\":{},\"waits\":{},\"wait_ns\":{},\"peak_bytes\":{},\"bound\":{}}},",
                s.records, s.patches, s.parts, s.bytes, s.waits, s.wait_ns, s.peak_bytes, s.bound
            )
        })
        .unwrap_or_default();
    let text = format!("{{{counted}{spool}\"time\":{{{}}}}}\n", phases.join(","));
    // A new file renamed over the path: a link there is replaced, never written through.
    let access = crate::state::settings()
        .map(crate::sink::access)
        .unwrap_or_default();
    if let Err(e) = cltrap_capture::writer_fs::write_new(path, text.as_bytes(), access) {
        crate::say::report_once(&format!(
            "could not write the capture's counters to {}: {e}",
            path.display()
        ));
    }
}
