//! A process's side of the spool: planning records ([`Planned`]: whole, patch or parts) and
//! appending them to its segments, one per lane ([`SpoolWriter`]).

use super::held::HeldFile;
use super::{
    compactor_attached, last_heartbeat, live_bytes, HEADER, MAGIC, PART_HEADER, PART_MAGIC,
    PART_MIN, PART_TRAILER, PATCH_CHAIN_MAX, PATCH_HEADER, PATCH_MAGIC, RANGES_MAX, SEGMENT_AGE,
    SEGMENT_CONTENT_FACTOR, SEGMENT_MAX, SEGMENT_SUFFIX, SPOOL_DIR,
};
use crate::writer_fs::{self, Access};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What the spool cost the application, for `CLTRAP_STATS`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpoolStats {
    /// Records appended and their bytes (headers included).
    pub records: u64,
    pub bytes: u64,
    /// Of the records, patch records (a changed region on an earlier version).
    pub patches: u64,
    /// Of the records, part records ([`Planned::parts`]).
    pub parts: u64,
    /// Times the application waited for compaction (the spool past its bound), and how long.
    pub waits: u64,
    pub wait_ns: u64,
    /// The most bytes this writer saw in the spool (its own estimate: measured when near the
    /// bound, counted between).
    pub peak_bytes: u64,
    /// The bound ([`crate::Settings::spool_max_bytes`]).
    pub bound: u64,
}

/// A spooled content's digest must be 64 hex digits (it names a record).
fn check_digest(hash: &str) -> std::io::Result<()> {
    if hash.len() != 64
        || !hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a spooled content is named by a 64-digit digest",
        ));
    }
    Ok(())
}

/// Most contents whose patch depth a writer remembers (a few MB): past it, it starts over.
const DEPTHS_MAX: usize = 1 << 16;

/// Segments a writer may have open at once: lane 0 for the records written on the thread that
/// planned them, and one per thread that writes records planned elsewhere
/// ([`SpoolWriter::write_planned`]). Why several: one thread
/// copies into the page cache at 2–4 GB/s, and on an H200 host two writers to separate files
/// made 7.5 GB/s, four 13.9 GB/s (writers to one file queue on its inode's lock).
pub const LANES: usize = 5;

/// A record planned by [`SpoolWriter::plan`]: its header, and which of the content's bytes
/// its body holds. Planning decides whole record or patch, and counts the content as spooled
/// by this writer (a later version may be planned as a patch on it before it is written);
/// [`SpoolWriter::write_planned`] then writes it, on any lane.
#[derive(Debug, Clone)]
pub struct Planned {
    header: Vec<u8>,
    /// The ranges of the content the body holds, in order; None: all of it.
    ranges: Option<Vec<(usize, usize)>>,
    /// The content's whole size.
    content: u64,
    /// A part record ([`Planned::parts`]): written without waiting for room, which
    /// whoever cut the parts made for all of them ([`SpoolWriter::make_room`]).
    part: bool,
    /// A part's digest, written after its bytes (None: not known yet, given when it is
    /// written: [`SpoolWriter::write_part_named`]).
    digest: Option<String>,
    /// Room in the spool was made for it by whoever planned it ([`Planned::room_made`]).
    room_made: bool,
}

impl Planned {
    /// This record, written without waiting for room in the spool: whoever hands it to
    /// another thread made room for it first ([`SpoolWriter::make_room`]). Why: a lane
    /// thread waiting for room could hold up a part of a content that a compactor waits
    /// for, and the room it waits for would never come.
    pub fn room_made(mut self) -> Planned {
        self.room_made = true;
        self
    }

    /// The part records of a new whole content of `total` bytes whose digest is not known
    /// yet, as [`Planned::parts`] cuts them: their bytes can be copied while the content is
    /// hashed, and the digest written after each ([`SpoolWriter::write_part_named`]). None
    /// where it is too small for two parts.
    pub fn unnamed_parts(total: u64, n: usize) -> Option<Vec<Planned>> {
        Self::cut(total, n, None)
    }

