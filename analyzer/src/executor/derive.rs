//! Derived inputs: contents before a launch that the capture keeps only as a digest, re-created
//! by re-executing the earlier launch that left them there.
//!
//! Why: past half its disk budget a capture stores only the inputs no earlier launch
//! re-creates (the shim's `contents::plan`); [`cltrap_capture::replayable::ReplayIndex`] names,
//! for every other input, the launch that produced it. [`Deriver`] restores a launch's inputs
//! by running those producers on the session's device — their own derived inputs first, back
//! to a launch whose inputs are stored — and checks every re-created content against its
//! recorded digest, so a producer that does not reproduce (a nondeterministic kernel, another
//! device's rounding) is a clear error, never silently wrong data.
//!
//! Cost: re-created contents are kept by digest in a bounded least-recently-used cache, and a
//! replay offers every launch's checked outputs to it ([`Deriver::offer`]), so replaying a
//! capture in order runs each launch about once. The walk back is an explicit stack, not
//! recursion: a chain may be thousands of launches long past the budget.
//!
//! The same cache serves stored contents: an output found equal to its recorded content
//! ([`Deriver::verify`]: one digest, or a byte comparison with the input when the record says
//! the launch left the buffer as it was) is kept under that content's digest, so the next
//! launch that reads it takes it from memory instead of decompressing and re-hashing it from
//! the capture (an in-order replay of a long capture reads each content about once).
//!
//! An output verified on the device ([`super::devverify`]) has no bytes on the host to offer:
//! it stays on the device for the next launch, which restores no host copy of it
//! ([`Deriver::input_except`]), and reaches this cache only when it leaves the device unbound
//! while some launch derives from its content or restores it ([`Deriver::wants`], read back by
//! [`super::Chain::settle`]).

use super::{BuildOptions, BuiltProgram, ExecError, LaunchInput, RunOutput, Session};
use cltrap_capture::devdigest::Sum;
use cltrap_capture::replayable::{DerivedInput, ReplayIndex, Replayability};
use cltrap_capture::{ArgRecord, Capture, Content, DigestKind, LaunchRecord};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

/// Bytes of re-created and verified contents kept between launches of one command: an eighth
/// of the machine's memory (or of its cgroup's limit, where lower), between [`CACHE_MIN`] and [`CACHE_MAX`] ([`CACHE_MIN`] where the
/// memory is not known). Why not a fixed 256 MB: clpeak's single-precision compute test
/// (Debian's clpeak, 160 launches each reading the 277 MB its predecessor wrote), captured
/// `full` on the H200 host, did not fit, so every launch of its replay read its input back
/// from the store again.
pub fn cache_bytes() -> usize {
    static BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        // SAFETY: plain queries of system constants.
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        let physical = match (usize::try_from(pages), usize::try_from(page)) {
            (Ok(n), Ok(p)) if n > 0 && p > 0 => n.saturating_mul(p),
            _ => return CACHE_MIN,
        };
        (physical.min(cgroup_limit()) / 8).clamp(CACHE_MIN, CACHE_MAX)
    })
}

/// The memory limit of this process's cgroup (v2 `memory.max`), or `usize::MAX` where there is
/// none or it cannot be read.
fn cgroup_limit() -> usize {
    std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(usize::MAX)
}

/// The least [`cache_bytes`] keeps.
pub const CACHE_MIN: usize = 256 << 20;
/// The most [`cache_bytes`] keeps.
pub const CACHE_MAX: usize = 4 << 30;
/// `dd128` sums kept ([`Deriver::verify_output`]); 16 bytes each, dropped all at once past it.
const SUMS_MAX: usize = 4096;

/// A content by its digest: function, digest, size.
pub(super) type Key = (DigestKind, String, u64);

fn key(c: &Content) -> Option<Key> {
    match c {
        Content::Digest { hash, size, algo } => Some((*algo, hash.clone(), *size)),
        _ => None,
    }
}

/// The key of a content whose bytes or digest were recorded: a stored blob is named by its
/// blake3 digest, so a verified output can stand in for it.
pub(super) fn content_key(c: &Content) -> Option<Key> {
    match c {
        Content::Blob { hash, size } => Some((DigestKind::Blake3, hash.clone(), *size)),
        other => key(other),
    }
}

