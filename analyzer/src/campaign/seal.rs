//! Seals on a campaign journal's lines: a keyed digest of each line with a key only this user
//! holds, so `--resume`, `cltrap merge` and mutate's test-case journals take results only
//! from journals this user's cltrap wrote.
//!
//! Why: a campaign folder sits inside the capture by default, and a capture comes from
//! anywhere. A journal that came with it could otherwise claim any result (mutants killed,
//! launches that replayed), and a resumed run would report them as its own.
//!
//! The key: 32 random bytes in `$CLTRAP_JOURNAL_KEY` (a file), else
//! `$XDG_STATE_HOME/cltrap/journal.key` (an absolute one), else
//! `~/.local/state/cltrap/journal.key`; made when first needed (mode 0600, in a folder of
//! mode 0700), refused when it is a link, not this user's, or readable by others. Machines
//! that share the home folder (a cluster's nodes) share it; on others, copy it. Where no key
//! can be read or made, a key of this process alone is used (said once): its journals cannot
//! be resumed or merged by another run.
//!
//! A sealed line is the line as written before, with `"seal":"<64 hex digits>",` put after
//! its opening brace; the seal is the key's blake3 keyed hash of its *context* and the line
//! without it. A journal's header is sealed in no context and carries a random id; each
//! result line is sealed in the context of its header's seal, so lines cannot be moved from
//! one journal into another.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::OnceLock;

/// Where the key is given explicitly.
pub const KEY_ENV: &str = "CLTRAP_JOURNAL_KEY";

/// The prefix a sealed line starts with.
const PREFIX: &str = "{\"seal\":\"";

/// A journal key.
pub struct Seal {
    key: [u8; 32],
}

impl Seal {
    /// The key of this process: the user's (loaded or made once), else one of this process
    /// alone, said once on stderr.
    pub fn get() -> &'static Seal {
        static SEAL: OnceLock<Seal> = OnceLock::new();
        SEAL.get_or_init(|| {
            let user = match key_path() {
                Some(path) => load_or_make(&path).map_err(|e| format!("{}: {e}", path.display())),
                None => Err(format!(
                    "neither {KEY_ENV}, an absolute XDG_STATE_HOME nor HOME is set"
                )),
            };
            let key = user.unwrap_or_else(|why| {
                eprintln!(
                    "cltrap: no journal key ({why}); this run's campaign journals cannot be resumed or merged by another run"
                );
                fresh_bytes()
            });
            Seal { key }
        })
    }

    /// The seal of a sealed line (None: it has none): the context of the result lines that
    /// follow a journal's header.
    pub fn of(line: &str) -> Option<&str> {
        line.strip_prefix(PREFIX)?.get(..64)
    }

    /// The keyed hash of `line` in `context`.
    fn mac(&self, context: &str, line: &str) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(&self.key);
        h.update(context.as_bytes());
        h.update(&[0]);
        h.update(line.as_bytes());
        h.finalize()
    }

    /// `line` (one JSON object, no newline) sealed in `context`.
    pub fn seal(&self, context: &str, line: &str) -> String {
        let mac = self.mac(context, line).to_hex();
        match line.strip_prefix('{') {
            Some("}") | None => format!("{PREFIX}{mac}\"}}"),
            Some(rest) => format!("{PREFIX}{mac}\",{rest}"),
        }
    }

    /// Whether `line` (no newline) carries this key's seal in `context`.
    pub fn check(&self, context: &str, line: &str) -> bool {
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
        let want = self.mac(context, &unsealed);
        blake3::Hash::from_hex(mac).is_ok_and(|got| got == want)
    }
}

/// Where the key lives ([`KEY_ENV`], else the XDG state folder, else `~/.local/state`; a
/// relative XDG_STATE_HOME is ignored, as the XDG specification says).
fn key_path() -> Option<PathBuf> {
    let set = |v: &str| {
        std::env::var_os(v)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = set(KEY_ENV) {
        return Some(p);
    }
    let state = set("XDG_STATE_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| set("HOME").map(|h| h.join(".local/state")))?;
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
    let key = random_key()?;
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

/// 32 bytes no other process comes by: random, or (without randomness from the kernel) a
/// digest of this process's id and the time. A run-only key, and a journal's id.
pub(super) fn fresh_bytes() -> [u8; 32] {
    random_key().unwrap_or_else(|_| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        *blake3::hash(format!("{}-{t}", std::process::id()).as_bytes()).as_bytes()
    })
}

/// 32 random bytes from the kernel: the user's key.
fn random_key() -> std::io::Result<[u8; 32]> {
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
    Ok(key)
}

/// The key at `path`: a regular file (not a link) of this user, readable by no one else,
/// of exactly 32 bytes.
fn read_key(path: &std::path::Path) -> std::io::Result<[u8; 32]> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        // Not through a link, and never waiting on a FIFO planted at its name.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
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
        let sealed = s.seal("h", line);
        assert!(sealed.starts_with(PREFIX));
        assert!(s.check("h", &sealed));
        let v: serde_json::Value = serde_json::from_str(&sealed).expect("still JSON");
        assert_eq!(v["unit"], "a");
        assert!(!s.check("h", &sealed.replace("true", "false")));
        assert!(!s.check("h", line), "an unsealed line");
        assert!(!s.check("other", &sealed), "a line of another journal");
        assert!(
            !Seal { key: [8; 32] }.check("h", &sealed),
            "another key's seal"
        );
        assert!(s.check("", &s.seal("", "{}")));
        assert_eq!(Seal::of(&sealed).map(str::len), Some(64));
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
