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
//!   spool/*.spool        large contents appended raw by the application's process, until
//!                        a `cltrap` process compacts them into blobs/ ([`spool`])
//! ```
//!
//! Identical sources and buffer contents are stored once (blake3 content addressing); large
//! contents are stored as compressed content-defined chunks, so successive versions of a
//! buffer share what did not change, and a launch is logged as its change from the previous
//! launch of the same kernel.
//! Crash safety: blobs are written to a temporary name and renamed, and each launch line is
//! appended with one `write` *after* the blobs it names exist, so a capture cut off at any
//! point reads back completely up to its last whole line.
//!
//! What this crate is not for: talking to OpenCL. It is pure data + file I/O, so the shim
//! (which must stay thin) and the analyzer can both depend on it.

#[cfg(feature = "compact")]
pub mod bulk;
pub mod chunks;
pub mod controls;
#[cfg(feature = "compact")]
pub mod cutscan;
pub mod delta;
pub mod devdigest;
pub mod fastpatch;
pub mod hex;
pub mod includes;
pub mod journal;
pub mod macros;
pub mod model;
pub mod options;
pub mod parallel;
#[cfg(feature = "compact")]
pub mod reader;
pub mod replayable;
pub mod safe_open;
pub mod schedule;
pub mod spool;
pub mod text;
pub mod validate;
pub mod workers;
pub mod writer;
pub mod writer_fs;

pub use controls::{AtFinish, BufferMode, Control, DeviceDigest, Settings, CONTROLS};
pub use model::*;
#[cfg(feature = "compact")]
pub use reader::{Capture, DamagedLaunch, ReadError};
pub use text::Text;
pub use writer::{BlobStore, CaptureWriter, WriteError};

/// Name written into every manifest, so a reader can tell a cltrap capture from other JSON.
pub const FORMAT_NAME: &str = "cltrap-capture";
/// Bumped on every incompatible change of the records; readers refuse other versions.
/// Version 2 added chunked, compressed contents ([`chunks`]) and delta lines in the launch
/// log ([`delta`]); everything version 1 holds is still valid version 2. Version 3 added the
/// digest kind of a digest-only content (`algo`: blake3, or the device-computed `dd128` of
/// [`devdigest`]); everything version 2 holds is still valid version 3. Version 4 stores the
/// new chunks of a content in one pack file instead of a file per chunk (index version 2 of
/// [`chunks`]); everything version 3 holds is still valid version 4. Version 5 adds the
/// spool ([`spool`]: contents not compacted yet, whole or as patch records on an earlier
/// version), which an older reader would report as missing blobs; everything version 4
/// holds is still valid version 5. Version 6 adds encoding `r` of a chunk (its bytes as they
/// are, for a chunk zstd would not shrink by a tenth: [`chunks`]), which an older reader would
/// report as damaged; everything version 5 holds is still valid version 6. Version 7 adds
/// part records to the spool ([`spool`]: one large content in parts written at once by
/// several threads), which an older reader would report as missing blobs; everything
/// version 6 holds is still valid version 7.
pub const FORMAT_VERSION: u32 = 7;
/// The versions this crate reads: older captures read unchanged.
pub const READABLE_VERSIONS: [u32; 7] = [1, 2, 3, 4, 5, 6, 7];
/// The append-only launch log inside a capture directory (one JSON record per line), named
/// once because the writer, the reader and `cltrap run`'s summary all open it.
pub const LAUNCHES_FILE: &str = "launches.jsonl";

