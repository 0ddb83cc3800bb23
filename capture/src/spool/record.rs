//! A segment's records as a reader finds them: what each holds and where ([`Record`]), how a
//! segment ends ([`Tail`]), and the scan that reads every header ([`scan`], [`scan_from`]).
//! The formats are described in the [module doc](super).

use super::{
    HEADER, MAGIC, PART_HEADER, PART_MAGIC, PART_TRAILER, PATCH_HEADER, PATCH_MAGIC, RANGES_MAX,
};
use std::fs::File;
use std::os::unix::fs::FileExt;

/// One whole record of a segment: a content's digest and where its bytes lie (for a patch
/// record, the bytes of its ranges, one after the other).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub hash: String,
    /// Offset of the content's (or the first range's) first byte in the segment.
    pub offset: u64,
    /// Bytes the record holds: the content's length, or its ranges' for a patch.
    pub len: u64,
    /// Set for a patch record: the content is its base with its ranges' bytes written over.
    pub patch: Option<Patch>,
    /// Set for a part record: the record holds `len` bytes of the content from `at` on.
    pub part: Option<Part>,
}

/// Where a part record's bytes lie in its content (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// Bytes of the whole content.
    pub total: u64,
    /// Offset of the part's first byte in the content.
    pub at: u64,
}

/// What a patch record says besides its ranges' bytes (see the module doc). Not checked by
/// [`scan`] beyond its syntax: [`Patch::problem`] says what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// Digest of the content the ranges are written over.
    pub base: String,
    /// Bytes of the content (and of its base).
    pub total: u64,
    /// (offset in the content, length) of each range, in the order their bytes follow.
    pub ranges: Vec<(u64, u64)>,
}

impl Record {
    /// Bytes of the content this record names (whole or rebuilt).
    pub fn content_len(&self) -> u64 {
        match (&self.patch, &self.part) {
            (Some(p), _) => p.total,
            (None, Some(p)) => p.total,
            (None, None) => self.len,
        }
    }
}

impl Patch {
    /// What is wrong with the patch record of content `hash` holding `len` bytes of ranges,
    /// as a sentence part, or None: its base is itself, a range ends past the content, the
    /// ranges overlap or are out of order, or they do not hold `len` bytes.
    pub fn problem(&self, hash: &str, len: u64) -> Option<String> {
        if self.base == hash {
            return Some(format!(
                "the patch record of content {hash} names itself as its base"
            ));
        }
        let mut from = 0u64;
        let mut sum = 0u64;
        for &(at, n) in &self.ranges {
            let Some(end) = at.checked_add(n).filter(|e| *e <= self.total) else {
                return Some(format!(
                    "the patch record of content {hash} places {n} bytes at offset {at} of a content of {} bytes (past its end)",
                    self.total
                ));
            };
            if at < from {
                return Some(format!(
                    "the ranges of the patch record of content {hash} overlap or are out of order"
                ));
            }
            from = end;
            sum += n;
        }
        if sum != len {
            return Some(format!(
                "the ranges of the patch record of content {hash} hold {sum} bytes, not the {len} it has"
            ));
        }
        None
    }

    /// Writes the ranges' bytes `data` (as the record holds them) over `bytes`, the base;
    /// Err: why not (checked first with [`Patch::problem`], so only a base of another length).
    pub fn apply(&self, bytes: &mut [u8], data: &[u8]) -> Result<(), String> {
        if bytes.len() as u64 != self.total {
            return Err(format!(
                "its base holds {} bytes, not {}",
                bytes.len(),
                self.total
            ));
        }
        let mut from = 0usize;
        for &(at, n) in &self.ranges {
            let (at, n) = (at as usize, n as usize);
            let (Some(end), Some(to)) = (at.checked_add(n), from.checked_add(n)) else {
                return Err("a range lies past its end".into());
            };
            let (Some(dst), Some(src)) = (bytes.get_mut(at..end), data.get(from..to)) else {
                return Err("a range lies past its end".into());
            };
            dst.copy_from_slice(src);
            from += n;
        }
        Ok(())
    }

    /// The smallest region holding every range (first byte, one past the last), for
    /// [`crate::parallel::leaves_like`] and [`crate::parallel::cut_and_hash_like`].
    pub fn hull(&self) -> Option<(usize, usize)> {
        let first = self.ranges.first()?;
        let last = self.ranges.last()?;
        Some((first.0 as usize, (last.0 + last.1) as usize))
    }
}

/// How a segment's records end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tail {
    /// After its last whole record, the file ends.
    Clean,
    /// The last record claims more bytes than the file has (its writer died mid-write, is
    /// writing it now, or the file was cut or forged).
    Cut {
        hash: String,
        at: u64,
        claimed: u64,
        have: u64,
    },
    /// At `at` no record starts (no magic, or a digest that is not hex).
    Bad { at: u64 },
    /// The segment holds more than [`RECORDS_MAX`] records, which no writer makes: the
    /// records from `at` on are not read (a forged segment must not fill the memory).
    Crowded { at: u64 },
}

/// Most records one scan of a segment reads ([`Tail::Crowded`] past it). A writer's segment
/// ends at 64 MiB (one record past it at most), and its smallest record, a whole record of no
/// bytes, takes 80: at most 838 861 records (the store spools nothing under 8 KiB, so its
/// segments hold far fewer). Each record read costs a reader or a compactor about 150 bytes
/// of memory, so a forged segment costs at most about 160 MB.
pub const RECORDS_MAX: usize = 1 << 20;

