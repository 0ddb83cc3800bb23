//! Folders of `cltrap check` that other users of the machine must not be able to prepare,
//! read or redirect: the Oclgrind vendors folder of a run (a fresh temporary folder) and the
//! native engine's cache of instrumented sources (under the user's own cache folder).
//!
//! Why a module of its own: `check` often runs as root on shared machines; a folder at a
//! predictable path in `/tmp` lets another user plant an `.icd` file (a library loaded into
//! the check's child) or a cached "instrumented" source (code compiled and run, findings
//! faked), or a link that makes the check write over a file of theirs choosing.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A fresh folder for one run: created exclusively (a name nobody could prepare), mode 0700,
/// removed when dropped.
pub fn temp_dir(prefix: &str) -> std::io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

/// The effective user id of this process.
fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Makes `path` (whose parent exists) a folder private to user `uid`, or says why it cannot
/// be used: created with mode 0700 when missing; an existing one must be a real folder (not a
/// link) owned by `uid`, and loses any group or other permissions it had.
pub fn private_folder(path: &Path, uid: u32) -> Result<(), String> {
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", path.display())),
    }
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| format!("cannot inspect {}: {e}", path.display()))?;
    if !meta.file_type().is_dir() {
        return Err(format!(
            "{} is not a folder (a link or a file): not used",
            path.display()
        ));
    }
    if meta.uid() != uid {
        return Err(format!(
            "{} belongs to user {}, not to user {uid}: not used",
            path.display(),
            meta.uid()
        ));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("cannot make {} private: {e}", path.display()))?;
    }
    Ok(())
}

/// The native engine's cache of instrumented sources: `CLTRAP_NATIVE_CACHE` when set, else
/// `cltrap/native` under the user's cache folder (`$XDG_CACHE_HOME`, `~/.cache`), each level
/// of it private to this user ([`private_folder`]). `Err` says why there is none this run
/// (the check then instruments without a cache).
pub fn native_cache_dir() -> Result<PathBuf, String> {
    let uid = euid();
    if let Some(dir) = std::env::var_os("CLTRAP_NATIVE_CACHE") {
        let dir = PathBuf::from(dir);
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        private_folder(&dir, uid)?;
        return Ok(dir);
    }
    private_cache_dir("native")
}

/// `cltrap/<name>` under the user's cache folder (`$XDG_CACHE_HOME`, `~/.cache`), each level
/// of it private to this user ([`private_folder`]): where cltrap keeps what must not sit at a
/// predictable path in `/tmp` (another user could prepare it).
pub fn private_cache_dir(name: &str) -> Result<PathBuf, String> {
    let uid = euid();
    let base = dirs::cache_dir().ok_or("the user has no cache folder ($XDG_CACHE_HOME, $HOME)")?;
    std::fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
    let root = base.join("cltrap");
    private_folder(&root, uid)?;
    let dir = root.join(name);
    private_folder(&dir, uid)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_folder_is_made_0700_and_a_link_or_a_stranger_s_folder_is_refused() {
        let t = tempfile::tempdir().expect("temporary folder");
        let me = euid();
        let fresh = t.path().join("fresh");
        private_folder(&fresh, me).expect("created");
        let mode = std::fs::metadata(&fresh).expect("exists").mode() & 0o777;
        assert_eq!(mode, 0o700);
        // An existing folder of ours that others could read is made private.
        let open = t.path().join("open");
        std::fs::create_dir(&open).expect("mkdir");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        private_folder(&open, me).expect("ours");
        assert_eq!(
            std::fs::metadata(&open).expect("exists").mode() & 0o777,
            0o700
        );
        // A link to a folder, even one of ours, is not used.
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&fresh, &link).expect("symlink");
        let err = private_folder(&link, me).expect_err("a link");
        assert!(err.contains("not a folder"), "{err}");
        // A folder owned by another user (checked as another uid: no root needed).
        let err = private_folder(&fresh, me.wrapping_add(1)).expect_err("a stranger's");
        assert!(err.contains("belongs to user"), "{err}");
    }

    #[test]
    fn a_temporary_folder_is_fresh_private_and_removed() {
        let a = temp_dir("cltrap-check-").expect("made");
        let b = temp_dir("cltrap-check-").expect("made");
        assert_ne!(a.path(), b.path());
        assert_eq!(
            std::fs::metadata(a.path()).expect("exists").mode() & 0o777,
            0o700
        );
        let p = a.path().to_path_buf();
        drop(a);
        assert!(!p.exists());
    }
}
