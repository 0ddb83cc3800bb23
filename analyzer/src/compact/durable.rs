//! Making what a compaction pass wrote durable before the pass drops its spool segments.

use super::CompactError;
use cltrap_capture::parallel;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Makes the files `written` (packs, indexes, blobs of capture folder `dir`) durable, with
/// the folders that name them and the manifest (a pass may have upgraded it). Each file's
/// data is written out and waited for (`sync_file_range`, several at once), then the file is
/// `fdatasync`ed: `sync_file_range` alone leaves a new file's size and blocks uncommitted
/// (its man page: no guarantee after a crash), and a folder's `fsync` commits them only on
/// filesystems with one global journal. With the data already on disk the `fdatasync`s
/// commit metadata only, and commits running at once coalesce. Then the folders are
/// `fsync`ed (the new names). Why not `syncfs`: it also wrote back the spool's segments,
/// gigabytes of pages about to be deleted (3 of a compaction's 4.4 s on an H200 host, 6 GB
/// spooled). Where `sync_file_range` is not offered (some network and FUSE filesystems),
/// the `fdatasync` does all of it. The compactor's heartbeat ([`cltrap_capture::spool::heartbeat`]) beats
/// after each file: syncing gigabytes takes seconds.
pub(super) fn sync_written(dir: &Path, written: Vec<PathBuf>) -> Result<(), CompactError> {
    let mut folders: std::collections::BTreeSet<PathBuf> = Default::default();
    for f in &written {
        // The file's folder, and the folder above it (`blobs/`), which a new one joined.
        for a in f.ancestors().skip(1).take(2) {
            if a.starts_with(dir) {
                folders.insert(a.to_path_buf());
            }
        }
    }
    folders.insert(dir.to_path_buf());
    let mut files = written;
    let manifest = dir.join("manifest.json");
    if manifest.is_file() {
        files.push(manifest);
    }
    let failed = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CompactError::Io { path, source }
    };
    parallel::for_each(files.len(), files.len() > 1, |i| {
        let path = &files[i];
        let f = std::fs::File::open(path).map_err(failed(path))?;
        let how = libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER;
        // SAFETY: sync_file_range on a descriptor we own, over the whole file.
        if unsafe { libc::sync_file_range(f.as_raw_fd(), 0, 0, how) } != 0 {
            let e = std::io::Error::last_os_error();
            // A filesystem without it (some network and FUSE ones): fdatasync alone does all.
            if !unsupported(&e) {
                return Err(failed(path)(e));
            }
        }
        // sync_file_range writes the data but none of the metadata that finds it again (a new
        // file's size and blocks): fdatasync commits that, and with the data already written
        // the commits of all files coalesce into few journal transactions.
        f.sync_data().map_err(failed(path))?;
        cltrap_capture::spool::heartbeat(dir);
        Ok(())
    })?;
    for d in &folders {
        match std::fs::File::open(d).and_then(|f| f.sync_all()) {
            Ok(()) => {}
            // A filesystem that cannot fsync a folder keeps its names itself.
            Err(e) if unsupported(&e) => {}
            Err(e) => return Err(failed(d)(e)),
        }
    }
    Ok(())
}

/// Whether `e` says the filesystem does not offer the call (not that it failed).
fn unsupported(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINVAL) | Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP) | Some(libc::ESPIPE)
    )
}
