//! How a capture's writer touches the file system, on a machine it may share with other users.
//!
//! Why: a capture directory can be prepared by someone else (a world-writable `cltrap-out/`
//! in a shared folder, with `launches.jsonl` a symbolic link to a file of the victim's, or a
//! FIFO). The writer runs inside the application, often as root, so it must never follow a
//! link it did not make, never block on something that is not a regular file, and never
//! write into a folder another user controls. The rules, all here:
//!
//! * the capture folder must belong to the user the process runs as (a symbolic link naming
//!   it too), be a folder, and be readable, writable and searchable by that user
//!   ([`judge_dir`]); folders inside it are made by the writer, never links;
//! * every file is opened with `O_NOFOLLOW | O_NONBLOCK` and checked to be a regular file
//!   with `fstat` before use ([`open_regular`]); new files are created with `O_EXCL`
//!   ([`write_new`]), under a temporary name, and renamed into place;
//! * files are made `0600` and folders `0700` unless the capture is shared ([`Access`]).

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Who may read what the writer creates: the capture holds the application's data, so by
/// default only its user (`CLTRAP_SHARE` / `--share` lets the umask decide, as other files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Access {
    /// Files `0644` and folders `0755` (less what the umask takes) instead of `0600`/`0700`.
    pub share: bool,
}

impl Access {
    /// Only the user the process runs as (the default).
    pub const PRIVATE: Access = Access { share: false };
    /// Readable by others as the umask allows.
    pub const SHARED: Access = Access { share: true };

    /// Mode of a new file.
    pub fn file_mode(self) -> u32 {
        if self.share {
            0o644
        } else {
            0o600
        }
    }

    /// Mode of a new folder.
    pub fn dir_mode(self) -> u32 {
        if self.share {
            0o755
        } else {
            0o700
        }
    }
}

/// What the writer needs to know of a folder to judge it (see [`judge_dir`]).
#[derive(Debug, Clone, Copy)]
pub struct DirFacts {
    /// It is a folder (after following the link, when it is one the user owns).
    pub is_dir: bool,
    /// Its owner.
    pub uid: u32,
    /// Its permission bits.
    pub mode: u32,
}

/// Why the writer refuses a folder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Another user owns it (or the link that names it): they could put links in it.
    #[error("it belongs to user {owner}, not to user {me} that this process runs as")]
    NotOwned { owner: u32, me: u32 },
    /// It is something other than a folder.
    #[error("it is not a folder")]
    NotDir,
    /// A folder inside the capture is a symbolic link (the writer makes real folders only).
    #[error("it is a symbolic link")]
    Link,
    /// Its owner cannot list, write and enter it, so the capture could not be read back.
    #[error("its owner cannot read, write and enter it (mode {mode:03o})")]
    NoAccess { mode: u32 },
}

/// Whether a folder with these facts may hold a capture written by user `me`: a folder,
/// owned by `me`, which `me` can read, write and enter (root reads whatever the bits say).
pub fn judge_dir(facts: DirFacts, me: u32) -> Result<(), Refusal> {
    if !facts.is_dir {
        return Err(Refusal::NotDir);
    }
    if facts.uid != me {
        return Err(Refusal::NotOwned {
            owner: facts.uid,
            me,
        });
    }
    if me != 0 && facts.mode & 0o700 != 0o700 {
        return Err(Refusal::NoAccess {
            mode: facts.mode & 0o7777,
        });
    }
    Ok(())
}

/// The effective user id of this process (who owns what it creates).
pub fn my_uid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

fn refused(path: &Path, why: Refusal) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        format!("refusing {}: {why}", path.display()),
    )
}

fn facts(m: &std::fs::Metadata) -> DirFacts {
    DirFacts {
        is_dir: m.is_dir(),
        uid: m.uid(),
        mode: m.mode(),
    }
}

/// Makes the capture folder `dir` (and missing parents, with `access`'s mode) and checks it
/// may hold a capture ([`judge_dir`]): when `dir` is a symbolic link, the link must belong to
/// this user too, and the folder it names is judged. Then lists it once, so a folder this
/// user cannot read back is refused here rather than found unreadable later.
pub fn ensure_capture_dir(dir: &Path, access: Access) -> std::io::Result<()> {
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(access.dir_mode())
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let me = my_uid();
    let link = std::fs::symlink_metadata(dir)?;
    if link.file_type().is_symlink() && link.uid() != me {
        return Err(refused(
            dir,
            Refusal::NotOwned {
                owner: link.uid(),
                me,
            },
        ));
    }
    let target = std::fs::metadata(dir)?;
    judge_dir(facts(&target), me).map_err(|why| refused(dir, why))?;
    std::fs::read_dir(dir)?;
    Ok(())
}