/// Re-created contents by digest, least recently used evicted first past [`cache_bytes`].
#[derive(Default)]
struct Cache {
    entries: HashMap<Key, (Arc<Vec<u8>>, u64)>,
    order: BTreeMap<u64, Key>,
    tick: u64,
    bytes: usize,
}

impl Cache {
    fn get(&mut self, k: &Key) -> Option<Arc<Vec<u8>>> {
        self.tick += 1;
        let tick = self.tick;
        let (bytes, used) = self.entries.get_mut(k)?;
        self.order.remove(used);
        *used = tick;
        self.order.insert(tick, k.clone());
        Some(bytes.clone())
    }

    /// Removes and returns an entry: a content handed over as a launch's input is moved, not
    /// copied (the launch's verified output goes back in through [`Deriver::offer`]).
    fn take(&mut self, k: &Key) -> Option<Arc<Vec<u8>>> {
        let (bytes, used) = self.entries.remove(k)?;
        self.order.remove(&used);
        self.bytes -= bytes.len();
        Some(bytes)
    }

    fn put(&mut self, k: Key, bytes: Arc<Vec<u8>>) {
        let most = cache_bytes();
        if self.entries.contains_key(&k) || bytes.len() > most {
            return;
        }
        self.tick += 1;
        self.bytes += bytes.len();
        self.order.insert(self.tick, k.clone());
        self.entries.insert(k, (bytes, self.tick));
        while self.bytes > most {
            let Some((_, old)) = self.order.pop_first() else {
                break;
            };
            if let Some((b, _)) = self.entries.remove(&old) {
                self.bytes -= b.len();
            }
        }
    }
}

/// The `dd128` sums ([`Sum`]) of the contents verified so far, by key, for
/// [`Deriver::verify`].
#[derive(Default)]
struct Sums {
    sums: HashMap<Key, Sum>,
    /// Bytes digested whole (for tests of the cost).
    whole_bytes: u64,
}

impl Sums {
    /// Whether `bytes` are the content `k`; `ran_with` the bytes of content `before` that the
    /// argument ran with. A `dd128` content is checked from the sum of `before`, kept when
    /// it was checked, and the blocks where `bytes` differ from `ran_with`.
    fn check(
        &mut self,
        k: Key,
        before: Option<Key>,
        ran_with: Option<&[u8]>,
        bytes: &[u8],
    ) -> bool {
        if k.0 != DigestKind::Dd128 {
            return k.0.digest(bytes) == k.1;
        }
        let from = before
            .and_then(|b| self.sums.get(&b))
            .zip(ran_with)
            .and_then(|(sum, old)| sum.updated(old, bytes));
        let sum = from.unwrap_or_else(|| {
            self.whole_bytes += bytes.len() as u64;
            Sum::of(bytes)
        });
        if sum.digest(bytes.len() as u64) != k.1 {
            return false;
        }
        if self.sums.len() >= SUMS_MAX {
            self.sums.clear();
        }
        self.sums.insert(k, sum);
        true
    }
}

/// One launch on the walk back: the derived inputs it needs and those it has.
struct Frame {
    pos: usize,
    needs: Vec<(DerivedInput, Key)>,
    got: HashMap<u32, Arc<Vec<u8>>>,
}

/// Restores launches' inputs, stored or derived, for one command on one device.
pub struct Deriver<'c> {
    capture: &'c Capture,
    index: ReplayIndex,
    pos: HashMap<u64, usize>,
    /// Programs built on the command's session, by record hash: shared with the command
    /// itself ([`Deriver::program`]), so a program is built once whether a producer or the
    /// launch being replayed needs it first.
    programs: HashMap<String, Rc<BuiltProgram>>,
    cache: Cache,
    /// Outputs (launch id, argument) seen to differ from their recorded digests on this
    /// session's device: a consumer of one is refused at once instead of re-executing the
    /// chain behind it again (on another device, every later launch of a long capture
    /// would otherwise walk the whole chain back: quadratic).
    unreproducible: HashSet<(u64, u32)>,
    /// The `dd128` sums of contents verified by digest: an output whose record keeps a
    /// `dd128` is verified from the blocks where it differs from the content it ran with.
    sums: Sums,
    /// The contents some launch of the capture derives an input from (any launch: a producer
    /// may be re-executed for any later one), or restores one from (a stored content: the last
    /// such launch's position), so that an output holding one reaches the host before it
    /// leaves the device ([`super::Chain::settle`]).
    wanted_keys: HashMap<Key, usize>,
    /// Producer launches re-executed so far (for reports and tests of the cost).
    pub executed: u64,
}