/// The records of one segment, in order, and how they end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    pub records: Vec<Record>,
    pub tail: Tail,
    /// Where the records read end: a later scan of the same segment may start here
    /// ([`scan_from`]) to find only the records appended since.
    pub end: u64,
}

impl Tail {
    /// What is wrong, as a sentence part, or None for a clean end.
    pub fn problem(&self) -> Option<String> {
        match self {
            Tail::Clean => None,
            Tail::Cut {
                hash,
                at,
                claimed,
                have,
            } => Some(format!(
                "the record of content {hash} at byte {at} claims {claimed} bytes but only {have} follow (cut off or forged)"
            )),
            Tail::Bad { at } => Some(format!("no spool record starts at byte {at}")),
            Tail::Crowded { at } => Some(format!(
                "the segment holds more than {RECORDS_MAX} records, more than a writer makes (forged?): its records from byte {at} on are not read"
            )),
        }
    }
}

/// Reads the record headers of an open segment (one `pread` per record, the contents are
/// not read), up to the file's current length.
pub fn scan(file: &File) -> std::io::Result<Scan> {
    scan_from(file, 0)
}

/// [`scan`] from offset `from`, where an earlier scan ended ([`Scan::end`]). Why: a reader
/// looking for a content spooled since its last scan (a compactor, for the parts of each new
/// content) read every header of every segment again each time.
pub fn scan_from(file: &File, from: u64) -> std::io::Result<Scan> {
    scan_at_most(file, from, RECORDS_MAX)
}

/// [`scan_from`], reading at most `max` records ([`Tail::Crowded`] past them).
pub fn scan_at_most(file: &File, from: u64, max: usize) -> std::io::Result<Scan> {
    let len = file.metadata()?.len();
    let mut records = Vec::new();
    let mut at = from.min(len);
    let mut header = [0u8; PATCH_HEADER];
    let is_hex = |h: &[u8]| {
        h.iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    };
    let u64_at = |h: &[u8], i: usize| {
        let mut n = [0u8; 8];
        n.copy_from_slice(&h[i..i + 8]);
        u64::from_le_bytes(n)
    };
    let tail = loop {
        if at == len {
            break Tail::Clean;
        }
        if records.len() >= max {
            break Tail::Crowded { at };
        }
        // The magic says which header follows.
        let mut magic = [0u8; 8];
        if len - at < 8 {
            break Tail::Cut {
                hash: String::new(),
                at,
                claimed: HEADER as u64,
                have: len - at,
            };
        }
        file.read_exact_at(&mut magic, at)?;
        let size = match &magic {
            m if m == MAGIC => HEADER,
            m if m == PATCH_MAGIC => PATCH_HEADER,
            m if m == PART_MAGIC => PART_HEADER,
            _ => break Tail::Bad { at },
        };
        if len - at < size as u64 {
            break Tail::Cut {
                hash: String::new(),
                at,
                claimed: size as u64,
                have: len - at,
            };
        }
        let header = &mut header[..size];
        file.read_exact_at(header, at)?;
        if size == PART_HEADER {
            let (total, from, n) = (u64_at(header, 8), u64_at(header, 16), u64_at(header, 24));
            // A part inside its content, not empty: else no record starts here.
            if n == 0 || from.checked_add(n).is_none_or(|end| end > total) {
                break Tail::Bad { at };
            }
            let offset = at + size as u64;
            let claimed = n.saturating_add(PART_TRAILER as u64);
            if claimed > len - offset {
                break Tail::Cut {
                    hash: String::new(),
                    at,
                    claimed,
                    have: len - offset,
                };
            }
            let mut digest = [0u8; PART_TRAILER];
            file.read_exact_at(&mut digest, offset + n)?;
            if !is_hex(&digest) {
                break Tail::Bad { at: offset + n };
            }
            records.push(Record {
                hash: String::from_utf8_lossy(&digest).into_owned(),
                offset,
                len: n,
                patch: None,
                part: Some(Part { total, at: from }),
            });
            at = offset + claimed;
            continue;
        }
        let hash = &header[8..72];
        if !is_hex(hash) {
            break Tail::Bad { at };
        }
        let hash = String::from_utf8_lossy(hash).into_owned();
        let mut offset = at + size as u64;
        let (claimed, patch) = if size == HEADER {
            (u64_at(header, 72), None)
        } else {
            let base = &header[72..136];
            if !is_hex(base) {
                break Tail::Bad { at };
            }
            let count = u64_at(header, 144);
            if count == 0 || count > RANGES_MAX {
                break Tail::Bad { at };
            }
            let table = count * 16;
            if table > len - offset {
                break Tail::Cut {
                    hash,
                    at,
                    claimed: table,
                    have: len - offset,
                };
            }
            let mut raw = vec![0u8; table as usize];
            file.read_exact_at(&mut raw, offset)?;
            let ranges = raw
                .chunks_exact(16)
                .map(|e| (u64_at(e, 0), u64_at(e, 8)))
                .collect();
            offset += table;
            let patch = Patch {
                base: String::from_utf8_lossy(base).into_owned(),
                total: u64_at(header, 136),
                ranges,
            };
            (u64_at(header, 152), Some(patch))
        };
        if claimed > len - offset {
            break Tail::Cut {
                hash,
                at,
                claimed,
                have: len - offset,
            };
        }
        records.push(Record {
            hash,
            offset,
            len: claimed,
            patch,
            part: None,
        });
        at = offset + claimed;
    };
    Ok(Scan {
        records,
        tail,
        end: at,
    })
}