    /// `total` bytes in `n` parts (fewer where too small), each naming `digest`.
    fn cut(total: u64, n: usize, digest: Option<String>) -> Option<Vec<Planned>> {
        let size = usize::try_from(total).ok()?;
        let n = n.min(size / PART_MIN);
        if n < 2 {
            return None;
        }
        // Parts of whole pages, the last one taking the rest.
        let step = (size / n) & !4095;
        Some(
            (0..n)
                .map(|i| {
                    let at = i * step;
                    let len = if i + 1 == n { size - at } else { step };
                    let mut header = Vec::with_capacity(PART_HEADER);
                    header.extend_from_slice(PART_MAGIC);
                    for v in [size, at, len] {
                        header.extend_from_slice(&(v as u64).to_le_bytes());
                    }
                    Planned {
                        header,
                        ranges: Some(vec![(at, len)]),
                        content: total,
                        part: true,
                        digest: digest.clone(),
                        room_made: false,
                    }
                })
                .collect(),
        )
    }

    /// This whole record as `n` part records of at least [`PART_MIN`] bytes each (fewer
    /// where the content is too small for `n`), to be written on different lanes; None for a
    /// patch record, a part, or a content too small for two parts. Why: one thread copies
    /// into one file at a few GB/s, and an application's `clFinish` that waits for a large new
    /// content waits for that copy.
    pub fn parts(&self, n: usize) -> Option<Vec<Planned>> {
        if self.ranges.is_some() || self.part {
            return None;
        }
        let digest = String::from_utf8_lossy(&self.header[8..72]).into_owned();
        Self::cut(self.content, n, Some(digest))
    }

    /// The bytes the record takes in the spool, header included.
    pub fn bytes(&self) -> u64 {
        let body = match &self.ranges {
            None => self.content,
            Some(ranges) => ranges.iter().map(|&(_, n)| n as u64).sum(),
        };
        let trailer = if self.part { PART_TRAILER as u64 } else { 0 };
        self.header.len() as u64 + body + trailer
    }
}

/// The segment a writer appends to.
struct Segment {
    file: HeldFile,
    len: u64,
    /// Bytes of the contents its records name (see [`SEGMENT_CONTENT_FACTOR`]).
    content: u64,
    /// When it is next due to be sealed for its age ([`SEGMENT_AGE`]).
    due: Instant,
}

/// A process's side of the spool: appends contents to its own segment, waiting for a
/// compactor while the spool is past its bound. `Sync`: the shim stores from several threads.
pub struct SpoolWriter {
    dir: PathBuf,
    access: Access,
    bound: u64,
    segment_max: u64,
    /// The open segment of each lane ([`LANES`]).
    lanes: Vec<Mutex<Option<Segment>>>,
    /// Bytes believed in the spool: measured ([`live_bytes`]) when near the bound, plus what
    /// this writer appended since.
    estimate: Mutex<u64>,
    made: AtomicU64,
    /// Contents this writer spooled, with how many patch records each is from a whole one.
    depths: Mutex<std::collections::HashMap<String, usize>>,
    records: AtomicU64,
    patches: AtomicU64,
    parts: AtomicU64,
    bytes: AtomicU64,
    waits: AtomicU64,
    wait_ns: AtomicU64,
    peak: AtomicU64,
    /// Set once the compactor showed no progress for [`STALL`]: this writer waits no more,
    /// until the compactor's heartbeat moves on from the one seen then (`stalled_at`).
    stalled: std::sync::atomic::AtomicBool,
    stalled_at: Mutex<Option<std::time::SystemTime>>,
}

/// How long a writer past its spool's bound waits for a compactor that shows no progress (the
/// spool shrank, or its [`super::heartbeat`]: it stores contents and makes them durable)
/// before it stops waiting for good (said once on stderr): a compactor that cannot take
/// segments (on NFS, `flock` is emulated with `fcntl` locks, which an exclusive lock on a
/// read-only descriptor cannot take) or holds its lock without working must not hang the
/// application.
pub const STALL: Duration = Duration::from_secs(10);