/// Held by the tests that fork, one at a time: a child forked by one test holds copies of
/// every descriptor the others have open at that moment (their segments' locks among them).
#[cfg(test)]
pub(crate) static FORKS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn manifest() -> Manifest {
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

    /// A launch record of kernel `k` naming `program` (a digest, or a short name that stands
    /// for one); the writer's tests use it too.
    pub(crate) fn launch(program: &str) -> LaunchRecord {
        LaunchRecord {
            id: 99,
            seq: 0,
            kernel: "k".into(),
            // Records name their program by digest; a test's short name stands for one.
            program: if validate::is_digest(program) {
                program.into()
            } else {
                writer::digest(program.as_bytes())
            },
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
        let (_t, dir) = fresh("cap");
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
    }

    #[test]
    fn a_launch_is_found_by_id_in_order_and_out_of_order() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("cap");
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        for _ in 0..5 {
            w.append(launch("p")).unwrap();
        }
        let mut c = Capture::open(&dir).unwrap();
        for id in 0..5 {
            assert_eq!(c.launch(id).unwrap().id, id);
        }
        assert!(matches!(
            c.launch(5),
            Err(ReadError::NoSuchLaunch { id: 5, count: 5 })
        ));
        // A list reordered after opening is still searched whole.
        c.launches.reverse();
        for id in 0..5 {
            assert_eq!(c.launch(id).unwrap().id, id);
        }
    }

    #[test]
    fn a_cut_off_log_reads_up_to_its_last_complete_launch() {
        let (_t, dir) = fresh("cut");
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
    }

    #[test]
    fn other_format_versions_are_refused_with_a_clear_message() {
        let (_t, dir) = fresh("ver");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("manifest.json"),
            r#"{"format":"cltrap-capture","version":999}"#,
        )
        .unwrap();
        let e = Capture::open(&dir).unwrap_err().to_string();
        assert!(e.contains("999") && e.contains("reads"), "{e}");
    }

    #[test]
    fn a_continued_capture_never_reuses_an_id_after_a_hole() {
        let (_t, dir) = fresh("hole");
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        let a = w.take_id().unwrap();
        let _lost = w.take_id().unwrap();
        let c = w.take_id().unwrap();
        let mut rec = launch("p");
        rec.id = a;
        let mut rec_c = rec.clone();
        rec_c.id = c;
        w.append_numbered(vec![rec, rec_c]).unwrap();
        drop(w);
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        assert_eq!(w.take_id().unwrap(), c + 1);
        drop(w);
        // An older capture has no id file: ids continue after the log's largest.
        std::fs::remove_file(dir.join(writer::IDS_FILE)).unwrap();
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        assert_eq!(w.take_id().unwrap(), c + 1);
    }

    #[test]
    fn writers_open_at_once_never_share_an_id_or_cut_each_others_lines() {
        let (_t, dir) = fresh("two");
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
        a.append_numbered(vec![rec]).unwrap();
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
    }

    use crate::chunks::tests::noise;

    /// A folder `name` not made yet, inside a private temporary folder that is removed when
    /// the returned guard drops (keep it for the whole test).
    fn fresh(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join(name);
        (t, dir)
    }

    /// The encoding bytes of a stored content's chunks, in order, and the bytes of its packs.
    fn encodings(dir: &std::path::Path, hash: &str) -> (Vec<u8>, u64) {
        let index = std::fs::read_to_string(writer::index_path(dir, hash)).unwrap();
        let (_, chunks) = chunks::parse_index(&index).unwrap();
        let mut packs = std::collections::HashSet::new();
        let tags = chunks
            .iter()
            .map(|c| {
                let at = c.at.as_ref().unwrap();
                let pack = std::fs::read(writer::pack_path(dir, &at.pack)).unwrap();
                packs.insert((at.pack.clone(), pack.len() as u64));
                pack[at.offset as usize]
            })
            .collect();
        (tags, packs.iter().map(|p| p.1).sum())
    }

    #[test]
    fn an_incompressible_content_is_stored_raw_and_reads_back_bit_exact() {
        let (_t, dir) = fresh("raw");
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        // Noise: its probed chunks save nothing, so every chunk is raw, zstd never tried.
        let n = noise(3 << 20, 21);
        let hn = writer::digest(&n);
        w.blobs.put_content(&hn, &n).unwrap();
        let (tags, packs) = encodings(&dir, &hn);
        assert!(
            tags.len() > 3 && tags.iter().all(|&t| t == b'r'),
            "{tags:?}"
        );
        assert_eq!(
            packs,
            n.len() as u64 + tags.len() as u64,
            "a tag byte per chunk"
        );
        // Noise with a compressible middle (decimal counters, no chunk twice): the probe of
        // the middle compresses, so each chunk is weighed on its own and the middle shrinks.
        let mut m = noise(3 << 20, 22);
        let text: Vec<u8> = (0..1u32 << 17)
            .flat_map(|i| format!("{i:08}").into_bytes())
            .collect();
        m[1 << 20..2 << 20].copy_from_slice(&text);
        let hm = writer::digest(&m);
        w.blobs.put_content(&hm, &m).unwrap();
        let (tags, packs) = encodings(&dir, &hm);
        assert!(tags.contains(&b'r') && tags.contains(&b'z'), "{tags:?}");
        assert!(packs < (2 << 20) + 200_000, "{packs}");
        let c = Capture::open(&dir).unwrap();
        assert_eq!(c.blob(&hn).unwrap(), n);
        assert_eq!(c.blob(&hm).unwrap(), m);
    }

    #[test]
    fn chunked_contents_share_unchanged_parts_and_read_back_verified() {
        let (_t, dir) = fresh("chunks");
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        let v1 = noise(4 << 20, 5);
        let mut v2 = v1.clone();
        for x in &mut v2[2_000_000..2_400_000] {
            *x ^= 0x55;
        }
        let (h1, h2) = (writer::digest(&v1), writer::digest(&v2));
        let first = w.blobs.put_content(&h1, &v1).unwrap();
        let second = w.blobs.put_content(&h2, &v2).unwrap();
        assert_eq!(w.blobs.put_content(&h2, &v2).unwrap(), 0, "stored once");
        assert!(
            first > v1.len() as u64 * 9 / 10,
            "noise does not compress: {first}"
        );
        assert!(
            second < 400_000 * 3 / 2,
            "a 400 kB change cost {second} bytes on disk"
        );
        // Compressible contents shrink.
        let zeros = vec![0u8; 1 << 20];
        let hz = writer::digest(&zeros);
        assert!(w.blobs.put_content(&hz, &zeros).unwrap() < 20_000);
        let c = Capture::open(&dir).unwrap();
        assert_eq!(c.blob(&h1).unwrap(), v1);
        assert_eq!(c.blob(&h2).unwrap(), v2);
        assert_eq!(c.blob(&hz).unwrap(), zeros);
        // The new chunks of a content share one pack file.
        let index = std::fs::read_to_string(writer::index_path(&dir, &h2)).unwrap();
        let (_, chunks) = chunks::parse_index(&index).unwrap();
        let new_packs: std::collections::HashSet<_> = chunks
            .iter()
            .map(|c| c.at.as_ref().unwrap().pack.clone())
            .collect();
        assert_eq!(new_packs.len(), 2, "v1's pack and v2's");
        // A damaged chunk is reported, never returned.
        let at = chunks[1].at.clone().unwrap();
        let victim = writer::pack_path(&dir, &at.pack);
        let good = std::fs::read(&victim).unwrap();
        let mut bad = good.clone();
        bad[at.offset as usize + at.stored / 2] ^= 0x40;
        std::fs::write(&victim, &bad).unwrap();
        let e = c.blob(&h2).unwrap_err().to_string();
        assert!(e.contains("damaged"), "{e}");
        std::fs::write(&victim, &good[..at.offset as usize + 1]).unwrap();
        let e = c.blob(&h2).unwrap_err().to_string();
        assert!(e.contains("damaged"), "a cut pack: {e}");
        std::fs::remove_file(&victim).unwrap();
        let e = c.blob(&h2).unwrap_err().to_string();
        assert!(e.contains("missing"), "{e}");
        std::fs::write(&victim, good).unwrap();
        assert_eq!(c.blob(&h2).unwrap(), v2);
    }

    #[test]
    fn contents_in_chunk_files_of_format_version_3_still_read() {
        let (_t, dir) = fresh("v3chunks");
        let _w = CaptureWriter::create(&dir, &manifest()).unwrap();
        let bytes = noise(300_000, 5);
        let hash = writer::digest(&bytes);
        // What format 3 wrote: one file per chunk and an index of version 1.
        let mut index = format!("cltrap-chunks 1\nsize {}\n", bytes.len());
        for (o, l) in chunks::cut(&bytes) {
            let chunk = &bytes[o..o + l];
            let h = writer::digest(chunk);
            let path = writer::chunk_path(&dir, &h);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, chunks::encode(chunk).unwrap()).unwrap();
            index.push_str(&format!("{h} {l}\n"));
        }
        let path = writer::index_path(&dir, &hash);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, index).unwrap();
        let c = Capture::open(&dir).unwrap();
        assert_eq!(c.blob(&hash).unwrap(), bytes);
    }

    #[test]
    fn malformed_pack_slots_are_errors_not_panics() {
        let (_t, dir) = fresh("bad-slots");
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        let v = noise(300_000, 11);
        let h = writer::digest(&v);
        w.blobs.put_content(&h, &v).unwrap();
        let c = Capture::open(&dir).unwrap();
        let ipath = writer::index_path(&dir, &h);
        let good = std::fs::read_to_string(&ipath).unwrap();
        let (_, chunks) = chunks::parse_index(&good).unwrap();
        let at = chunks[0].at.clone().unwrap();
        let orig = format!(" 0 {} {}\n", at.offset, at.stored);
        for off in [u64::MAX, i64::MAX as u64, 1 << 40, 300_000] {
            let bad = good.replacen(&orig, &format!(" 0 {off} {}\n", at.stored), 1);
            std::fs::write(&ipath, bad).unwrap();
            let read = std::panic::catch_unwind(|| c.blob(&h));
            assert!(matches!(read, Ok(Err(_))), "offset {off}: {read:?}");
        }
        // A slot of another chunk (one stored no longer than this chunk can be): damaged,
        // never returned.
        let other = (chunks[1..].iter())
            .filter_map(|c| c.at.clone())
            .find(|a| a.stored <= chunks::stored_bound(chunks[0].len))
            .expect("another chunk of noise stored no longer than the first can be");
        let bad = good.replacen(&orig, &format!(" 0 {} {}\n", other.offset, other.stored), 1);
        std::fs::write(&ipath, bad).unwrap();
        assert!(c.blob(&h).unwrap_err().to_string().contains("damaged"));
        // One stored longer than that: refused with the index.
        let bad = good.replacen(
            &orig,
            &format!(
                " 0 {} {}\n",
                at.offset,
                chunks::stored_bound(chunks[0].len) + 1
            ),
            1,
        );
        std::fs::write(&ipath, bad).unwrap();
        let e = c.blob(&h).unwrap_err().to_string();
        assert!(e.contains("stored length"), "{e}");
        std::fs::write(&ipath, good).unwrap();
        assert_eq!(c.blob(&h).unwrap(), v);
    }

    #[test]
    fn two_writers_and_threads_storing_shared_chunks_read_back() {
        let (_t, dir) = fresh("shared-chunks");
        let a = CaptureWriter::create(&dir, &manifest()).unwrap();
        let b = CaptureWriter::create(&dir, &manifest()).unwrap();
        let base = noise(3 << 20, 21);
        let versions: Vec<Vec<u8>> = (0..16)
            .map(|k| {
                let mut v = base.clone();
                let at = (k * 150_000) % (3 << 20);
                for x in &mut v[at..at + 50_000] {
                    *x ^= (k as u8) | 1;
                }
                v
            })
            .collect();
        std::thread::scope(|s| {
            for t in 0..4 {
                let store = if t % 2 == 0 { &a.blobs } else { &b.blobs };
                let versions = &versions;
                s.spawn(move || {
                    for k in 0..16 {
                        let v = &versions[(k + t * 5) % 16];
                        store.put_content(&writer::digest(v), v).unwrap();
                    }
                });
            }
        });
        let c = Capture::open(&dir).unwrap();
        for v in &versions {
            assert_eq!(&c.blob(&writer::digest(v)).unwrap(), v);
        }
    }

    fn storm_record(id: u64, a: u8) -> LaunchRecord {
        let mut r = launch("0".repeat(64).as_str());
        r.id = id;
        r.seq = id;
        r.kernel = "tiny".into();
        r.launch_site = Some(Site {
            module: "/usr/lib/app".into(),
            offset: 4660,
            symbol: Some("main".into()),
            location: None,
        });
        let info = |i: u32, name: &str, ty: &str| ArgInfo {
            index: i,
            name: name.into(),
            type_name: ty.into(),
            address_space: "global".into(),
            qualifiers: Default::default(),
        };
        let blob = |s: &str| Content::Blob {
            hash: writer::digest(s.as_bytes()),
            size: 256,
        };
        r.args = vec![
            ArgRecord::Buffer {
                info: info(0, "x", "float*"),
                mem: 0,
                flags: 4,
                size: 256,
                sub_of: None,
                before: blob("x"),
                after: blob("x"),
            },
            ArgRecord::Buffer {
                info: info(1, "y", "float*"),
                mem: 1,
                flags: 2,
                size: 256,
                sub_of: None,
                before: blob(&format!("y{}", (a + 3) % 4)),
                after: blob(&format!("y{a}")),
            },
            ArgRecord::Scalar {
                info: info(2, "a", "float"),
                bytes: format!("{a:02x}000000"),
            },
        ];
        r
    }

    #[test]
    fn journaled_launches_read_back_once_and_a_dead_journal_is_folded_into_the_log() {
        let (_t, dir) = fresh("journal");
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        w.enable_journal().unwrap();
        let records: Vec<LaunchRecord> = (0..50).map(|i| storm_record(i, (i % 4) as u8)).collect();
        w.append_numbered(records[..20].to_vec()).unwrap();
        w.flush_journal(false).unwrap();
        w.append_numbered(records[20..].to_vec()).unwrap();
        // 20 in the log, 30 in the journal: a reader sees all 50, in order.
        assert_eq!(Capture::open(&dir).unwrap().launches, records);
        // A writer that died between moving its journal into the log and emptying it leaves
        // the same lines twice: read once.
        let journal = journal::journals(&dir).pop().unwrap();
        let pending = journal::committed_records(&journal).unwrap();
        let mut log = std::fs::read(dir.join(LAUNCHES_FILE)).unwrap();
        log.extend(&pending);
        std::fs::write(dir.join(LAUNCHES_FILE), &log).unwrap();
        assert_eq!(Capture::open(&dir).unwrap().launches, records);
        // Two different records under one id are a broken capture, said clearly.
        let mut other = launch("p");
        other.id = 3;
        let mut bad = log.clone();
        bad.extend(serde_json::to_vec(&other).unwrap());
        bad.push(b'\n');
        std::fs::write(dir.join(LAUNCHES_FILE), &bad).unwrap();
        let err = Capture::open(&dir).unwrap_err().to_string();
        assert!(err.contains("launch id 3 is also on line 4"), "{err}");
        std::fs::write(dir.join(LAUNCHES_FILE), &log[..log.len() - pending.len()]).unwrap();
        // A writer that goes away moves its journal into the log and deletes it.
        drop(w);
        assert!(journal::journals(&dir).is_empty());
        assert_eq!(Capture::open(&dir).unwrap().launches, records);
        // A dead process's journal stays: readers see it; the next writer alone folds it in.
        let mut late = storm_record(50, 1);
        late.id = 50;
        let mut line = serde_json::to_vec(&late).unwrap();
        line.push(b'\n');
        let mut dead = journal::Journal::create(&dir, Default::default()).unwrap();
        assert!(dead.append(&line));
        std::mem::forget(dead);
        let mut all = records.clone();
        all.push(late);
        assert_eq!(Capture::open(&dir).unwrap().launches, all);
        let again = CaptureWriter::create(&dir, &manifest()).unwrap();
        assert!(journal::journals(&dir).is_empty());
        assert_eq!(Capture::open(&dir).unwrap().launches, all);
        drop(again);
    }

    #[test]
    fn launches_of_one_kernel_are_logged_as_changes_and_read_back_whole() {
        let (_t, dir) = fresh("delta");
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        let records: Vec<LaunchRecord> = (0..200).map(|i| storm_record(i, (i % 4) as u8)).collect();
        let mut other = launch("p");
        other.id = 200;
        w.append_numbered(records[..100].to_vec()).unwrap();
        w.append_numbered(vec![other.clone()]).unwrap();
        w.append_numbered(records[100..].to_vec()).unwrap();
        let log = std::fs::read(dir.join(LAUNCHES_FILE)).unwrap();
        let full = serde_json::to_vec(&records[0]).unwrap().len() + 1;
        assert!(
            log.len() * 3 < full * 201,
            "log of {} bytes for 201 launches of {full} bytes each",
            log.len()
        );
        let c = Capture::open(&dir).unwrap();
        let mut want = records.clone();
        want.push(other);
        assert_eq!(c.launches, want);
        // Cut inside a delta line: every launch before it still reads back.
        let cut_at = log.len() - 30;
        std::fs::write(dir.join(LAUNCHES_FILE), &log[..cut_at]).unwrap();
        let c = Capture::open(&dir).unwrap();
        assert!(c.truncated);
        assert_eq!(c.launches.len(), 200);
        assert_eq!(c.launches[..199], want[..199]);
        // A delta whose base is not on an earlier line is a clear error.
        std::fs::write(
            dir.join(LAUNCHES_FILE),
            "{\"id\":3,\"base\":2,\"patch\":{}}\n",
        )
        .unwrap();
        let e = Capture::open(&dir).unwrap_err().to_string();
        assert!(e.contains("change of launch 2"), "{e}");
        // A change that is not a set of fields (a number, a string, a list, true) is damage
        // the reader names, never a panic.
        let first = log.split(|b| *b == b'\n').next().unwrap();
        let first = format!("{}\n", String::from_utf8(first.to_vec()).unwrap());
        for patch in ["68719476736", "\"x\"", "[1,2]", "true"] {
            let text = format!("{first}{{\"id\":1,\"base\":0,\"patch\":{patch}}}\n");
            std::fs::write(dir.join(LAUNCHES_FILE), text).unwrap();
            let e = Capture::open(&dir).unwrap_err().to_string();
            assert!(
                e.contains("line 2 (launch 1): its change is not a set of fields"),
                "{patch}: {e}"
            );
        }
    }

    #[test]
    fn a_damaged_launch_line_is_kept_apart_with_the_deltas_that_depend_on_it() {
        let (_t, dir) = fresh("damaged-line");
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        let records: Vec<LaunchRecord> = (0..40).map(|i| storm_record(i, (i % 4) as u8)).collect();
        w.append_numbered(records.clone()).unwrap();
        drop(w);
        let log = std::fs::read_to_string(dir.join(LAUNCHES_FILE)).unwrap();
        let mut lines: Vec<String> = log.lines().map(str::to_string).collect();
        assert_eq!(lines.len(), 40);
        // Launch 10 keeps its id but loses its record.
        lines[10] = "{\"id\":10,\"bogus\":1}".into();
        std::fs::write(dir.join(LAUNCHES_FILE), lines.join("\n") + "\n").unwrap();
        // The strict reader refuses the capture, naming the line.
        let e = Capture::open(&dir).unwrap_err().to_string();
        assert!(e.contains("line 11 (launch 10)"), "{e}");
        let c = Capture::open_keeping_damaged(&dir).unwrap();
        assert_eq!(c.damaged[0].line, 11);
        assert_eq!(c.damaged[0].id, Some(10));
        // Every later launch of that kernel written as a change of it is damaged too, named.
        let damaged: Vec<u64> = c.damaged.iter().filter_map(|d| d.id).collect();
        for d in &c.damaged[1..] {
            let id = d.id.unwrap();
            assert!(id > 10 && d.why.contains("whose record (line"), "{d}");
        }
        assert!(damaged.contains(&11), "{damaged:?}");
        assert!(!damaged.contains(&9), "{damaged:?}");
        // The other launches read back whole.
        let want: Vec<LaunchRecord> = records
            .iter()
            .filter(|r| !damaged.contains(&r.id))
            .cloned()
            .collect();
        assert_eq!(c.launches, want);
        assert_eq!(c.launches.len() + c.damaged.len(), 40);
    }

    #[test]
    fn links_fifos_non_digests_and_unknown_fields_are_refused_not_followed() {
        let (_t, dir) = fresh("hostile");
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        let h = w.blobs.put(b"kernel void k() {}").unwrap();
        w.append(launch(&h)).unwrap();
        drop(w);
        let (_o, outside) = fresh("hostile-outside");
        std::fs::create_dir_all(&outside).unwrap();
        let secret = outside.join("secret");
        std::fs::write(&secret, b"secret").unwrap();
        let c = Capture::open(&dir).unwrap();
        // Names that are not digests never become paths.
        for bad in [
            "/etc/passwd",
            "/dev/zero",
            "../../../../etc/passwd",
            &h.to_uppercase(),
        ] {
            let e = c.blob(bad).unwrap_err();
            assert!(matches!(e, ReadError::NotADigest { .. }), "{bad}: {e}");
        }
        // A blob that is a link (to a file outside, or to /dev/zero) is not followed.
        let blob = writer::blob_path(&dir, &h);
        let good = std::fs::read(&blob).unwrap();
        for target in [secret.as_path(), std::path::Path::new("/dev/zero")] {
            std::fs::remove_file(&blob).unwrap();
            std::os::unix::fs::symlink(target, &blob).unwrap();
            let e = c.blob(&h).unwrap_err().to_string();
            assert!(e.contains("symbolic link"), "{e}");
        }
        std::fs::remove_file(&blob).unwrap();
        std::fs::write(&blob, &good).unwrap();
        // A FIFO log or manifest is refused at once, never waited on.
        let mkfifo = |p: &std::path::Path| {
            let c = std::ffi::CString::new(p.to_string_lossy().as_bytes()).unwrap();
            // SAFETY: a NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        };
        for name in [LAUNCHES_FILE, "manifest.json"] {
            let p = dir.join(name);
            let keep = std::fs::read(&p).unwrap();
            std::fs::remove_file(&p).unwrap();
            mkfifo(&p);
            let e = Capture::open(&dir).unwrap_err().to_string();
            assert!(e.contains("not a regular file"), "{name}: {e}");
            std::fs::remove_file(&p).unwrap();
            std::fs::write(&p, keep).unwrap();
        }
        // A blob folder that is a link is not followed either.
        let folder = blob.parent().unwrap().to_path_buf();
        let moved = outside.join("moved");
        std::fs::rename(&folder, &moved).unwrap();
        std::os::unix::fs::symlink(&moved, &folder).unwrap();
        assert!(c
            .blob(&h)
            .unwrap_err()
            .to_string()
            .contains("symbolic link"));
        std::fs::remove_file(&folder).unwrap();
        std::fs::rename(&moved, &folder).unwrap();
        assert_eq!(c.blob(&h).unwrap(), b"kernel void k() {}");
        // A field renamed by a bit flip is an error naming the file and the launch, not a
        // default.
        let log = dir.join(LAUNCHES_FILE);
        let text = std::fs::read_to_string(&log).unwrap();
        let flipped = text.replacen("\"global_size\"", "\"local_size\":[1],\"global_sizd\"", 1);
        std::fs::write(&log, flipped).unwrap();
        let e = Capture::open(&dir).unwrap_err().to_string();
        assert!(
            e.contains("launches.jsonl") && e.contains("(launch 0)") && e.contains("global_sizd"),
            "{e}"
        );
        // So is a missing log.
        std::fs::remove_file(&log).unwrap();
        let e = Capture::open(&dir).unwrap_err().to_string();
        assert!(e.contains("launches.jsonl") && e.contains("missing"), "{e}");
    }

    #[test]
    fn a_version_1_capture_reads_and_becomes_version_2_when_continued() {
        let fixture =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/capture-v1");
        let c = Capture::open(&fixture).unwrap();
        assert_eq!(c.manifest.version, 1);
        assert_eq!(c.launches.len(), 4);
        for l in &c.launches {
            assert!(l.replayable(), "{:?}", l.replay_blockers());
            for a in &l.args {
                if let ArgRecord::Buffer { before, after, .. } = a {
                    c.content(before, "before").unwrap();
                    c.content(after, "after").unwrap();
                }
            }
        }
        let (_t, dir) = fresh("v1");
        std::fs::create_dir_all(&dir).unwrap();
        for entry in ["manifest.json", LAUNCHES_FILE] {
            std::fs::copy(fixture.join(entry), dir.join(entry)).unwrap();
        }
        let w = CaptureWriter::create(&dir, &manifest()).unwrap();
        w.append_numbered(vec![storm_record(w.take_id().unwrap(), 1)])
            .unwrap();
        drop(w);
        let c = Capture::open(&dir).unwrap();
        assert_eq!(c.manifest.version, FORMAT_VERSION);
        assert_eq!(
            c.manifest.writer, "cltrap-shim 0.1.0",
            "the first writer stays"
        );
        assert_eq!(c.launches.len(), 5);
    }
}
