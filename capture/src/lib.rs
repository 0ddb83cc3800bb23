//! The cltrap capture format: the one thing the shim and the analyzer share.
//!
//! A capture is a directory:
//!
//! ```text
//! cltrap-out/
//!   manifest.json        format name + version + who wrote it (written first, atomically)
//!   launches.jsonl       one `LaunchRecord` per line, appended as each launch completes
//!   blobs/ab/abcdef...   content-addressed bytes (sources, included headers, buffer contents,
//!                        program records)
//! ```
//!
//! Identical sources and buffer contents are stored once (blake3 content addressing).
//! Crash safety: blobs are written to a temporary name and renamed, and each launch line is
//! appended with one `write` *after* the blobs it names exist, so a capture cut off at any
//! point reads back completely up to its last whole line.
//!
//! What this crate is not for: talking to OpenCL. It is pure data + file I/O, so the shim
//! (which must stay thin) and the analyzer can both depend on it.

pub mod controls;
pub mod hex;
pub mod includes;
pub mod model;
pub mod options;
pub mod reader;
pub mod schedule;
pub mod writer;

pub use controls::{BufferMode, Control, Settings, CONTROLS};
pub use model::*;
pub use reader::{Capture, ReadError};
pub use writer::{BlobStore, CaptureWriter, WriteError};

/// Name written into every manifest, so a reader can tell a cltrap capture from other JSON.
pub const FORMAT_NAME: &str = "cltrap-capture";
/// Bumped on every incompatible change of the records; readers refuse other versions.
pub const FORMAT_VERSION: u32 = 1;
/// The append-only launch log inside a capture directory (one JSON record per line), named
/// once because the writer, the reader and `cltrap run`'s summary all open it.
pub const LAUNCHES_FILE: &str = "launches.jsonl";

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        Manifest {
            format: FORMAT_NAME.into(),
            version: FORMAT_VERSION,
            writer: "test".into(),
            pid: 1,
            argv: vec![],
            started_unix: 0,
            buffer_mode: "full".into(),
        }
    }

    fn launch(program: &str) -> LaunchRecord {
        LaunchRecord {
            id: 99,
            seq: 0,
            kernel: "k".into(),
            program: program.into(),
            api: LaunchApi::NdRange,
            work_dim: 1,
            global_offset: None,
            global_size: vec![4],
            local_size: None,
            args: vec![],
            device: DeviceRecord::default(),
            queue_properties: 0,
            launch_site: None,
            thread: 0,
            status: 0,
            not_replayable: vec![],
        }
    }

    #[test]
    fn identical_blobs_are_stored_once_and_read_back() {
        let dir = std::env::temp_dir().join(format!("cltrap-cap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        let data = vec![7u8; 1 << 16];
        let h1 = w.blobs.put(&data).unwrap();
        let h2 = w.blobs.put(&data).unwrap();
        assert_eq!(h1, h2);
        assert_eq!(w.blobs.bytes_written(), data.len() as u64);
        assert_eq!(w.append(launch(&h1)).unwrap(), 0);
        assert_eq!(w.append(launch(&h1)).unwrap(), 1);
        let c = Capture::open(&dir).unwrap();
        assert_eq!(c.launches.len(), 2);
        assert_eq!(c.launches[1].id, 1);
        assert_eq!(c.blob(&h1).unwrap(), data);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_cut_off_log_reads_up_to_its_last_complete_launch() {
        let dir = std::env::temp_dir().join(format!("cltrap-cut-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        w.append(launch("p")).unwrap();
        drop(w);
        let log = dir.join(LAUNCHES_FILE);
        let mut bytes = std::fs::read(&log).unwrap();
        bytes.extend_from_slice(b"{\"id\":1,\"kern");
        std::fs::write(&log, &bytes).unwrap();
        let c = Capture::open(&dir).unwrap();
        assert_eq!(c.launches.len(), 1);
        assert!(c.truncated);
        // A new writer continues after the last complete record, dropping the fragment.
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        assert_eq!(w.append(launch("p")).unwrap(), 1);
        let c = Capture::open(&dir).unwrap();
        assert_eq!(c.launches.len(), 2);
        assert!(!c.truncated);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn other_format_versions_are_refused_with_a_clear_message() {
        let dir = std::env::temp_dir().join(format!("cltrap-ver-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("manifest.json"),
            r#"{"format":"cltrap-capture","version":999}"#,
        )
        .unwrap();
        let e = Capture::open(&dir).unwrap_err().to_string();
        assert!(e.contains("999") && e.contains("reads"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_continued_capture_never_reuses_an_id_after_a_hole() {
        let dir = std::env::temp_dir().join(format!("cltrap-hole-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        let a = w.take_id().unwrap();
        let _lost = w.take_id().unwrap();
        let c = w.take_id().unwrap();
        let mut rec = launch("p");
        rec.id = a;
        let mut rec_c = rec.clone();
        rec_c.id = c;
        w.append_numbered(&[rec, rec_c]).unwrap();
        drop(w);
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        assert_eq!(w.take_id().unwrap(), c + 1);
        drop(w);
        // An older capture has no id file: ids continue after the log's largest.
        std::fs::remove_file(dir.join(writer::IDS_FILE)).unwrap();
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        assert_eq!(w.take_id().unwrap(), c + 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn writers_open_at_once_never_share_an_id_or_cut_each_others_lines() {
        let dir = std::env::temp_dir().join(format!("cltrap-two-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let a = CaptureWriter::create(&dir, &manifest()).unwrap();
        let b = CaptureWriter::create(&dir, &manifest()).unwrap();
        let from_a: Vec<u64> = (0..3).map(|_| a.take_id().unwrap()).collect();
        let from_b: Vec<u64> = (0..3).map(|_| b.take_id().unwrap()).collect();
        assert_eq!(from_a, [0, 1, 2]);
        assert_eq!(
            from_b,
            [writer::ID_BLOCK, writer::ID_BLOCK + 1, writer::ID_BLOCK + 2]
        );
        // A line still being written by a live writer is not cut off by a new one...
        let log = dir.join(LAUNCHES_FILE);
        let mut rec = launch("p");
        rec.id = from_a[0];
        a.append_numbered(&[rec]).unwrap();
        let whole = std::fs::read(&log).unwrap();
        let mut partial = whole.clone();
        partial.extend_from_slice(b"{\"id\": 7, \"kern");
        std::fs::write(&log, &partial).unwrap();
        let c = CaptureWriter::create(&dir, &manifest()).unwrap();
        assert_eq!(std::fs::read(&log).unwrap(), partial);
        // ...but once every writer is gone, the next one cuts a dead writer's fragment.
        drop((a, b, c));
        let _d = CaptureWriter::create(&dir, &manifest()).unwrap();
        assert_eq!(std::fs::read(&log).unwrap(), whole);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