impl SpoolWriter {
    /// The spool of capture folder `dir` (its folder made now), bounded to `bound` bytes
    /// while a compactor runs (0: no bound).
    pub fn new(dir: &Path, access: Access, bound: u64) -> std::io::Result<SpoolWriter> {
        writer_fs::ensure_subdirs(dir, Path::new(SPOOL_DIR), access)?;
        let segment_max = if bound == 0 {
            SEGMENT_MAX
        } else {
            (bound / 4).clamp(1 << 20, SEGMENT_MAX)
        };
        Ok(SpoolWriter {
            dir: dir.to_path_buf(),
            access,
            bound,
            segment_max,
            lanes: (0..LANES).map(|_| Mutex::new(None)).collect(),
            estimate: Mutex::new(live_bytes(dir)),
            made: AtomicU64::new(0),
            depths: Mutex::new(std::collections::HashMap::new()),
            records: AtomicU64::new(0),
            patches: AtomicU64::new(0),
            parts: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            wait_ns: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            stalled: std::sync::atomic::AtomicBool::new(false),
            stalled_at: Mutex::new(None),
        })
    }

    /// Plans the record of content `bytes` whose digest is `hash`: whole, or given
    /// `version` (`base`, `ranges`: the next version of content `base`, differing from it only
    /// in `ranges`, ascending: [`changed_ranges`]) a patch record when this writer wrote `base`
    /// itself, at most [`PATCH_CHAIN_MAX`] patches deep, and the ranges hold at most three
    /// quarters of the content (else a whole record); and counts it as spooled by this writer
    /// from now on. Whoever plans a patch must have it written after its base's record (one
    /// lane, in order, or after the base's write returned): a reader rebuilds a patch from its
    /// base.
    pub fn plan(
        &self,
        hash: &str,
        bytes: &[u8],
        version: Option<(&str, &[(usize, usize)])>,
    ) -> std::io::Result<Planned> {
        check_digest(hash)?;
        let patch = version.and_then(|(base, ranges)| {
            let depth = self.depth_of(base)?;
            let mut held = 0usize;
            let mut from = 0usize;
            let mut valid = !ranges.is_empty() && ranges.len() as u64 <= RANGES_MAX;
            for &(at, n) in ranges {
                valid &= at >= from && n > 0 && at.checked_add(n).is_some_and(|e| e <= bytes.len());
                from = at.saturating_add(n);
                held += n;
            }
            let small = valid && super::patch_small_enough(held, bytes.len());
            (small && depth < PATCH_CHAIN_MAX && base != hash)
                .then_some((base, ranges, depth, held))
        });
        let Some((base, ranges, depth, held)) = patch else {
            let mut header = vec![0u8; HEADER];
            header[..8].copy_from_slice(MAGIC);
            header[8..72].copy_from_slice(hash.as_bytes());
            header[72..].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
            self.learn(hash, 0);
            return Ok(Planned {
                header,
                ranges: None,
                content: bytes.len() as u64,
                part: false,
                digest: None,
                room_made: false,
            });
        };
        check_digest(base)?;
        let mut header = Vec::with_capacity(PATCH_HEADER + ranges.len() * 16);
        header.extend_from_slice(PATCH_MAGIC);
        header.extend_from_slice(hash.as_bytes());
        header.extend_from_slice(base.as_bytes());
        header.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        header.extend_from_slice(&(ranges.len() as u64).to_le_bytes());
        header.extend_from_slice(&(held as u64).to_le_bytes());
        for &(at, n) in ranges {
            header.extend_from_slice(&(at as u64).to_le_bytes());
            header.extend_from_slice(&(n as u64).to_le_bytes());
        }
        self.learn(hash, depth + 1);
        Ok(Planned {
            header,
            ranges: Some(ranges.to_vec()),
            content: bytes.len() as u64,
            part: false,
            digest: None,
            room_made: false,
        })
    }

