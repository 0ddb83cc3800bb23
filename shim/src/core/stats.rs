//! The capture's own counters — contents read back over the bus, device-side digests, their
//! snapshots read back — written as JSON to `CLTRAP_STATS` when the application exits, so a
//! test or a benchmark can see what crossed the bus without timing anything.

use std::sync::atomic::{AtomicU64, Ordering};

/// Reads of contents (before or after a launch) enqueued, and their bytes.
pub(super) static CONTENT_READS: AtomicU64 = AtomicU64::new(0);
/// See [`CONTENT_READS`].
pub(super) static CONTENT_READ_BYTES: AtomicU64 = AtomicU64::new(0);
/// Digest kernels enqueued (one per buffer side digested on the device).
pub(super) static DEVICE_DIGESTS: AtomicU64 = AtomicU64::new(0);
/// Bytes of digest partials read back.
pub(super) static PARTIAL_BYTES: AtomicU64 = AtomicU64::new(0);
/// Snapshots read back (contents not stored yet in `full` mode), and their bytes.
pub(super) static SNAPSHOT_READS: AtomicU64 = AtomicU64::new(0);
/// See [`SNAPSHOT_READS`].
pub(super) static SNAPSHOT_READ_BYTES: AtomicU64 = AtomicU64::new(0);

/// Digest engines built (one per context and device while the application holds the context).
pub(super) static ENGINES_BUILT: AtomicU64 = AtomicU64::new(0);
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
    let text = format!(
        "{{\"content_reads\":{},\"content_read_bytes\":{},\"device_digests\":{},\"partial_bytes\":{},\"snapshot_reads\":{},\"snapshot_read_bytes\":{},\"engines_built\":{},\"engines_released\":{},\"snapshots_released\":{}}}\n",
        get(&CONTENT_READS),
        get(&CONTENT_READ_BYTES),
        get(&DEVICE_DIGESTS),
        get(&PARTIAL_BYTES),
        get(&SNAPSHOT_READS),
        get(&SNAPSHOT_READ_BYTES),
        get(&ENGINES_BUILT),
        get(&ENGINES_RELEASED),
        get(&SNAPSHOTS_RELEASED),
    );
    if let Err(e) = std::fs::write(path, text) {
        crate::sink::report_once(&format!(
            "could not write the capture's counters to {}: {e}",
            path.display()
        ));
    }
}
