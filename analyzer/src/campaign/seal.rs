//! Seals on a campaign journal's lines: a keyed digest of each line with a key only this user
//! holds, so `--resume`, `cltrap merge` and mutate's test-case journals take results only
//! from journals this user's cltrap wrote.
//!
//! Why: a campaign folder sits inside the capture by default, and a capture comes from
//! anywhere. A journal that came with it could otherwise claim any result (mutants killed,
//! launches that replayed), and a resumed run would report them as its own.
//!
//! The key: 32 random bytes in `$CLTRAP_JOURNAL_KEY` (a file), else
//! `$XDG_STATE_HOME/cltrap/journal.key`, else `~/.local/state/cltrap/journal.key`; made
//! when first needed (mode 0600, in a folder of mode 0700), refused when it is a link, not
//! this user's, or readable by others. Machines that share the home folder (a cluster's
//! nodes) share it; on others, copy it.
//!
//! A sealed line is the line as written before, with `"seal":"<64 hex digits>",` put after
//! its opening brace; the seal is the key's blake3 keyed hash of the line without it.

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::OnceLock;

/// Where the key is given explicitly.
pub const KEY_ENV: &str = "CLTRAP_JOURNAL_KEY";

/// The prefix a sealed line starts with.
const PREFIX: &str = "{\"seal\":\"";

/// This user's journal key.
pub struct Seal {
    key: [u8; 32],
}

impl Seal {
    /// The key of this process (loaded or made once); Err: why there is none.
    pub fn get() -> Result<&'static Seal, String> {
        static SEAL: OnceLock<Result<Seal, String>> = OnceLock::new();
        SEAL.get_or_init(|| {
            let path = key_path().ok_or_else(|| {
                format!("no journal key: neither {KEY_ENV}, XDG_STATE_HOME nor HOME is set")
            })?;
            load_or_make(&path)
                .map(|key| Seal { key })
                .map_err(|e| format!("no journal key: {}: {e}", path.display()))
        })
        .as_ref()
        .map_err(Clone::clone)
    }

    /// `line` (one JSON object, no newline) sealed.
    pub fn seal(&self, line: &str) -> String {
        let mac = blake3::keyed_hash(&self.key, line.as_bytes()).to_hex();
        match line.strip_prefix('{') {
            Some("}") | None => format!("{PREFIX}{mac}\"}}"),
            Some(rest) => format!("{PREFIX}{mac}\",{rest}"),
        }
    }

    /// Whether `line` (no newline) carries this key's seal.
    pub fn check(&self, line: &str) -> bool {
        let Some(rest) = line.strip_prefix(PREFIX) else {
            return false;
        };
        let (Some(mac), Some(after)) = (rest.get(..64), rest.get(64..)) else {
            return false;
        };
        let unsealed = match after {
            "\"}" => "{}".to_string(),
            _ => match after.strip_prefix("\",") {
                Some(body) => format!("{{{body}"),
                None => return false,
            },
        };
        let want = blake3::keyed_hash(&self.key, unsealed.as_bytes());
        blake3::Hash::from_hex(mac).is_ok_and(|got| got == want)
    }
}

/// Where the key lives ([`KEY_ENV`], else the XDG state folder, else `~/.local/state`).
fn key_path() -> Option<PathBuf> {
    let set = |v: &str| {
        std::env::var_os(v)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = set(KEY_ENV) {
        return Some(p);
    }
    let state = set("XDG_STATE_HOME").or_else(|| set("HOME").map(|h| h.join(".local/state")))?;
    Some(state.join("cltrap").join("journal.key"))
}

/// Reads the key at `path`, making it first when there is none.
fn load_or_make(path: &std::path::Path) -> std::io::Result<[u8; 32]> {
    match read_key(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        other => return other,
    }
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut key = [0u8; 32];
    let mut got = 0;
    while got < key.len() {
        // SAFETY: writes at most the rest of `key`'s bytes.
        let n = unsafe { libc::getrandom(key[got..].as_mut_ptr().cast(), key.len() - got, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        got += n as usize;
    }
    // Written aside and linked to its name only if none is there: two processes making it
    // at once both end up with the one that won.
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)?;
    tmp.write_all(&key)?;
    tmp.as_file().sync_all()?;
    match tmp.persist_noclobber(path) {
        Ok(_) => Ok(key),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => read_key(path),
        Err(e) => Err(e.error),
    }
}

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};

/// The key at `path`: a regular file (not a link) of this user, readable by no one else,
/// of exactly 32 bytes.
fn read_key(path: &std::path::Path) -> std::io::Result<[u8; 32]> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let m = f.metadata()?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let refused = |why: &str| std::io::Error::other(format!("the key file is refused: {why}"));
    if !m.is_file() {
        return Err(refused("not a regular file"));
    }
    if m.uid() != me {
        return Err(refused("it belongs to another user"));
    }
    if m.mode() & 0o077 != 0 {
        return Err(refused("others may read or write it (chmod 600)"));
    }
    let mut key = [0u8; 32];
    let mut rest = Vec::new();
    f.read_exact(&mut key)?;
    f.read_to_end(&mut rest)?;
    if !rest.is_empty() {
        return Err(refused("it is not 32 bytes"));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_line_checks_and_any_change_breaks_its_seal() {
        let s = Seal { key: [7; 32] };
        let line = r#"{"unit":"a","device":"d","millis":3,"result":{"killed":true}}"#;
        let sealed = s.seal(line);
        assert!(sealed.starts_with(PREFIX));
        assert!(s.check(&sealed));
        let v: serde_json::Value = serde_json::from_str(&sealed).expect("still JSON");
        assert_eq!(v["unit"], "a");
        assert!(!s.check(&sealed.replace("true", "false")));
        assert!(!s.check(line), "an unsealed line");
        assert!(!Seal { key: [8; 32] }.check(&sealed), "another key's seal");
        assert!(s.check(&s.seal("{}")));
    }

    #[test]
    fn a_key_is_made_once_private_and_refused_when_others_may_read_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("state/cltrap/journal.key");
        let made = load_or_make(&path).expect("made");
        assert_eq!(load_or_make(&path).expect("read back"), made);
        let mode = std::fs::metadata(&path).expect("key").mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let e = load_or_make(&path).expect_err("readable by others");
        assert!(e.to_string().contains("chmod 600"), "{e}");
    }
}