impl<'c> Deriver<'c> {
    /// The captured program `hash` built on `session`, once per command (its launches and
    /// the producers re-executed for them share it).
    pub fn program(
        &mut self,
        session: &Session,
        hash: &str,
    ) -> Result<Rc<BuiltProgram>, ExecError> {
        if let Some(p) = self.programs.get(hash) {
            return Ok(p.clone());
        }
        let record = self.capture.program(hash)?;
        let built = Rc::new(session.build(self.capture, &record, &BuildOptions::default())?);
        self.programs.insert(hash.to_string(), built.clone());
        Ok(built)
    }

    /// A resolver over the whole of `capture` (one pass over its launches).
    pub fn new(capture: &'c Capture) -> Deriver<'c> {
        let index = ReplayIndex::of(&capture.launches);
        let mut wanted_keys: HashMap<Key, usize> = HashMap::new();
        for (at, l) in capture.launches.iter().enumerate() {
            // A stored input: restored from this cache before the store.
            for a in &l.args {
                if let ArgRecord::Buffer { before, .. } | ArgRecord::Image { before, .. } = a {
                    if let (Content::Blob { .. }, Some(k)) = (before, content_key(before)) {
                        let last = wanted_keys.entry(k).or_insert(at);
                        *last = (*last).max(at);
                    }
                }
            }
            if let Some(Replayability::Derived { inputs, .. }) = index.get(l.id) {
                for d in inputs {
                    if let Some(
                        ArgRecord::Buffer { before, .. } | ArgRecord::Image { before, .. },
                    ) = l.args.get(d.arg as usize)
                    {
                        if let Some(k) = key(before) {
                            wanted_keys.insert(k, usize::MAX);
                        }
                    }
                }
            }
        }
        Deriver {
            capture,
            index,
            wanted_keys,
            pos: capture
                .launches
                .iter()
                .enumerate()
                .map(|(p, l)| (l.id, p))
                .collect(),
            programs: HashMap::new(),
            cache: Cache::default(),
            unreproducible: HashSet::new(),
            sums: Sums::default(),
            executed: 0,
        }
    }

    /// The launch `l` with every input restored: stored ones from the capture, derived ones
    /// by re-executing their producers on `session` (checked against their digests).
    /// Stored inputs that an earlier run of this command already produced and verified come
    /// from the cache rather than from the capture.
    pub fn input(&mut self, session: &Session, l: &LaunchRecord) -> Result<LaunchInput, ExecError> {
        self.input_except(session, l, &[])
    }

    /// [`Deriver::input`] where the buffer arguments `resident` are not restored: their
    /// contents are on the device, in objects the launch binds ([`super::Chain::plan`]), and
    /// their host copies are placeholders without bytes.
    pub fn input_except(
        &mut self,
        session: &Session,
        l: &LaunchRecord,
        resident: &[usize],
    ) -> Result<LaunchInput, ExecError> {
        let needs = self.needs_except(l, resident);
        let mut got = self.obtain_needs(session, l, needs.clone())?;
        // The launch's derived inputs move out of the cache too, so they reach it uncopied.
        for (_, k) in needs {
            self.cache.take(&k);
        }
        for (i, a) in l.args.iter().enumerate() {
            let (ArgRecord::Buffer { before, .. } | ArgRecord::Image { before, .. }) = a else {
                continue;
            };
            if resident.contains(&i) {
                continue;
            }
            if let (Content::Blob { .. }, Some(k)) = (before, content_key(before)) {
                if got.contains_key(&(i as u32)) {
                    continue;
                }
                if let Some(b) = self.cache.take(&k) {
                    got.insert(i as u32, b);
                }
            }
        }
        LaunchInput::from_record_except(self.capture, l, resident, &mut |arg, _| {
            got.remove(&arg)
                .map(|b| Arc::try_unwrap(b).unwrap_or_else(|shared| shared.as_ref().clone()))
        })
    }

    /// The contents of `l`'s derived inputs by argument index, re-created on `session` and
    /// checked against their digests (empty when all its inputs are stored): for a process
    /// that hands them to another one, which then restores the launch with
    /// [`LaunchInput::from_record_with`].
    pub fn derived(
        &mut self,
        session: &Session,
        l: &LaunchRecord,
    ) -> Result<HashMap<u32, Arc<Vec<u8>>>, ExecError> {
        let needs = self.needs(l);
        self.obtain_needs(session, l, needs)
    }

    /// Whether restoring `l` with [`Deriver::input_except`] (`resident` left out) runs
    /// producers on the device: a derived input its cache does not hold. Such a run may
    /// scribble on what the device holds (a stray write on a GPU), so a replay binds nothing
    /// it kept from before then.
    pub fn will_execute(&self, l: &LaunchRecord, resident: &[usize]) -> bool {
        self.pos.contains_key(&l.id)
            && self
                .needs_except(l, resident)
                .iter()
                .any(|(_, k)| !self.cache.entries.contains_key(k))
    }

    /// Whether some launch of the capture derives an input from the content `k`, or launch
    /// `id` or a later one restores a stored input holding it (which this cache spares
    /// reading from the store).
    pub(super) fn wants(&self, k: &Key, id: u64) -> bool {
        let at = self.pos.get(&id).copied().unwrap_or(0);
        self.wanted_keys.get(k).is_some_and(|&last| last >= at)
    }

    /// Keeps the content `k`, verified, for the launches that derive from it (an output
    /// read back after it was verified on the device).
    pub(super) fn put(&mut self, k: Key, bytes: Vec<u8>) {
        self.cache.put(k, Arc::new(bytes));
    }

    /// The derived inputs `needs` of `l`, obtained (see [`Deriver::derived`]).
    fn obtain_needs(
        &mut self,
        session: &Session,
        l: &LaunchRecord,
        needs: Vec<(DerivedInput, Key)>,
    ) -> Result<HashMap<u32, Arc<Vec<u8>>>, ExecError> {
        let Some(&pos) = self.pos.get(&l.id) else {
            return Ok(HashMap::new());
        };
        if needs.is_empty() {
            return Ok(HashMap::new());
        }
        self.obtain(
            session,
            Frame {
                pos,
                needs,
                got: HashMap::new(),
            },
        )
    }

    /// Which outputs of a run of `l` equal their recorded contents, by argument index: an
    /// argument the record says the launch left unchanged is compared with the bytes it ran
    /// with (`input`); any other output is digested once, with the recorded digest's function.
    /// An output that is not `true` here may still match within a tolerance.
    ///
    /// An output whose record keeps a `dd128` and whose argument ran with a content this
    /// deriver verified before is digested from the blocks where the two differ
    /// ([`Sum::updated`]): the same verdict as a digest of the whole, at the cost of a
    /// comparison where a launch rewrote a few places of a large buffer.
    pub fn verify(&mut self, l: &LaunchRecord, input: &LaunchInput, out: &RunOutput) -> Vec<bool> {
        l.args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let (ArgRecord::Buffer { before, after, .. }
                | ArgRecord::Image { before, after, .. }) = a
                else {
                    return false;
                };
                let (Some(k), Some(Some(bytes))) = (content_key(after), out.outputs.get(i)) else {
                    return false;
                };
                if bytes.len() as u64 != k.2 {
                    return false;
                }
                let ran_with = match input.args.get(i) {
                    Some(super::InputArg::Buffer { bytes, .. })
                    | Some(super::InputArg::Image { bytes, .. }) => Some(bytes),
                    _ => None,
                };
                if content_key(before).as_ref() == Some(&k) && ran_with == Some(bytes) {
                    return true;
                }
                self.sums
                    .check(k, content_key(before), ran_with.map(Vec::as_slice), bytes)
            })
            .collect()
    }

    /// A run of `l` (matched or not) with [`Deriver::verify`]'s verdicts: each output equal to
    /// its recorded content is kept for the launches after it, so an in-order replay derives
    /// nothing twice and reads each stored content about once; one that differs from a
    /// recorded digest is remembered as not reproducible on this device.
    ///
    /// The verified outputs move out of `out` into the cache (nothing is left to compare in
    /// them); the others stay for the comparison with a tolerance.
    pub fn offer(&mut self, l: &LaunchRecord, out: &mut RunOutput, verified: &[bool]) {
        for (i, a) in l.args.iter().enumerate() {
            let (ArgRecord::Buffer { after, .. } | ArgRecord::Image { after, .. }) = a else {
                continue;
            };
            let Some(k) = content_key(after) else {
                continue;
            };
            if !verified.get(i).copied().unwrap_or(false) {
                if matches!(after, Content::Digest { .. }) {
                    self.unreproducible.insert((l.id, i as u32));
                }
                continue;
            }
            let Some(bytes) = out.outputs.get_mut(i).and_then(Option::take) else {
                continue;
            };
            self.cache.put(k, Arc::new(bytes));
        }
    }

    /// [`Deriver::needs`] without the arguments `resident`.
    fn needs_except(&self, l: &LaunchRecord, resident: &[usize]) -> Vec<(DerivedInput, Key)> {
        let mut needs = self.needs(l);
        needs.retain(|(d, _)| !resident.contains(&(d.arg as usize)));
        needs
    }

    /// The derived inputs of `l`, with their digests.
    fn needs(&self, l: &LaunchRecord) -> Vec<(DerivedInput, Key)> {
        let Some(Replayability::Derived { inputs, .. }) = self.index.get(l.id) else {
            return Vec::new();
        };
        inputs
            .iter()
            .filter_map(|d| {
                let before = match l.args.get(d.arg as usize)? {
                    ArgRecord::Buffer { before, .. } | ArgRecord::Image { before, .. } => before,
                    _ => return None,
                };
                Some((d.clone(), key(before)?))
            })
            .collect()
    }

    /// Walks back from `root` until every derived input it needs is at hand: a producer whose
    /// own inputs are at hand runs and hands its outputs to the launch that needed them.
    fn obtain(
        &mut self,
        session: &Session,
        root: Frame,
    ) -> Result<HashMap<u32, Arc<Vec<u8>>>, ExecError> {
        let root_id = self.capture.launches[root.pos].id;
        let mut stack = vec![root];
        loop {
            let Some(top) = stack.last_mut() else {
                return Ok(HashMap::new());
            };
            for (d, k) in &top.needs {
                if let std::collections::hash_map::Entry::Vacant(e) = top.got.entry(d.arg) {
                    if let Some(b) = self.cache.get(k) {
                        e.insert(b);
                    }
                }
            }
            let missing = top
                .needs
                .iter()
                .find(|(d, _)| !top.got.contains_key(&d.arg))
                .map(|(d, _)| d.clone());
            if let Some(d) = missing {
                if self.unreproducible.contains(&(d.producer, d.producer_arg)) {
                    let launch = self.capture.launches[top.pos].id;
                    self.poison(&stack);
                    return Err(ExecError::NotDerivable {
                        producer: d.producer,
                        producer_arg: d.producer_arg,
                        launch,
                    });
                }
                let pos = *self.pos.get(&d.producer).ok_or_else(|| {
                    ExecError::NotReplayable(format!(
                        "launch {} needed to derive an input of launch {root_id} is not in the capture",
                        d.producer
                    ))
                })?;
                let producer = &self.capture.launches[pos];
                let needs = self.needs(producer);
                stack.push(Frame {
                    pos,
                    needs,
                    got: HashMap::new(),
                });
                continue;
            }
            if stack.len() == 1 {
                return Ok(stack.pop().map(|f| f.got).unwrap_or_default());
            }
            let Some(frame) = stack.pop() else {
                continue;
            };
            let consumer = stack
                .last()
                .map_or(root_id, |f| self.capture.launches[f.pos].id);
            let made = self.execute(session, &frame, consumer)?;
            let id = self.capture.launches[frame.pos].id;
            let mut refused = None;
            if let Some(parent) = stack.last_mut() {
                for (d, k) in &parent.needs {
                    if d.producer != id || parent.got.contains_key(&d.arg) {
                        continue;
                    }
                    match made.get(k) {
                        Some(b) => {
                            parent.got.insert(d.arg, b.clone());
                        }
                        None => {
                            refused = Some(d.producer_arg);
                            break;
                        }
                    }
                }
            }
            if let Some(producer_arg) = refused {
                self.poison(&stack);
                return Err(ExecError::NotDerivable {
                    producer: id,
                    producer_arg,
                    launch: consumer,
                });
            }
        }
    }

    /// Marks the outputs the walk `stack` was after as not reproducible: each frame needed
    /// them from the frame above it, whose chain just turned out not to reproduce here. A
    /// later consumer then stops at the first of them instead of walking the chain again.
    fn poison(&mut self, stack: &[Frame]) {
        for pair in stack.windows(2) {
            let child = self.capture.launches[pair[1].pos].id;
            for (d, _) in &pair[0].needs {
                if d.producer == child && !pair[0].got.contains_key(&d.arg) {
                    self.unreproducible.insert((d.producer, d.producer_arg));
                }
            }
        }
    }

    /// Re-executes the producer of `frame` (its derived inputs at hand) and returns its
    /// outputs that equal their recorded digests (all of them also go to the cache; the
    /// caller reports a needed one that differs as [`ExecError::NotDerivable`]).
    fn execute(
        &mut self,
        session: &Session,
        frame: &Frame,
        consumer: u64,
    ) -> Result<HashMap<Key, Arc<Vec<u8>>>, ExecError> {
        let capture = self.capture;
        let l = &capture.launches[frame.pos];
        let failed = |e: ExecError| ExecError::ProducerFailed {
            producer: l.id,
            launch: consumer,
            why: e.to_string(),
        };
        let input = LaunchInput::from_record_with(capture, l, &mut |arg, _| {
            frame.got.get(&arg).map(|b| b.as_ref().clone())
        })
        .map_err(failed)?;
        let program = self.program(session, &l.program).map_err(failed)?;
        let out = session.run(&program, &input, &[]).map_err(failed)?;
        self.executed += 1;
        let mut made = HashMap::new();
        for (i, a) in l.args.iter().enumerate() {
            let (ArgRecord::Buffer { after, .. } | ArgRecord::Image { after, .. }) = a else {
                continue;
            };
            let Some(k) = key(after) else { continue };
            let Some(Some(bytes)) = out.outputs.get(i) else {
                continue;
            };
            if k.0.digest(bytes) == k.1 {
                let b = Arc::new(bytes.clone());
                self.cache.put(k.clone(), b.clone());
                made.insert(k, b);
            } else {
                self.unreproducible.insert((l.id, i as u32));
            }
        }
        Ok(made)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cache is an eighth of the machine's memory (as `/proc/meminfo` counts it, to within
    /// a page count's rounding; or of the cgroup's limit, where lower), within its bounds.
    #[test]
    fn the_cache_is_an_eighth_of_the_memory_within_its_bounds() {
        let meminfo = std::fs::read_to_string("/proc/meminfo").expect("/proc/meminfo");
        let kib: usize = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("MemTotal");
        let want = ((kib * 1024).min(cgroup_limit()) / 8).clamp(CACHE_MIN, CACHE_MAX);
        let got = cache_bytes();
        assert!(
            got.abs_diff(want) <= 1 << 20,
            "cache {got} bytes, an eighth of the memory is {want}"
        );
    }
    use cltrap_capture::devdigest::dd128;

    fn key(bytes: &[u8]) -> Key {
        (DigestKind::Dd128, dd128(bytes), bytes.len() as u64)
    }

    #[test]
    fn a_next_version_recorded_as_a_dd128_is_checked_from_the_blocks_that_changed() {
        let mut sums = Sums::default();
        let first: Vec<u8> = (0..1u32 << 20)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
            .collect();
        assert!(sums.check(key(&first), None, None, &first));
        assert_eq!(sums.whole_bytes, first.len() as u64);
        // A launch that rewrote a few places: checked without digesting it whole.
        let mut next = first.clone();
        for p in [3, 70_000, 1_000_000] {
            next[p] ^= 1;
        }
        assert!(sums.check(key(&next), Some(key(&first)), Some(&first), &next));
        assert_eq!(sums.whole_bytes, first.len() as u64);
        // And the one after it, from the sum just kept.
        let mut third = next.clone();
        third[500_000] = third[500_000].wrapping_add(7);
        assert!(sums.check(key(&third), Some(key(&next)), Some(&next), &third));
        assert_eq!(sums.whole_bytes, first.len() as u64);
        // Bytes that are not the recorded content still fail, from the sum or whole.
        let mut wrong = third.clone();
        wrong[9] ^= 0x80;
        assert!(!sums.check(key(&third), Some(key(&next)), Some(&next), &wrong));
        assert!(!sums.check(key(&third), None, None, &wrong));
        // A content whose predecessor was never checked here is digested whole.
        let other: Vec<u8> = third.iter().map(|b| b ^ 0x33).collect();
        assert!(sums.check(key(&other), Some(key(&other[..16])), Some(&third), &other));
        assert_eq!(sums.whole_bytes, 3 * first.len() as u64);
    }
}
