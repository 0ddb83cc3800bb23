//! Opening a file of a capture safely: the one place where the reader, the writer and the
//! journal open capture files. Why one place: a capture folder can be prepared by someone
//! else, or be a hostile download, so every file is opened without following a symbolic
//! link, without blocking (a FIFO opens at once and is refused), checked with `fstat` to be
//! a regular file, and refused when longer than the caller expects — the same rules for
//! every side, kept in one function ([`check`]) they all go through.
//!
//! * [`open_inside`] / [`read_inside`]: a file named by plain names below a capture folder,
//!   each component opened relative to the one before with `O_NOFOLLOW` (the reader);
//! * [`open_regular`] / [`read_regular`]: a path whose last component must not be a link,
//!   for reading, appending or updating (the writer and the journal).

use crate::writer_fs::Access;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// What [`check`] found an open file to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A regular file within the bound.
    Regular,
    /// A FIFO, a device, a folder or a socket.
    NotRegular,
    /// A regular file of this many bytes, more than the bound.
    TooLong(u64),
}

/// Whether the open `file` is a regular file of at most `max` bytes (by `fstat`, so it is
/// the file opened, not whatever the path names now).
fn check(file: &File, max: u64) -> std::io::Result<Kind> {
    let meta = file.metadata()?;
    Ok(if !meta.file_type().is_file() {
        Kind::NotRegular
    } else if meta.len() > max {
        Kind::TooLong(meta.len())
    } else {
        Kind::Regular
    })
}

/// Why a file of a capture could not be opened by [`open_inside`].
#[derive(Debug)]
pub enum OpenError {
    /// It does not exist.
    NotFound,
    /// It exists but is not a file a reader may open (one sentence part: why).
    Refused(String),
    /// The system refused otherwise.
    Io(std::io::Error),
}

/// Whether `path` is itself a symbolic link (not followed; false where nothing is there). Why:
/// a folder that came with a capture (a campaign's, an output folder inside it) is refused
/// where a link was planted, before anything is read or written through it.
pub fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Whether `name` is one plain file name: not empty, not `.` or `..`, no `/` or NUL. Why: a
/// name from a capture (a part of a path to open, a campaign unit that becomes a folder)
/// must stay in the folder it is joined to.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// Opens the regular file `dir/parts[0]/parts[1]/…` for reading, where `dir` is the capture
/// folder the user named and each part one plain name: no part may be a symbolic link (each
/// is opened with `O_NOFOLLOW` relative to the one before, so nothing outside `dir` is
/// reached), the last must be a regular file (a FIFO or a device is refused without
/// blocking: it is opened with `O_NONBLOCK`) of at most `max` bytes. Why: a capture is
/// untrusted, and a `launches.jsonl` that is a FIFO or a blob that is a link to `/dev/zero`
/// must not hang or exhaust a reader.
pub fn open_inside(dir: &Path, parts: &[&str], max: u64) -> Result<File, OpenError> {
    let root = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => OpenError::NotFound,
            _ => OpenError::Io(e),
        })?;
    let mut fd = OwnedFd::from(root);
    for (k, part) in parts.iter().enumerate() {
        let last = k + 1 == parts.len();
        if !is_plain_name(part) {
            return Err(OpenError::Refused(format!("{part:?} is not a plain name")));
        }
        let name = std::ffi::CString::new(*part)
            .map_err(|_| OpenError::Refused("its name holds a NUL byte".into()))?;
        let flags = libc::O_RDONLY
            | libc::O_CLOEXEC
            | libc::O_NOFOLLOW
            | if last {
                libc::O_NONBLOCK
            } else {
                libc::O_DIRECTORY
            };
        // SAFETY: `fd` is an open directory and `name` a NUL-terminated string.
        let raw = unsafe { libc::openat(fd.as_raw_fd(), name.as_ptr(), flags) };
        if raw < 0 {
            let e = std::io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                Some(libc::ENOENT) => OpenError::NotFound,
                Some(libc::ELOOP) => OpenError::Refused(format!("{part} is a symbolic link")),
                Some(libc::ENOTDIR) => OpenError::Refused(format!(
                    "{part} is not a folder (a symbolic link or a file)"
                )),
                Some(libc::ENXIO) => OpenError::Refused(format!("{part} is not a regular file")),
                _ => OpenError::Io(e),
            });
        }
        // SAFETY: `raw` is a descriptor just opened and owned by nothing else.
        fd = unsafe { OwnedFd::from_raw_fd(raw) };
    }
    let file = File::from(fd);
    match check(&file, max).map_err(OpenError::Io)? {
        Kind::Regular => Ok(file),
        Kind::NotRegular => Err(OpenError::Refused("it is not a regular file".into())),
        Kind::TooLong(len) => Err(OpenError::Refused(format!(
            "it is {len} bytes, more than the {max} a reader takes"
        ))),
    }
}

/// The whole of a file [`open_inside`] opened, read no further than `max` bytes.
pub fn read_inside(dir: &Path, parts: &[&str], max: u64) -> Result<Vec<u8>, OpenError> {
    let file = open_inside(dir, parts, max)?;
    let len = file.metadata().map_err(OpenError::Io)?.len();
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(usize::try_from(len).unwrap_or(usize::MAX))
        .map_err(|_| OpenError::Refused(format!("{len} bytes do not fit in memory")))?;
    file.take(max)
        .read_to_end(&mut bytes)
        .map_err(OpenError::Io)?;
    Ok(bytes)
}

/// How [`open_regular`] opens a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// Read only; the file must exist.
    Read,
    /// Read and write, created (with `access`'s mode) when missing, never truncated.
    ReadWrite,
    /// Appending, created when missing.
    Append,
}

/// Opens `path` without following a symbolic link in its last component and without
/// blocking (a FIFO opens at once), then checks with `fstat` that it is a regular file:
/// anything else is an error naming the path. The descriptor is made blocking again for use.
pub fn open_regular(path: &Path, how: Open, access: Access) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    match how {
        Open::Read => o.read(true),
        Open::ReadWrite => o.read(true).write(true).create(true).truncate(false),
        Open::Append => o.append(true).create(true),
    };
    o.mode(access.file_mode())
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    let file = o.open(path).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{} is a symbolic link", path.display()),
            )
        } else {
            e
        }
    })?;
    if check(&file, u64::MAX)? != Kind::Regular {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    let fd = file.as_raw_fd();
    // SAFETY: plain fcntl calls on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    Ok(file)
}

/// The bytes of the regular file `path` ([`open_regular`]), refused when longer than `max`
/// (a file the writer reads back is small; a huge one is not what it wrote).
pub fn read_regular(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let file = open_regular(path, Open::Read, Access::PRIVATE)?;
    if let Kind::TooLong(len) = check(&file, max)? {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{} has {len} bytes, more than the {max} expected",
                path.display()
            ),
        ));
    }
    let len = file.metadata()?.len();
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} grew past {max} bytes while read", path.display()),
        ));
    }
    Ok(bytes)
}
