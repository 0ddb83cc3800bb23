//! The campaign's journal, `units.jsonl` in the campaign folder: a header line saying which
//! command (and shard) it belongs to, then one [`Finished`] line per unit as it finishes.
//!
//! Append-only, one `write` per line: a campaign killed at any moment leaves whole lines and
//! at most a torn last line, which reading ignores. `--resume` reads it back and skips the
//! units it holds; `cltrap merge` reads the shards' journals. A journal is input from disk:
//! a line that does not parse is skipped, and lines are bounded in size. Every line is sealed
//! with this user's journal key ([`Seal`]): a journal whose header carries no such seal is
//! refused, and result lines without one are left out (counted).

use super::seal::Seal;
use super::{Finished, Shard};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// The journal's file name inside a campaign folder.
pub const FILE: &str = "units.jsonl";
/// Longest line read back (a unit's result is a report fragment, not bulk data).
const MAX_LINE: u64 = 64 << 20;

/// What the journal belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Format version of the journal.
    pub cltrap_campaign: u32,
    /// The command line after `cltrap`, without the campaign flags.
    pub args: Vec<String>,
    /// The folder relative paths in `args` are relative to.
    pub cwd: PathBuf,
    /// [`super::args::fingerprint`] of `args`.
    pub fingerprint: String,
    /// The shard this journal holds, if the run was one.
    pub shard: Option<Shard>,
    /// How many units the whole campaign has.
    pub units: usize,
}

impl Header {
    /// The recorded command line for a message, its control characters escaped: a journal
    /// that came with a capture could otherwise rewrite the terminal's lines.
    pub fn shown_args(&self) -> String {
        crate::list::escape_controls(&self.args.join(" "))
    }
}

/// A journal read back.
#[derive(Debug)]
pub struct Journal {
    /// Its header.
    pub header: Header,
    /// Finished units by id (the last line wins when a unit was written twice).
    pub finished: BTreeMap<String, Finished>,
    /// Result lines left out because they carry no seal of this user's key ([`Seal`]).
    pub refused: usize,
}

/// Errors of reading a journal, as one sentence each.
#[derive(Debug)]
pub enum JournalError {
    /// The folder has no journal.
    Missing(PathBuf),
    /// The file cannot be read or its header is not one.
    Unreadable(PathBuf, String),
    /// Its header carries no seal of this user's journal key ([`Seal`]).
    Foreign(PathBuf),
}

impl std::fmt::Display for JournalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JournalError::Missing(p) => write!(f, "{} has no campaign journal", p.display()),
            JournalError::Unreadable(p, why) => {
                write!(f, "cannot read the campaign journal {}: {why}", p.display())
            }
            JournalError::Foreign(p) => write!(
                f,
                "the campaign journal {} was not written by your cltrap (it carries no seal of your journal key: it came from elsewhere, or from a cltrap older than seals), so its results are not used",
                p.display()
            ),
        }
    }
}

/// Makes `path` hold `bytes`: a new file of a name no one else can have made (`O_EXCL`, in
/// `path`'s folder) renamed over it. Why: a campaign folder sits in a capture, which may come
/// from elsewhere; a file written in place (or a fixed temporary name) would be written
/// through a link planted there, into a file outside the campaign.
pub fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace_file_with_mode(path, bytes, None)
}