    /// Writes a record [`SpoolWriter::plan`] planned for the same `bytes` to the segment of
    /// `lane` (below [`LANES`]; each lane's records are appended in the order written): when
    /// the spool would pass its bound and a compactor runs, first seals this writer's
    /// segments and waits until compaction made room (counted in [`SpoolStats`]). When this
    /// returns, the record is whole in the page cache: it survives the process dying in any
    /// way. Returns the bytes it took.
    pub fn write_planned(
        &self,
        lane: usize,
        planned: &Planned,
        bytes: &[u8],
    ) -> std::io::Result<u64> {
        match (planned.part, &planned.digest) {
            (true, Some(digest)) => {
                let digest = digest.clone();
                self.write_part_named(lane, planned, bytes, move || digest)
            }
            (true, None) => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a part whose digest is not known is written with write_part_named",
            )),
            (false, _) => self.write(lane, planned, bytes, None),
        }
    }

    /// Writes part record `planned` (of [`Planned::parts`] or [`Planned::unnamed_parts`])
    /// of content `bytes` to the segment of `lane`: its bytes first, then the digest that
    /// `name` gives (it may wait for whoever hashes the content meanwhile). A digest that is
    /// not 64 hex digits fails the write and seals the lane's segment, so that the record it
    /// leaves cut off is its last. Returns the bytes it took.
    pub fn write_part_named(
        &self,
        lane: usize,
        planned: &Planned,
        bytes: &[u8],
        name: impl FnOnce() -> String,
    ) -> std::io::Result<u64> {
        if !planned.part {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "only a part record is written with write_part_named",
            ));
        }
        let mut name = Some(name);
        let mut trailer = || -> std::io::Result<Vec<u8>> {
            let digest = name.take().map(|n| n()).unwrap_or_default();
            check_digest(&digest)?;
            Ok(digest.into_bytes())
        };
        self.write(lane, planned, bytes, Some(&mut trailer))
    }

    /// [`SpoolWriter::write_planned`], with a part's `trailer`.
    fn write(
        &self,
        lane: usize,
        planned: &Planned,
        bytes: &[u8],
        trailer: Option<&mut dyn FnMut() -> std::io::Result<Vec<u8>>>,
    ) -> std::io::Result<u64> {
        if bytes.len() as u64 != planned.content || lane >= LANES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a planned spool record is written with the content it was planned for",
            ));
        }
        let body: std::borrow::Cow<[u8]> = match planned.ranges.as_deref() {
            None => std::borrow::Cow::Borrowed(bytes),
            Some([(at, n)]) => std::borrow::Cow::Borrowed(&bytes[*at..at + n]),
            Some(ranges) => {
                let mut data = Vec::with_capacity(ranges.iter().map(|&(_, n)| n).sum());
                for &(at, n) in ranges {
                    data.extend_from_slice(&bytes[at..at + n]);
                }
                std::borrow::Cow::Owned(data)
            }
        };
        // A part names its share of the content (compaction reads the others from their own
        // segments), and its room was made before the parts were cut.
        let (content, room) = match planned.part {
            true => (body.len() as u64, false),
            false => (planned.content, !planned.room_made),
        };
        let need = self.append(lane, &planned.header, &body, content, room, trailer)?;
        if planned.part {
            self.parts.fetch_add(1, Ordering::Relaxed);
        } else if planned.ranges.is_some() {
            self.patches.fetch_add(1, Ordering::Relaxed);
        }
        Ok(need)
    }

    /// Seals this writer's segments now (the next record starts a new one): a compactor may
    /// take them.
    pub fn seal(&self) {
        for lane in &self.lanes {
            *lane.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }

    /// Remembers that this writer spooled content `hash` whole (in parts whose digest was
    /// given after their bytes: [`Planned::unnamed_parts`]), so its next version may be a
    /// patch on it.
    pub fn learn_whole(&self, hash: &str) {
        self.learn(hash, 0);
    }

    /// How many patch records content `hash` is from a whole record, when this writer
    /// wrote it.
    fn depth_of(&self, hash: &str) -> Option<usize> {
        self.depths
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(hash)
            .copied()
    }

    /// Remembers that this writer spooled content `hash`, `depth` patches from a whole
    /// record. Bounded: past [`DEPTHS_MAX`] contents the table starts over (the next
    /// versions are whole records).
    fn learn(&self, hash: &str, depth: usize) {
        let mut d = self.depths.lock().unwrap_or_else(|p| p.into_inner());
        if d.len() >= DEPTHS_MAX {
            d.clear();
        }
        d.entry(hash.to_string()).or_insert(depth);
    }

    /// Appends one record (`header` then `body`) of a content of `content` bytes to the
    /// segment of `lane`, after waiting for room; returns its bytes. A segment is sealed
    /// before it passes its bytes or the contents it may name ([`SEGMENT_CONTENT_FACTOR`]).
    fn append(
        &self,
        lane: usize,
        header: &[u8],
        body: &[u8],
        content: u64,
        room: bool,
        trailer: Option<&mut dyn FnMut() -> std::io::Result<Vec<u8>>>,
    ) -> std::io::Result<u64> {
        let extra = if trailer.is_some() { PART_TRAILER } else { 0 };
        let need = (header.len() + body.len() + extra) as u64;
        if room {
            self.make_room(need);
        }
        let mut current = self.lanes[lane].lock().unwrap_or_else(|p| p.into_inner());
        let content_max = self.segment_max.saturating_mul(SEGMENT_CONTENT_FACTOR);
        let full = current.as_ref().is_some_and(|s| {
            s.len > 0
                && (s.len + need > self.segment_max
                    || s.content.saturating_add(content) > content_max)
        });
        if full || current.as_mut().is_some_and(|s| self.aged(s)) {
            // Sealed: the lock goes with the descriptor, and a compactor may take it.
            *current = None;
        }
        if current.is_none() {
            *current = Some(self.new_segment()?);
            // What the spool holds now (a compactor may have taken some): the estimate and
            // the peak stay close to the truth.
            let mut est = self.estimate.lock().unwrap_or_else(|p| p.into_inner());
            *est = live_bytes(&self.dir);
        }
        let Some(seg) = current.as_mut() else {
            return Err(std::io::Error::other("no spool segment"));
        };
        let file = &mut seg.file;
        let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // One write for both (a short write is completed by `write_all`); a large body
            // after its header, its zero blocks left as holes.
            if body.len() <= 1 << 16 {
                let mut record = Vec::with_capacity(header.len() + body.len());
                record.extend_from_slice(header);
                record.extend_from_slice(body);
                file.write_all(&record)?;
            } else {
                file.write_all(header)?;
                write_with_holes(file, body)?;
            }
            if let Some(trailer) = trailer {
                let t = trailer()?;
                if t.len() != PART_TRAILER {
                    return Err(std::io::Error::other(
                        "a part's digest has the wrong length",
                    ));
                }
                file.write_all(&t)?;
            }
            Ok(())
        }));
        // Nothing may follow a record left unfinished (a failed write, a digest not given):
        // the segment is sealed, so that the cut record is its last.
        let failed = match written {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(_) => Some(std::io::Error::other("writing a spool record panicked")),
        };
        if let Some(e) = failed {
            *current = None;
            return Err(e);
        }
        let Some(seg) = current.as_mut() else {
            return Err(std::io::Error::other("no spool segment"));
        };
        seg.len += need;
        seg.content = seg.content.saturating_add(content);
        drop(current);
        self.records.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(need, Ordering::Relaxed);
        let mut est = self.estimate.lock().unwrap_or_else(|p| p.into_inner());
        *est += need;
        self.peak.fetch_max(*est, Ordering::Relaxed);
        Ok(need)
    }

    /// Whether segment `s` (not empty) has been open for [`SEGMENT_AGE`] while a compactor
    /// is attached to the spool: then it is sealed, so the compactor can take it. Otherwise
    /// the next look is put off by as long, so the compactor's lock is looked at no more than
    /// that often per lane.
    fn aged(&self, s: &mut Segment) -> bool {
        if s.len == 0 {
            return false;
        }
        let now = Instant::now();
        if now < s.due {
            return false;
        }
        s.due = now + SEGMENT_AGE;
        compactor_attached(&self.dir)
    }

    /// Waits while the spool holds more than its bound minus `need` and a compactor runs
    /// (and frees space: [`STALL`]), sealing this writer's segments first so that the
    /// compactor can take them. Called by
    /// [`SpoolWriter::write_planned`] for a whole or patch record, unless whoever planned it
    /// made room already ([`Planned::room_made`]), and by whoever cuts a record into
    /// [`Planned::parts`] for all of them before any is written: a part never waits for
    /// room, since a compactor cannot take a content before all its parts are written.
    pub fn make_room(&self, need: u64) {
        if self.bound == 0 {
            return;
        }
        if *self.estimate.lock().unwrap_or_else(|p| p.into_inner()) + need <= self.bound {
            return;
        }
        if self.stalled.load(Ordering::Relaxed) {
            // Waiting again only once the compactor works again.
            let at = *self.stalled_at.lock().unwrap_or_else(|p| p.into_inner());
            if last_heartbeat(&self.dir) == at {
                return;
            }
            self.stalled.store(false, Ordering::Relaxed);
        }
        let start = Instant::now();
        let mut waited = false;
        // When the compactor last showed progress, and what it showed.
        let (mut progress, mut last, mut beat) = (Instant::now(), u64::MAX, None);
        loop {
            // Another lane stopped waiting for good meanwhile.
            if self.stalled.load(Ordering::Relaxed) {
                break;
            }
            // Every segment sealed again (another lane may have opened one meanwhile), so a
            // compactor can take all that is there; the estimate is not held while sealing or
            // sleeping (a lane takes its segment's lock, then the estimate's).
            self.seal();
            let live = live_bytes(&self.dir);
            *self.estimate.lock().unwrap_or_else(|p| p.into_inner()) = live;
            if live == 0 || live + need <= self.bound || !compactor_attached(&self.dir) {
                break;
            }
            // Progress: the spool shrank since the last look (other writers may grow it
            // meanwhile), or the compactor's heartbeat moved.
            let now_beat = last_heartbeat(&self.dir);
            let moved = live < last || now_beat != beat;
            (last, beat) = (live, now_beat);
            if moved {
                progress = Instant::now();
            } else if progress.elapsed() >= STALL {
                *self.stalled_at.lock().unwrap_or_else(|p| p.into_inner()) = now_beat;
                if !self.stalled.swap(true, Ordering::Relaxed) {
                    use std::io::Write;
                    let _ = writeln!(
                        std::io::stderr(),
                        "cltrap: the spool's compactor showed no progress for {} s; the capture goes on past the spool's bound of {} MB",
                        STALL.as_secs(),
                        self.bound >> 20
                    );
                }
                waited = true;
                break;
            }
            waited = true;
            std::thread::sleep(Duration::from_millis(1));
        }
        if waited {
            self.waits.fetch_add(1, Ordering::Relaxed);
            self.wait_ns
                .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
    }

    /// A new segment of this process, locked before it is visible: it is made under a name
    /// that is not a segment's (a leading dot), locked, then renamed. (Created under its own
    /// name, a compactor could find it unlocked, take it for sealed and empty, and delete it
    /// before this process locked it and appended contents that would then be lost.)
    fn new_segment(&self) -> std::io::Result<Segment> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let n = self.made.fetch_add(1, Ordering::Relaxed);
        let name = format!("{}-{nanos}-{n}{SEGMENT_SUFFIX}", std::process::id());
        let path = self.dir.join(SPOOL_DIR).join(&name);
        let hidden = self.dir.join(SPOOL_DIR).join(format!(".{name}"));
        let file = HeldFile::open(|| {
            OpenOptions::new()
                .append(true)
                .create_new(true)
                .mode(self.access.file_mode())
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&hidden)
        })?;
        let visible = file.lock().and_then(|()| std::fs::rename(&hidden, &path));
        if let Err(e) = visible {
            let _ = std::fs::remove_file(&hidden);
            return Err(e);
        }
        Ok(Segment {
            file,
            len: 0,
            content: 0,
            due: Instant::now() + SEGMENT_AGE,
        })
    }

    /// What the spool cost so far.
    pub fn stats(&self) -> SpoolStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        SpoolStats {
            records: get(&self.records),
            bytes: get(&self.bytes),
            patches: get(&self.patches),
            parts: get(&self.parts),
            waits: get(&self.waits),
            wait_ns: get(&self.wait_ns),
            peak_bytes: get(&self.peak),
            bound: self.bound,
        }
    }
}

