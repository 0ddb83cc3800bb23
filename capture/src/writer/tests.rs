//! The capture writer against real folders: blobs, chunked contents, launch ids shared
//! between processes, continuing and upgrading captures, partial last lines.

use super::*;
use crate::tests::launch;
use std::os::unix::fs::PermissionsExt;

fn manifest() -> Manifest {
    Manifest {
        format: crate::FORMAT_NAME.into(),
        version: crate::FORMAT_VERSION,
        writer: "test".into(),
        pid: 1,
        argv: vec![],
        started_unix: 0,
        buffer_mode: "full".into(),
    }
}

/// A store asked to keep the list names every file it wrote, once; one not asked names
/// none.
#[test]
fn a_tracking_store_lists_the_files_it_wrote() {
    let t = tempfile::tempdir().unwrap();
    let quiet = BlobStore::new(t.path());
    quiet.put(b"not listed").unwrap();
    assert!(quiet.take_written().is_empty());
    let store = BlobStore::new(t.path());
    store.track_written();
    let small = store.put(b"a small blob").unwrap();
    let big: Vec<u8> = (0..1u32 << 20)
        .map(|i| (i.wrapping_mul(2654435761) >> 7) as u8)
        .collect();
    store.put_content(&digest(&big), &big).unwrap();
    let written = store.take_written();
    assert!(
        written.contains(&blob_path(t.path(), &small)),
        "{written:?}"
    );
    assert!(
        written.contains(&index_path(t.path(), &digest(&big))),
        "{written:?}"
    );
    assert!(
        written
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "pack")),
        "{written:?}"
    );
    assert!(written.iter().all(|p| p.is_file()), "{written:?}");
    assert!(store.take_written().is_empty(), "listed twice");
}

/// A content far larger than a group goes into several packs, each bounded by a group
/// and a batch, and reads back whole: one pack per content held the whole content
/// encoded in memory twice more.
#[test]
fn a_large_batched_content_is_stored_in_bounded_packs() {
    let t = tempfile::tempdir().unwrap();
    let w = CaptureWriter::create(t.path(), &manifest()).unwrap();
    let bytes = crate::chunks::tests::noise(3 * GROUP_RAW_MAX + 12345, 7);
    let hash = digest(&bytes);
    let cuts = crate::parallel::cut_and_hash(&bytes);
    let mut batch = PackBatch::default();
    w.blobs
        .put_content_batched(&mut batch, &hash, &bytes, &cuts)
        .unwrap();
    w.blobs.flush_batch(&mut batch).unwrap();
    let mut packs = Vec::new();
    for d in fs::read_dir(t.path().join("blobs")).unwrap().flatten() {
        for f in fs::read_dir(d.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "pack") {
                packs.push(f.metadata().unwrap().len() as usize);
            }
        }
    }
    assert!(packs.len() >= 3, "{packs:?}");
    let bound = GROUP_RAW_MAX + BATCH_MAX + crate::chunks::CHUNK_MAX + 4096;
    assert!(packs.iter().all(|&n| n <= bound), "{packs:?} over {bound}");
    drop(w);
    let c = crate::Capture::open(t.path()).unwrap();
    assert!(c.blob(&hash).unwrap() == bytes);
}