/// [`replace_file`] with the new file's mode set before it takes the name (`None`: the old
/// file's, else 0666 less the umask), so nothing is done through the name afterwards.
pub fn replace_file_with_mode(path: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // The mode a file written in place had: the old file's, else what `File::create` gives
    // (0666 less the umask, which the kernel applies to the new file's mode).
    let old = mode.or_else(|| {
        std::fs::metadata(path)
            .ok()
            .map(|m| m.permissions().mode() & 0o777)
    });
    let mut tmp = tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(old.unwrap_or(0o666)))
        .tempfile_in(dir)?;
    if let Some(mode) = old {
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Reads the journal in `dir`.
pub fn read(dir: &Path) -> Result<Journal, JournalError> {
    let path = dir.join(FILE);
    // A journal travels with a capture (`campaigns/`): not through a link, and never a FIFO
    // that would block the read (a regular file is required).
    let file = cltrap_capture::safe_open::open_regular(
        &path,
        cltrap_capture::safe_open::Open::Read,
        cltrap_capture::writer_fs::Access::PRIVATE,
    )
    .map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => JournalError::Missing(dir.to_path_buf()),
        _ => JournalError::Unreadable(path.clone(), e.to_string()),
    })?;
    // Each line becomes a value of about sixteen times its size: a journal that would not
    // fit in memory so is refused with one sentence, not read until the OOM killer.
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let need = usize::try_from(size.saturating_mul(16)).unwrap_or(usize::MAX);
    if !cltrap_capture::bulk::fits_in_memory(need) {
        return Err(JournalError::Unreadable(
            path,
            format!("it is {size} bytes, more than this machine has memory to read"),
        ));
    }
    let mut lines = BufReader::new(file);
    let mut first = String::new();
    (&mut lines)
        .take(MAX_LINE)
        .read_line(&mut first)
        .map_err(|e| JournalError::Unreadable(path.clone(), e.to_string()))?;
    let seal = Seal::get();
    let header: Header = serde_json::from_str(first.trim_end()).map_err(|e| {
        JournalError::Unreadable(
            path.clone(),
            format!("its first line is not a header ({e})"),
        )
    })?;
    if !seal.check("", first.trim_end()) {
        return Err(JournalError::Foreign(path));
    }
    // Result lines are sealed in the context of their header's seal.
    let context = Seal::of(first.trim_end()).unwrap_or_default().to_string();
    if header.cltrap_campaign != 1 {
        return Err(JournalError::Unreadable(
            path,
            format!("format version {} is not 1", header.cltrap_campaign),
        ));
    }
    let mut finished = BTreeMap::new();
    let mut refused = 0;
    loop {
        let mut line = String::new();
        let n = (&mut lines)
            .take(MAX_LINE)
            .read_line(&mut line)
            .map_err(|e| JournalError::Unreadable(path.clone(), e.to_string()))?;
        if n == 0 {
            break;
        }
        // A torn last line (killed mid-write) has no newline; it is not a finished unit.
        if !line.ends_with('\n') {
            break;
        }
        let Ok(f) = serde_json::from_str::<Finished>(line.trim_end()) else {
            // Not a result (damage): skipped, as ever.
            continue;
        };
        if !seal.check(&context, line.trim_end()) {
            refused += 1;
            continue;
        }
        // A unit's name becomes a folder of the campaign: one plain name, never a path.
        if !cltrap_capture::safe_open::is_plain_name(&f.unit) {
            return Err(JournalError::Unreadable(
                path,
                format!(
                    "it names a unit {:?}, which is not a plain name",
                    crate::list::clip(&f.unit, 64)
                ),
            ));
        }
        finished.insert(f.unit.clone(), f);
    }
    Ok(Journal {
        header,
        finished,
        refused,
    })
}

/// A journal being written.
pub struct Writer {
    file: File,
    path: PathBuf,
    /// The seal of its header: the context its result lines are sealed in ([`Seal`]).
    context: String,
}