/// Records planned and written at once, on lane 0: what the tests (here and the compactor's)
/// spool with (the store plans records and writes them, on lane 0 or a lane thread:
/// [`SpoolWriter::plan`], [`SpoolWriter::write_planned`]).
impl SpoolWriter {
    /// Appends the content `bytes` whose digest is `hash` (computed by the caller) as one
    /// record; returns the bytes it took. When the spool would pass its bound and a
    /// compactor runs, first seals this writer's segment and waits until compaction made
    /// room (counted in [`SpoolStats`]). When this returns, the record is whole in the page
    /// cache: it survives the process dying in any way.
    pub fn put(&self, hash: &str, bytes: &[u8]) -> std::io::Result<u64> {
        let planned = self.plan(hash, bytes, None)?;
        self.write_planned(0, &planned, bytes)
    }

    /// Appends the content `bytes` whose digest is `hash`, the next version of content
    /// `base` that differs from it only in `ranges` ((offset, length), ascending:
    /// [`changed_ranges`]), as a patch record of those ranges when this writer wrote `base`
    /// itself, at most [`PATCH_CHAIN_MAX`] patches deep, and the ranges hold at most three
    /// quarters of the content; else as a whole record ([`SpoolWriter::put`]). Returns the
    /// bytes it took.
    pub fn put_version(
        &self,
        hash: &str,
        bytes: &[u8],
        base: &str,
        ranges: &[(usize, usize)],
    ) -> std::io::Result<u64> {
        let planned = self.plan(hash, bytes, Some((base, ranges)))?;
        self.write_planned(0, &planned, bytes)
    }
}

