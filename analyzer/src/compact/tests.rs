//! Compaction of spools written here: patch chains rebuilt from the version kept, runs of
//! chains, damaged and cut-off records, idempotent passes.

use super::*;
use cltrap_capture::spool::SpoolWriter;

/// A base and its next version (a 4 KiB region changed), 2 MiB each.
fn two_versions() -> (Vec<u8>, Vec<u8>) {
    let a: Vec<u8> = (0..2u32 << 20)
        .map(|i| (i.wrapping_mul(2654435761) >> 11) as u8)
        .collect();
    let mut b = a.clone();
    for x in &mut b[300_000..304_096] {
        *x ^= 0x5a;
    }
    (a, b)
}

fn region(a: &[u8], b: &[u8]) -> (usize, usize) {
    parallel::changed_region(b, a).unwrap()
}

/// A capture folder whose spool holds `a` whole in one segment and `b` as a patch on it in
/// the next; returns the two segments' paths, in that order.
fn spooled(dir: &Path, a: &[u8], b: &[u8]) -> (PathBuf, PathBuf, SpoolWriter) {
    let w = SpoolWriter::new(dir, Access::PRIVATE, 0).unwrap();
    w.put(&writer::digest(a), a).unwrap();
    w.seal();
    let ranges = spool::changed_ranges(b, a, region(a, b));
    w.put_version(&writer::digest(b), b, &writer::digest(a), &ranges)
        .unwrap();
    let names = spool::segments(dir).unwrap();
    assert_eq!(names.len(), 2);
    let path = |n: &String| dir.join(SPOOL_DIR).join(n);
    let (first, second) = (path(&names[0]), path(&names[1]));
    let s = spool::scan(&std::fs::File::open(&second).unwrap()).unwrap();
    assert!(s.records[0].patch.is_some(), "not a patch record");
    (first, second, w)
}

/// The pass said one problem: parts of a content that leave a gap (their writer died).
fn assert_one_gap_said(r: &Report) {
    assert!(
        r.problems.len() == 1 && r.problems[0].contains("do not cover it"),
        "{:?}",
        r.problems
    );
}

fn read(dir: &Path, bytes: &[u8]) -> Vec<u8> {
    Contents::new(dir)
        .blob_of_size(&writer::digest(bytes), bytes.len() as u64)
        .unwrap()
}

#[test]
fn whole_records_share_packs_and_read_back() {
    // 200 contents of 16 KiB in one segment: a chain each.
    let t = tempfile::tempdir().unwrap();
    let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
    let contents: Vec<Vec<u8>> = (0..200u32)
        .map(|k| {
            (0..16_384u32)
                .map(|i| (i.wrapping_mul(2654435761 ^ k) >> 9) as u8)
                .collect()
        })
        .collect();
    for c in &contents {
        w.put(&writer::digest(c), c).unwrap();
    }
    drop(w);
    let r = Compactor::new(t.path()).pass().unwrap();
    assert_eq!((r.segments, r.contents), (1, 200), "{r:?}");
    let mut packs = 0;
    let mut indexes = 0;
    for d in std::fs::read_dir(t.path().join("blobs")).unwrap() {
        for f in std::fs::read_dir(d.unwrap().path()).unwrap() {
            let name = f.unwrap().file_name().into_string().unwrap();
            packs += name.ends_with(".pack") as usize;
            indexes += name.ends_with(".chunks") as usize;
        }
    }
    assert_eq!(indexes, 200);
    // At most about four runs of chains per thread, a pack each.
    assert!(
        packs <= 4 * parallel::threads() + 1,
        "{packs} packs for 200 contents"
    );
    for c in &contents {
        assert_eq!(&read(t.path(), c), c);
    }
}