/// A content that repeats its chunks (a periodic signal) reads back whole, each distinct
/// chunk decoded once; a damaged chunk it repeats is still found.
#[test]
fn a_content_repeating_its_chunks_reads_back_and_a_damaged_one_is_found() {
    let t = tempfile::tempdir().unwrap();
    let w = CaptureWriter::create(t.path(), &manifest()).unwrap();
    let period = crate::chunks::tests::noise(3 << 20, 11);
    let mut bytes = Vec::new();
    for _ in 0..4 {
        bytes.extend_from_slice(&period);
    }
    let hash = digest(&bytes);
    let cuts = crate::parallel::cut_and_hash(&bytes);
    let distinct: std::collections::HashSet<_> = cuts.iter().map(|c| c.hash.clone()).collect();
    assert!(
        distinct.len() * 2 < cuts.len(),
        "{} of {}",
        distinct.len(),
        cuts.len()
    );
    let mut batch = PackBatch::default();
    w.blobs
        .put_content_batched(&mut batch, &hash, &bytes, &cuts)
        .unwrap();
    w.blobs.flush_batch(&mut batch).unwrap();
    drop(w);
    let c = crate::Capture::open(t.path()).unwrap();
    assert!(c.blob(&hash).unwrap() == bytes);
    // One byte of every pack flipped in the middle: a chunk used four times is damaged.
    for d in fs::read_dir(t.path().join("blobs")).unwrap().flatten() {
        for f in fs::read_dir(d.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "pack") {
                let mut p = fs::read(f.path()).unwrap();
                let mid = p.len() / 2;
                p[mid] ^= 0x55;
                fs::write(f.path(), p).unwrap();
            }
        }
    }
    let c = crate::Capture::open(t.path()).unwrap();
    let err = c.blob(&hash).err().expect("a damaged chunk is found");
    assert!(
        matches!(err, crate::reader::ReadError::DamagedBlob { .. }),
        "{err}"
    );
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_capture_is_private_unless_shared() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("cap");
    let w = CaptureWriter::create(&dir, &manifest()).unwrap();
    w.enable_journal().unwrap();
    let hash = w.blobs.put(b"the application's data").unwrap();
    w.blobs
        .put_content(&digest(&[7u8; 20000]), &[7u8; 20000])
        .unwrap();
    w.append(launch(&hash)).unwrap();
    for d in [
        dir.clone(),
        dir.join("blobs"),
        blob_path(&dir, &hash).parent().unwrap().to_path_buf(),
    ] {
        assert_eq!(mode(&d), 0o700, "{}", d.display());
    }
    let mut files = vec![
        dir.join("manifest.json"),
        dir.join(crate::LAUNCHES_FILE),
        blob_path(&dir, &hash),
    ];
    files.extend(crate::journal::journals(&dir));
    for f in &files {
        assert_eq!(mode(f), 0o600, "{}", f.display());
    }
    drop(w);
    let shared = t.path().join("shared");
    // SAFETY: umask only changes this process's creation mask; 022 is the usual one.
    let old = unsafe { libc::umask(0o022) };
    let w = CaptureWriter::create_with(&shared, &manifest(), Access::SHARED).unwrap();
    let hash = w.blobs.put(b"shared data").unwrap();
    unsafe { libc::umask(old) };
    assert_eq!(mode(&shared), 0o755);
    assert_eq!(mode(&blob_path(&shared, &hash)), 0o644);
}

#[test]
fn a_newer_or_foreign_manifest_is_refused_and_left_alone() {
    let t = tempfile::tempdir().unwrap();
    for text in [
        r#"{"format":"cltrap-capture","version":8,"writer":"x","pid":1,"argv":[],"started_unix":0,"buffer_mode":"full"}"#,
        r#"{"format":"something-else","version":1}"#,
        "not json",
    ] {
        let dir = t.path().join(format!("cap{}", text.len()));
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("manifest.json"), text).unwrap();
        let e = CaptureWriter::create(&dir, &manifest())
            .err()
            .expect("refused");
        assert!(matches!(e, WriteError::Foreign { .. }), "{e}");
        assert!(e.to_string().contains("manifest.json"), "{e}");
        assert_eq!(fs::read_to_string(dir.join("manifest.json")).unwrap(), text);
        assert!(!dir.join(crate::LAUNCHES_FILE).exists());
        assert!(!dir.join("blobs").exists());
    }
}

#[test]
fn links_and_fifos_in_the_capture_are_never_followed_or_waited_on() {
    let t = tempfile::tempdir().unwrap();
    let victim = t.path().join("victim");
    fs::write(&victim, b"precious\n").unwrap();
    for name in [
        crate::LAUNCHES_FILE,
        IDS_FILE,
        WRITERS_FILE,
        "manifest.json",
    ] {
        let dir = t.path().join(format!("link-{name}"));
        fs::create_dir(&dir).unwrap();
        std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
        let made = CaptureWriter::create(&dir, &manifest()).map(|w| {
            let h = w.blobs.put(b"x").unwrap();
            w.append(launch(&h)).map(|_| ())
        });
        // A manifest link is replaced by the writer's own manifest; other links refuse.
        if name != "manifest.json" {
            assert!(made.is_err(), "{name}: a link was accepted");
        }
        assert_eq!(fs::read(&victim).unwrap(), b"precious\n", "{name}");
    }
    // A FIFO as the log: refused at once (a blocking open would hang here for ever).
    let dir = t.path().join("fifo");
    fs::create_dir(&dir).unwrap();
    let c = std::ffi::CString::new(
        dir.join(crate::LAUNCHES_FILE)
            .into_os_string()
            .into_encoded_bytes(),
    )
    .unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = CaptureWriter::create(&dir, &manifest())
        .err()
        .expect("refused");
    assert!(e.to_string().contains("not a regular file"), "{e}");
    // The blobs folder a link elsewhere: nothing lands there.
    let dir = t.path().join("blobs-link");
    let elsewhere = t.path().join("elsewhere");
    fs::create_dir_all(&dir).unwrap();
    fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("blobs")).unwrap();
    assert!(CaptureWriter::create(&dir, &manifest()).is_err());
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
}