/// Bytes of a block [`write_with_holes`] leaves as a hole when all of them are zero.
const HOLE_BLOCK: usize = 64 << 10;

/// Appends `body` to `file` (opened to append), leaving each run of [`HOLE_BLOCK`]-byte blocks
/// that are all zero as a hole (the file extended over it, nothing written) instead of
/// writing it; reading a hole gives zeros. The last block is always written, so the file
/// reaches the body's end only once all of it is there (a writer that dies midway leaves a
/// record that is cut, as before).
///
/// Why: a buffer an application never wrote is zero; a `full` capture spools its first
/// content like any other, and Debian's clpeak `--global-bandwidth` spooled 2 GB of zeros
/// (its 2 GiB output before the first launch), which the spool lanes copied into the page
/// cache and compaction read back.
fn write_with_holes(file: &mut File, body: &[u8]) -> std::io::Result<()> {
    let mut end = file.metadata()?.len();
    // Data not written yet starts at `data`; the zero run before it has `zeros` bytes.
    let (mut data, mut zeros) = (0, 0u64);
    let mut at = 0;
    while at < body.len() {
        let next = (at + HOLE_BLOCK).min(body.len());
        if next < body.len() && all_zero(&body[at..next]) {
            if data < at {
                file.write_all(&body[data..at])?;
                end += (at - data) as u64;
            }
            zeros += (next - at) as u64;
            data = next;
        } else if zeros > 0 {
            end += zeros;
            file.set_len(end)?;
            zeros = 0;
        }
        at = next;
    }
    file.write_all(&body[data..])
}

/// Whether every byte of `bytes` is zero (early out at the first 512 bytes that are not).
fn all_zero(bytes: &[u8]) -> bool {
    bytes
        .chunks(512)
        .all(|c| c.iter().fold(0u8, |acc, &b| acc | b) == 0)
}