/// Makes the folder `root/rel` and every folder between (each with `access`'s mode) and
/// checks each is a real folder (not a link) of this user. `root` is a folder already judged
/// with [`ensure_capture_dir`]; `rel` is relative and made of plain names.
pub fn ensure_subdirs(root: &Path, rel: &Path, access: Access) -> std::io::Result<()> {
    let me = my_uid();
    let mut at = root.to_path_buf();
    for part in rel.components() {
        let std::path::Component::Normal(name) = part else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{} is not a plain relative path", rel.display()),
            ));
        };
        at.push(name);
        match std::fs::DirBuilder::new()
            .mode(access.dir_mode())
            .create(&at)
        {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let m = std::fs::symlink_metadata(&at)?;
        if m.file_type().is_symlink() {
            return Err(refused(&at, Refusal::Link));
        }
        judge_dir(facts(&m), me).map_err(|why| refused(&at, why))?;
    }
    Ok(())
}

pub use crate::safe_open::{open_regular, read_regular, Open};

/// Whether `path` is a regular file (a link, even to one, is not: it is replaced, not
/// trusted, when the writer stores the file).
pub fn is_regular(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

/// Writes `bytes` as the file `path`: into a new file (`O_EXCL`, `access`'s mode) under a
/// temporary name in the same folder, then renamed over `path` (a link there is replaced,
/// never followed), so a reader never sees half of it.
pub fn write_new(path: &Path, bytes: &[u8], access: Access) -> std::io::Result<()> {
    write_new_then(path, bytes, access, |_| {})
}

/// [`write_new`], calling `written` with the new file once its bytes are in it (before it is
/// renamed): a compactor starts the file's write-back there.
pub fn write_new_then(
    path: &Path,
    bytes: &[u8],
    access: Access,
    written: impl FnOnce(&std::fs::File),
) -> std::io::Result<()> {
    static N: AtomicU64 = AtomicU64::new(0);
    let parent = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut tries = 0;
    let tmp = loop {
        tries += 1;
        let n = N.fetch_add(1, Ordering::Relaxed);
        let tmp = parent.join(format!(".tmp-{}-{}-{}", std::process::id(), n, name));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(access.file_mode())
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(mut f) => {
                let done = f.write_all(bytes);
                if let Err(e) = done {
                    drop(f);
                    let _ = std::fs::remove_file(&tmp);
                    return Err(e);
                }
                written(&f);
                drop(f);
                break tmp;
            }
            // Names taken by someone else: try the next, but not for ever.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 1000 => continue,
            Err(e) => return Err(e),
        }
    };
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(uid: u32, mode: u32) -> DirFacts {
        DirFacts {
            is_dir: true,
            uid,
            mode,
        }
    }

    #[test]
    fn only_an_own_usable_folder_is_accepted() {
        assert_eq!(judge_dir(dir(1000, 0o40700), 1000), Ok(()));
        assert_eq!(judge_dir(dir(1000, 0o40777), 1000), Ok(()));
        // Another user's folder, world-writable or not; root is refused another's folder too.
        assert_eq!(
            judge_dir(dir(1001, 0o40777), 1000),
            Err(Refusal::NotOwned {
                owner: 1001,
                me: 1000
            })
        );
        assert_eq!(
            judge_dir(dir(1000, 0o40777), 0),
            Err(Refusal::NotOwned { owner: 1000, me: 0 })
        );
        assert_eq!(judge_dir(dir(0, 0o40000), 0), Ok(()));
        // Its owner could not read it back.
        assert_eq!(
            judge_dir(dir(1000, 0o40300), 1000),
            Err(Refusal::NoAccess { mode: 0o300 })
        );
        let file = DirFacts {
            is_dir: false,
            uid: 1000,
            mode: 0o100600,
        };
        assert_eq!(judge_dir(file, 1000), Err(Refusal::NotDir));
    }

    #[test]
    fn links_and_fifos_are_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("target");
        std::fs::write(&target, b"secret").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for how in [Open::Read, Open::ReadWrite, Open::Append] {
            let e = open_regular(&link, how, Access::PRIVATE).unwrap_err();
            assert!(e.to_string().contains("symbolic link"), "{e}");
        }
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for how in [Open::Read, Open::ReadWrite, Open::Append] {
            let e = open_regular(&fifo, how, Access::PRIVATE).unwrap_err();
            assert!(
                e.to_string().contains("not a regular file") || e.raw_os_error().is_some(),
                "{e}"
            );
        }
        assert_eq!(std::fs::read(&target).unwrap(), b"secret");
        // A link where a file is stored is replaced, not written through.
        write_new(&link, b"mine", Access::PRIVATE).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"secret");
        assert!(is_regular(&link));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&link).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn folders_inside_must_not_be_links() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("cap");
        ensure_capture_dir(&root, Access::PRIVATE).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&root).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("blobs")).unwrap();
        let e = ensure_subdirs(&root, Path::new("blobs/ab"), Access::PRIVATE).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(!elsewhere.join("ab").exists());
        let e = ensure_subdirs(&root, Path::new("../x"), Access::PRIVATE).unwrap_err();
        assert!(e.to_string().contains("plain relative"), "{e}");
    }
}