impl Writer {
    /// Starts a journal in `dir` (made if missing): a fresh one with `header`, or, when
    /// `resume` and a journal is there, that one appended to.
    pub fn open(dir: &Path, header: &Header, resume: bool) -> std::io::Result<Writer> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(FILE);
        if resume && path.exists() {
            let file = OpenOptions::new().append(true).open(&path)?;
            let bytes = std::fs::read(&path)?;
            // A torn last line is cut off (not ended with a newline, which would make it a
            // line without a seal).
            let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            if whole < bytes.len() {
                file.set_len(whole as u64)?;
            }
            let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
            let context = std::str::from_utf8(first)
                .ok()
                .and_then(Seal::of)
                .ok_or_else(|| std::io::Error::other("its first line carries no seal"))?
                .to_string();
            return Ok(Writer {
                file,
                path,
                context,
            });
        }
        // A fresh journal replaces an older one whole: written aside, then renamed. Its
        // header line carries a random id, so no two journals share a context.
        let line = serde_json::to_string(header).map_err(std::io::Error::other)?;
        let id = blake3::Hash::from_bytes(super::seal::fresh_bytes()).to_hex();
        let line = match line.strip_prefix('{') {
            Some(rest) => format!("{{\"journal\":\"{}\",{rest}", &id[..32]),
            None => line,
        };
        let mut line = Seal::get().seal("", &line);
        let context = Seal::of(&line).unwrap_or_default().to_string();
        line.push('\n');
        replace_file(&path, line.as_bytes())?;
        let file = OpenOptions::new().append(true).open(&path)?;
        Ok(Writer {
            file,
            path,
            context,
        })
    }

    /// Appends one finished unit (one `write` of a whole line).
    pub fn append(&mut self, f: &Finished) -> std::io::Result<()> {
        let line = serde_json::to_string(f).map_err(std::io::Error::other)?;
        let mut line = Seal::get().seal(&self.context, &line);
        line.push('\n');
        self.file.write_all(line.as_bytes())
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A campaign folder's files are replaced, never written through a link planted at
    /// their name: a hard link's other name and a symbolic link's target keep their bytes.
    #[test]
    fn a_file_replaced_in_a_campaign_folder_never_writes_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "precious").unwrap();
        let hard = dir.path().join("stats.json");
        std::fs::hard_link(&outside, &hard).unwrap();
        replace_file(&hard, b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(&hard).unwrap(), "{}");
        let soft = dir.path().join(FILE);
        std::os::unix::fs::symlink(&outside, &soft).unwrap();
        let w = Writer::open(dir.path(), &header(), false).unwrap();
        drop(w);
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        assert!(!std::fs::symlink_metadata(&soft).unwrap().is_symlink());
    }

    fn header() -> Header {
        Header {
            cltrap_campaign: 1,
            args: vec!["check".into(), "cap".into()],
            cwd: "/".into(),
            fingerprint: "f".into(),
            shard: None,
            units: 2,
        }
    }

    fn fin(id: &str) -> Finished {
        Finished {
            unit: id.into(),
            device: "d".into(),
            millis: 1,
            result: serde_json::json!({"id": id}),
        }
    }

    #[test]
    fn torn_lines_are_ignored_and_resume_appends() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Writer::open(dir.path(), &header(), false).unwrap();
        w.append(&fin("a")).unwrap();
        drop(w);
        // Killed mid-write: half a line.
        let p = dir.path().join(FILE);
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"unit\":\"b\",\"res").unwrap();
        let j = read(dir.path()).unwrap();
        assert_eq!(j.header, header());
        assert_eq!(j.finished.keys().collect::<Vec<_>>(), vec!["a"]);
        let mut w = Writer::open(dir.path(), &header(), true).unwrap();
        w.append(&fin("b")).unwrap();
        let j = read(dir.path()).unwrap();
        assert_eq!(j.finished.keys().collect::<Vec<_>>(), vec!["a", "b"]);
        // The torn half-line was cut off, not ended: no line without a seal is left.
        assert_eq!(j.refused, 0);
        // A result line moved from another journal (sealed, but in that journal's context)
        // is not a result here.
        let other = tempfile::tempdir().unwrap();
        let mut w2 = Writer::open(other.path(), &header(), false).unwrap();
        w2.append(&fin("c")).unwrap();
        let moved = std::fs::read_to_string(other.path().join(FILE)).unwrap();
        let line = moved.lines().nth(1).unwrap().to_string();
        OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(format!("{line}\n").as_bytes())
            .unwrap();
        let j = read(dir.path()).unwrap();
        assert_eq!(j.finished.keys().collect::<Vec<_>>(), vec!["a", "b"]);
        assert_eq!(j.refused, 1);
        // Not resuming starts over.
        Writer::open(dir.path(), &header(), false).unwrap();
        assert!(read(dir.path()).unwrap().finished.is_empty());
    }

    /// A journal that came with a capture is untrusted: a unit row naming a path, a FIFO
    /// and a link at the journal's name are refused in one sentence, without blocking.
    #[test]
    fn a_forged_journal_is_refused_not_followed() {
        for unit in ["../../victim/planted", "/tmp/x", "..", "a/b", ""] {
            let dir = tempfile::tempdir().unwrap();
            let mut w = Writer::open(dir.path(), &header(), false).unwrap();
            w.append(&fin("launch-0")).unwrap();
            w.append(&fin(unit)).unwrap();
            let e = read(dir.path()).unwrap_err().to_string();
            assert!(e.contains("which is not a plain name"), "{unit:?}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = std::ffi::CString::new(dir.path().join(FILE).to_str().unwrap()).unwrap();
        // SAFETY: a FIFO made at a path of this test's own temporary folder.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.jsonl");
        Writer::open(dir.path(), &header(), false).unwrap();
        std::fs::rename(dir.path().join(FILE), &real).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join(FILE)).unwrap();
        assert!(read(dir.path()).is_err());
    }

    #[test]
    fn a_folder_without_a_journal_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("has no campaign journal"), "{e}");
        std::fs::write(dir.path().join(FILE), "not json\n").unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not a header"), "{e}");
    }

    #[test]
    fn a_journal_too_large_to_hold_in_memory_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        drop(Writer::open(dir.path(), &header(), false).unwrap());
        let path = dir.path().join(FILE);
        assert!(read(dir.path()).is_ok());
        // A sparse file of 4 TiB: nothing on disk, and read as values far past any memory.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(4 << 40)
            .unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("more than this machine has memory"), "{e}");
    }

    #[test]
    fn a_recorded_command_line_is_shown_with_its_control_characters_escaped() {
        let mut h = header();
        h.args = vec!["replay".into(), "cap\u{1b}[2J\rcltrap: all verified".into()];
        let shown = h.shown_args();
        assert!(!shown.chars().any(|c| c.is_control()), "{shown:?}");
        assert!(shown.starts_with("replay cap"), "{shown:?}");
    }
}