/// A capture of an older version whose spool is compacted now says the current version:
/// compaction may store raw chunks, which an older reader would call damaged.
#[test]
fn compacting_an_older_capture_upgrades_its_manifest() {
    let t = tempfile::tempdir().unwrap();
    let m = |v: u32| {
        format!(
            r#"{{"format":"{}","version":{v},"writer":"x","pid":1,"argv":[],"started_unix":0,"buffer_mode":"full"}}"#,
            cltrap_capture::FORMAT_NAME
        )
    };
    std::fs::write(t.path().join("manifest.json"), m(5)).unwrap();
    let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
    let c: Vec<u8> = (0..70_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    w.put(&writer::digest(&c), &c).unwrap();
    drop(w);
    Compactor::new(t.path()).pass().unwrap();
    let text = std::fs::read_to_string(t.path().join("manifest.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["version"], cltrap_capture::FORMAT_VERSION, "{text}");
    assert_eq!(read(t.path(), &c), c);
}

#[test]
fn runs_of_chains_cover_every_chain_once_in_order() {
    let record = |len: u64| spool::Record {
        hash: String::new(),
        offset: 0,
        len,
        patch: None,
        part: None,
    };
    let records: Vec<spool::Record> = (0..50).map(|i| record(1000 + i * 37)).collect();
    for threads in [1, 2, 3, 16] {
        let chains: Vec<Vec<(usize, &spool::Record)>> =
            records.iter().map(|r| vec![(0, r)]).collect();
        let runs = groups(&chains, threads);
        assert!(runs.len() <= 4 * threads + 1, "{threads}: {runs:?}");
        let covered: Vec<usize> = runs.iter().flat_map(|r| r.clone()).collect();
        assert_eq!(covered, (0..50).collect::<Vec<_>>());
        assert!(runs.iter().all(|r| !r.is_empty()));
    }
    assert!(groups(&[], 4).is_empty());
}

/// A content spooled in three parts on three lanes: while its writer lives and a part is
/// missing, compaction leaves the parts' segments for later without a word; once every
/// part is written the content reads back from the spool, and compaction stores it
/// (once) and drops every segment. Parts whose writer died before writing them all name
/// no launch: said, and dropped with their segment, as a cut record is.
#[test]
fn a_content_in_parts_is_compacted_once_every_part_is_written() {
    let a: Vec<u8> = (0..3u32 << 20)
        .map(|i| (i.wrapping_mul(2654435761) >> 7) as u8)
        .collect();
    let hash = writer::digest(&a);
    let t = tempfile::tempdir().unwrap();
    let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
    let parts = w.plan(&hash, &a, None).unwrap().parts(3).unwrap();
    assert_eq!(parts.len(), 3);
    w.write_planned(1, &parts[0], &a).unwrap();
    w.write_planned(2, &parts[2], &a).unwrap();
    w.seal();
    // A live writer: another record, in a segment it holds.
    let other = vec![7u8; 1 << 16];
    w.put(&writer::digest(&other), &other).unwrap();
    let missing = Contents::new(t.path()).blob_of_size(&hash, a.len() as u64);
    assert!(
        missing
            .as_ref()
            .is_err_and(|e| e.to_string().contains("in parts")),
        "{missing:?}"
    );
    let r = Compactor::new(t.path()).pass().unwrap();
    assert_eq!((r.segments, r.contents), (0, 0), "{r:?}");
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(spool::segments(t.path()).unwrap().len(), 3);
    w.write_planned(3, &parts[1], &a).unwrap();
    assert_eq!(read(t.path(), &a), a);
    drop(w);
    let r = Compactor::new(t.path()).pass().unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!((r.segments, r.contents), (4, 2), "{r:?}");
    // The content counts with all of its bytes, once.
    assert_eq!(r.raw_bytes, (a.len() + other.len()) as u64, "{r:?}");
    assert!(spool::segments(t.path()).unwrap().is_empty());
    assert_eq!(read(t.path(), &a), a);

    let t = tempfile::tempdir().unwrap();
    let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
    w.write_planned(1, &parts[0], &a).unwrap();
    drop(w);
    let r = Compactor::new(t.path()).pass().unwrap();
    assert_eq!(r.segments, 1, "{r:?}");
    assert_one_gap_said(&r);
    assert!(spool::segments(t.path()).unwrap().is_empty());
}

#[test]
fn a_patch_finds_its_base_whichever_segment_is_compacted_first() {
    let (a, b) = two_versions();
    // The base's segment first (the patch's is still held by its writer): the base is
    // stored before its segment goes, and the patch rebuilds from the store.
    let t = tempfile::tempdir().unwrap();
    let (first, second, w) = spooled(t.path(), &a, &b);
    let r = Compactor::new(t.path()).pass().unwrap();
    assert_eq!((r.segments, r.contents), (1, 1), "{r:?}");
    assert!(!first.exists() && second.exists());
    assert_eq!(read(t.path(), &b), b);
    drop(w);
    let r = Compactor::new(t.path()).pass().unwrap();
    assert_eq!((r.segments, r.contents, r.patches), (1, 1, 1), "{r:?}");
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(read(t.path(), &a), a);
    assert_eq!(read(t.path(), &b), b);

    // The patch's segment first (the base's held, as by a live writer): the base is read
    // from the spool, and its segment stays until it is compacted itself.
    let t = tempfile::tempdir().unwrap();
    let (first, second, w) = spooled(t.path(), &a, &b);
    drop(w);
    let held = std::fs::File::open(&first).unwrap();
    held.lock().unwrap();
    let r = Compactor::new(t.path()).pass().unwrap();
    assert_eq!((r.segments, r.patches), (1, 1), "{r:?}");
    assert!(first.exists() && !second.exists());
    assert_eq!(read(t.path(), &b), b);
    drop(held);
    let r = Compactor::new(t.path()).pass().unwrap();
    assert_eq!(r.segments, 1, "{r:?}");
    assert!(spool::segments(t.path()).unwrap().is_empty());
    assert_eq!(read(t.path(), &a), a);
    assert_eq!(read(t.path(), &b), b);

    // Both in one pass: the patch, in the next segment, is rebuilt from the version just
    // stored (its base is not read back), and only its region is written again (far less
    // than a whole content).
    let t = tempfile::tempdir().unwrap();
    let (_, _, w) = spooled(t.path(), &a, &b);
    drop(w);
    let one = Compactor::new(t.path());
    let r = one.pass().unwrap();
    assert_eq!((r.segments, r.contents, r.patches), (2, 2, 1), "{r:?}");
    assert_eq!(r.bases_read, 0, "{r:?}");
    assert_eq!(read(t.path(), &b), b);
}

/// The same content spooled twice, in two segments compacted in one pass: stored once, both
/// segments dropped. With the first copy damaged, the second is stored all the same and
/// only the damaged copy's segment stays (said).
#[test]
fn a_content_spooled_twice_is_stored_once_and_a_damaged_copy_does_not_hide_a_good_one() {
    let (a, _) = two_versions();
    let hash = writer::digest(&a);
    for damaged in [false, true] {
        let t = tempfile::tempdir().unwrap();
        for _ in 0..2 {
            let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
            w.put(&hash, &a).unwrap();
        }
        let names = spool::segments(t.path()).unwrap();
        assert_eq!(names.len(), 2, "{names:?}");
        let first = t.path().join(SPOOL_DIR).join(&names[0]);
        if damaged {
            let s = spool::scan(&std::fs::File::open(&first).unwrap()).unwrap();
            let at = s.records[0].offset + 1000;
            let mut bytes = std::fs::read(&first).unwrap();
            bytes[at as usize] ^= 0xff;
            std::fs::write(&first, bytes).unwrap();
        }
        let r = Compactor::new(t.path()).pass().unwrap();
        assert_eq!(r.contents, 1, "damaged {damaged}: {r:?}");
        assert_eq!(r.raw_bytes, a.len() as u64, "damaged {damaged}: {r:?}");
        assert_eq!(read(t.path(), &a), a);
        let left = spool::segments(t.path()).unwrap();
        if damaged {
            assert_eq!(left, vec![names[0].clone()], "{r:?}");
            assert!(
                r.problems.len() == 1 && r.problems[0].contains("does not match its digest"),
                "{:?}",
                r.problems
            );
        } else {
            assert!(left.is_empty(), "{left:?}");
            assert!(r.problems.is_empty(), "{:?}", r.problems);
        }
    }
}

/// A chunk index or whole blob already at a spooled content's name that is no good copy of it
/// (a garbage index; a well-formed index naming a pack that is not there, or of another
/// length; a good index beside a whole blob of another length, which readers try first) does
/// not make compaction take the content for stored and drop its only good copy: the content
/// is stored over it and reads back.
#[test]
fn a_bad_index_or_blob_in_the_store_does_not_make_compaction_drop_the_spooled_copy() {
    let (a, _) = two_versions();
    let hash = writer::digest(&a);
    // Chunks of at most 64 KiB (within the chunker's maximum), adding up to `total`.
    let index = |total: usize, pack: &str| {
        let mut text = format!("cltrap-chunks 2\nsize {total}\npack {pack}\n");
        let (mut at, mut offset) = (0, 0);
        while at < total {
            let n = (total - at).min(1 << 16);
            text.push_str(&format!("{} {n} 0 {offset} {n}\n", "cd".repeat(32)));
            at += n;
            offset += n;
        }
        text
    };
    let missing_pack = index(a.len(), &"ab".repeat(32));
    assert!(cltrap_capture::chunks::parse_index(&missing_pack).is_ok());
    let other_length = index(a.len() - 1, &"ab".repeat(32));
    assert!(cltrap_capture::chunks::parse_index(&other_length).is_ok());
    let cases: [(&str, Option<String>, Option<Vec<u8>>); 4] = [
        ("garbage index", Some("garbage\n".into()), None),
        ("index naming a missing pack", Some(missing_pack), None),
        ("index of another length", Some(other_length), None),
        (
            "whole blob of another length",
            None,
            Some(a[..100].to_vec()),
        ),
    ];
    for (what, planted_index, planted_blob) in cases {
        let t = tempfile::tempdir().unwrap();
        let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
        w.put(&hash, &a).unwrap();
        drop(w);
        let index_path = writer::index_path(t.path(), &hash);
        std::fs::create_dir_all(index_path.parent().unwrap()).unwrap();
        if let Some(text) = &planted_index {
            std::fs::write(&index_path, text).unwrap();
        }
        if let Some(bytes) = &planted_blob {
            std::fs::write(writer::blob_path(t.path(), &hash), bytes).unwrap();
        }
        let r = Compactor::new(t.path()).pass().unwrap();
        assert_eq!((r.segments, r.contents), (1, 1), "{what}: {r:?}");
        assert!(spool::segments(t.path()).unwrap().is_empty());
        assert_eq!(read(t.path(), &a), a, "{what}");
    }
}

/// A part record of content `hash` (`total` bytes): 1 KiB of it from `at` on.
fn part_record(hash: &str, total: u64, at: u64) -> (Vec<u8>, Vec<u8>) {
    let bytes: Vec<u8> = (0..1024u64).map(|i| (at / 1024 * 7 + i) as u8).collect();
    let mut r = spool::PART_MAGIC.to_vec();
    for v in [total, at, 1024] {
        r.extend_from_slice(&v.to_le_bytes());
    }
    r.extend_from_slice(&bytes);
    r.extend_from_slice(hash.as_bytes());
    (r, bytes)
}

/// A segment, named after a writer that cannot run, of `n` part records of 1 KiB each that
/// cover a content of `n` KiB (plus `gap` bytes none of them holds) named `hash`.
fn parts_segment(dir: &Path, hash: &str, n: u64, gap: u64) -> Vec<u8> {
    let spool_dir = dir.join(SPOOL_DIR);
    std::fs::create_dir_all(&spool_dir).unwrap();
    let total = n * 1024 + gap;
    let mut seg = Vec::new();
    let mut content = Vec::new();
    for k in 0..n {
        let (record, bytes) = part_record(hash, total, k * 1024);
        seg.extend_from_slice(&record);
        content.extend_from_slice(&bytes);
    }
    let name = format!("{}-1-0.spool", i32::MAX - 1);
    std::fs::write(spool_dir.join(name), seg).unwrap();
    content
}

/// Parts of one content that leave a gap, in a segment of a writer that died and in one of a
/// writer that lives (pid 1): the first is dropped (said), the second kept for a later pass,
/// whichever is compacted first.
#[test]
fn parts_with_a_gap_are_dropped_for_a_dead_writer_and_kept_for_a_live_one() {
    let t = tempfile::tempdir().unwrap();
    let spool_dir = t.path().join(SPOOL_DIR);
    std::fs::create_dir_all(&spool_dir).unwrap();
    let hash = writer::digest(b"a content of three parts, one not written yet");
    // "0-…" (no writer) sorts before "1-…" (pid 1, which always runs).
    std::fs::write(spool_dir.join("0-1-0.spool"), part_record(&hash, 3072, 0).0).unwrap();
    std::fs::write(
        spool_dir.join("1-1-0.spool"),
        part_record(&hash, 3072, 1024).0,
    )
    .unwrap();
    let r = Compactor::new(t.path()).pass().unwrap();
    assert_eq!(r.segments, 1, "{r:?}");
    assert_one_gap_said(&r);
    assert_eq!(
        spool::segments(t.path()).unwrap(),
        vec!["1-1-0.spool".to_string()]
    );
}

/// Part records of one content are judged once per pass, however many there are: a content
/// whose 3 000 parts do not match its digest is one problem (not one per part, each putting
/// the whole content together again), and one whose parts leave a gap is one too.
#[test]
fn many_parts_of_one_bad_content_are_judged_once() {
    let t = tempfile::tempdir().unwrap();
    let wrong = writer::digest(b"not these bytes");
    let content = parts_segment(t.path(), &wrong, 3000, 0);
    assert_ne!(writer::digest(&content), wrong);
    let r = Compactor::new(t.path()).pass().unwrap();
    assert_eq!(
        r.problems.len(),
        1,
        "{:?}",
        &r.problems[..r.problems.len().min(3)]
    );
    assert!(r.problems[0].contains("cannot be read"), "{:?}", r.problems);
    assert_eq!((r.segments, r.contents), (0, 0), "{r:?}");

    let t = tempfile::tempdir().unwrap();
    parts_segment(t.path(), &wrong, 3000, 512);
    let r = Compactor::new(t.path()).pass().unwrap();
    assert_eq!(
        r.problems.len(),
        1,
        "{:?}",
        &r.problems[..r.problems.len().min(3)]
    );
    assert!(
        r.problems[0].contains("do not cover it"),
        "{:?}",
        r.problems
    );
    // Dropped with its segment, as parts left by a writer that died are.
    assert_eq!((r.segments, r.contents), (1, 0), "{r:?}");
}

/// Patch records on one stored base (buffers that started as one content, each changed in
/// its own place) read the base back once per worker thread at most (threads that start at
/// once may each read it), not once each, and each reads back. Twice as many records as
/// threads (at least 20), so that reading once each would pass the bound on any machine.
#[test]
fn patch_records_on_one_stored_base_read_it_back_once_per_thread_at_most() {
    let (a, _) = two_versions();
    let t = tempfile::tempdir().unwrap();
    let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
    w.put(&writer::digest(&a), &a).unwrap();
    w.seal();
    let first = Compactor::new(t.path()).pass().unwrap();
    assert_eq!((first.contents, first.segments), (1, 1), "{first:?}");
    let n = (2 * parallel::threads()).max(20);
    let stride = (a.len() - 4096) / n;
    assert!(stride >= 4096, "each record changes its own place");
    let versions: Vec<Vec<u8>> = (0..n)
        .map(|k| {
            let mut b = a.clone();
            for x in &mut b[k * stride..k * stride + 4096] {
                *x ^= 0x5a;
            }
            b
        })
        .collect();
    for b in &versions {
        let ranges = spool::changed_ranges(b, &a, region(&a, b));
        w.put_version(&writer::digest(b), b, &writer::digest(&a), &ranges)
            .unwrap();
    }
    drop(w);
    let r = Compactor::new(t.path()).pass().unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!((r.contents, r.patches), (n, n), "{r:?}");
    let most = parallel::threads();
    assert!(r.bases_read >= 1 && r.bases_read <= most, "{r:?}");
    for b in &versions {
        assert!(read(t.path(), b) == *b);
    }
}

/// The segments a pass holds locked are sealed for good: its reader opens each once however
/// many contents it looks for (here a content in parts with a gap in each of 30 segments,
/// each looked for in all of them).
#[test]
fn a_pass_opens_each_segment_it_holds_once() {
    let t = tempfile::tempdir().unwrap();
    let spool_dir = t.path().join(SPOOL_DIR);
    std::fs::create_dir_all(&spool_dir).unwrap();
    for i in 0..30u32 {
        let hash = writer::digest(&i.to_le_bytes());
        let name = format!("0-{i}-0.spool");
        std::fs::write(spool_dir.join(name), part_record(&hash, 3072, 0).0).unwrap();
    }
    let c = Compactor::new(t.path());
    let r = c.pass().unwrap();
    assert_eq!((r.segments, r.problems.len()), (30, 30), "{r:?}");
    let opened = c.contents.segments_opened();
    assert!(
        opened <= 60,
        "{opened} segment files opened for 30 segments"
    );
}

/// A content spooled whole in one segment and rebuilt from a patch in a later one (on
/// another base, spooled in between) is one chain with that base: stored once, by one
/// thread, and every segment dropped.
#[test]
fn a_content_spooled_whole_and_as_a_patch_elsewhere_is_stored_once() {
    let (a, b) = two_versions();
    let t = tempfile::tempdir().unwrap();
    let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
    w.put(&writer::digest(&b), &b).unwrap();
    w.seal();
    w.put(&writer::digest(&a), &a).unwrap();
    w.seal();
    let ranges = spool::changed_ranges(&b, &a, region(&a, &b));
    w.put_version(&writer::digest(&b), &b, &writer::digest(&a), &ranges)
        .unwrap();
    drop(w);
    let names = spool::segments(t.path()).unwrap();
    assert_eq!(names.len(), 3, "{names:?}");
    let last = spool::scan(&std::fs::File::open(t.path().join(SPOOL_DIR).join(&names[2])).unwrap())
        .unwrap();
    assert!(last.records[0].patch.is_some(), "not a patch record");
    let r = Compactor::new(t.path()).pass().unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!((r.segments, r.contents), (3, 2), "{r:?}");
    assert_eq!(read(t.path(), &a), a);
    assert_eq!(read(t.path(), &b), b);
}

/// A capture folder whose spool holds `n` sealed segments of one whole record each (contents
/// of 8 KiB and more, all different), with those contents in order.
fn segment_per_content(n: usize) -> (tempfile::TempDir, Vec<Vec<u8>>) {
    let t = tempfile::tempdir().unwrap();
    let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
    let contents: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let c = vec![(i % 251) as u8 + 1; (8 << 10) + i];
            w.put(&writer::digest(&c), &c).unwrap();
            w.seal();
            c
        })
        .collect();
    (t, contents)
}

/// More sealed segments than one round takes (each stays open until its round ends): one
/// pass still compacts them all.
#[test]
fn a_pass_compacts_more_segments_than_one_round_takes() {
    let (t, contents) = segment_per_content(SEGMENTS_PER_PASS + 20);
    assert_eq!(spool::segments(t.path()).unwrap().len(), contents.len());
    let r = Compactor::new(t.path()).pass().unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(
        (r.segments, r.contents),
        (contents.len(), contents.len()),
        "{r:?}"
    );
    assert!(spool::segments(t.path()).unwrap().is_empty());
    for c in &contents {
        assert_eq!(&read(t.path(), c), c);
    }
}

/// A round's worth of damaged segments (kept, each said) does not hold back the segments
/// written after them: the next round takes those.
#[test]
fn damaged_segments_do_not_hold_back_the_ones_after_them() {
    let (t, contents) = segment_per_content(SEGMENTS_PER_PASS + 5);
    let names = spool::segments(t.path()).unwrap();
    assert_eq!(names.len(), contents.len());
    for name in &names[..SEGMENTS_PER_PASS] {
        let path = t.path().join(SPOOL_DIR).join(name);
        let s = spool::scan(&std::fs::File::open(&path).unwrap()).unwrap();
        let at = s.records[0].offset as usize + 100;
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[at] ^= 0xff;
        std::fs::write(&path, bytes).unwrap();
    }
    let r = Compactor::new(t.path()).pass().unwrap();
    assert_eq!((r.segments, r.contents), (5, 5), "{r:?}");
    assert_eq!(
        r.problems.len(),
        SEGMENTS_PER_PASS,
        "{:?}",
        &r.problems[..3]
    );
    assert_eq!(
        spool::segments(t.path()).unwrap(),
        names[..SEGMENTS_PER_PASS].to_vec()
    );
    for c in &contents[SEGMENTS_PER_PASS..] {
        assert_eq!(&read(t.path(), c), c);
    }
}

/// A segment of more records than a scan reads is crowded (forged): said, kept, none of its
/// records stored; the segment beside it is compacted as usual.
#[test]
fn a_crowded_segment_is_kept_and_nothing_of_it_is_stored() {
    let t = tempfile::tempdir().unwrap();
    let w = SpoolWriter::new(t.path(), Access::PRIVATE, 0).unwrap();
    let many: Vec<Vec<u8>> = (0..6u8).map(|i| vec![i + 1; 9000]).collect();
    for c in &many {
        w.put(&writer::digest(c), c).unwrap();
    }
    w.seal();
    let alone = vec![99u8; 9000];
    w.put(&writer::digest(&alone), &alone).unwrap();
    drop(w);
    let names = spool::segments(t.path()).unwrap();
    assert_eq!(names.len(), 2, "{names:?}");
    let mut c = Compactor::new(t.path());
    c.segment_records_max = 5;
    let r = c.pass().unwrap();
    assert_eq!((r.segments, r.contents), (1, 1), "{r:?}");
    assert!(
        r.problems.len() == 1
            && r.problems[0].contains("records")
            && r.problems[0].contains("kept"),
        "{:?}",
        r.problems
    );
    assert_eq!(spool::segments(t.path()).unwrap(), vec![names[0].clone()]);
    assert!(!c.store.is_known(&writer::digest(&many[0])));
    assert_eq!(read(t.path(), &alone), alone);
}
