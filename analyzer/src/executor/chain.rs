//! Device-resident restore between consecutive launches of an in-order replay.
//!
//! Why: replaying a long capture in order, a launch's input is usually exactly the previous
//! launch's output, already on the device and already found equal to its recorded content.
//! Uploading those bytes again from host memory (what [`Session::run`] does for every
//! buffer) is a whole-buffer host-to-device copy per launch, most of a replay's cost on a
//! GPU. A [`Chain`] keeps the buffer objects of the last launch run through it whose
//! outputs were verified ([`Chain::keep`]), keyed by the content they hold (several objects
//! may hold one content: clpeak's kernel-latency test passes an input and an output that
//! both hold zeros), and the next launch binds each one to the argument whose recorded
//! pre-launch content has that key (same size and kernel-access flags) instead of creating
//! and uploading a new object ([`Chain::run`]).
//!
//! What keeps the verdicts identical to a replay that uploads everything:
//! - only outputs whose bytes were read back after their run and found equal to their
//!   recorded content ([`super::Deriver::verify`]) are kept, so a bound object holds exactly
//!   the bytes the capture restores (the launch's host copy of them still comes from the
//!   capture or the host cache, and is what its comparisons use);
//! - only the last run's objects are kept: every object not bound by the next launch is
//!   released after it, so nothing a later kernel could have scribbled on (a stray write on
//!   a GPU) is ever bound;
//! - a run that fails, a launch with stand-in buffers (run twice), or a launch whose inputs
//!   were derived by re-executing other launches on the device clears the chain
//!   ([`Chain::clear`]): the next launch restores from the capture, as without a chain.
//!
//! Outputs recorded as `dd128` digests are verified on the device where the session has a
//! digest engine ([`super::devverify`]): such an output (a plain buffer argument with an
//! object of its own) is not read back; its digest's partials are, in the launch's one trip to
//! the device (the digest kernels enqueued behind the kernel, one wait for all), and only an
//! output whose digest differs is then read back whole, for the existing comparison to
//! report it. A
//! device-verified output is held *unread*: its bytes never came to the host. A next launch
//! that binds it gets a placeholder as its host copy (no bytes: [`Plan::resident`] names those
//! arguments, whose inputs the [`super::Deriver`] then does not restore), so a chain of
//! launches each rewriting a large buffer moves only partials over the bus. Nothing is lost
//! for the host: before an unread object is released unbound, it is read back into the
//! deriver's cache when some launch of the capture derives its input from that content
//! ([`Chain::settle`]), which is what reading it back at once would have put there; and a
//! launch that cannot use its placeholders (stand-in buffers, producers re-executed) has
//! them filled from their objects first ([`Chain::fill`]).
//!
//! Outputs recorded as stored blobs (named by blake3, which no device computes) are verified
//! the same way once the chain knows the blob's `dd128` digest: an output of at least
//! [`LEARN_MIN`] bytes recorded as a blob it does not know yet is read back and checked on the
//! host as before, and digested on the device in the same trip; found equal to its blob
//! ([`Chain::keep`]), its device digest is the blob's, learned for the next outputs recorded as
//! that blob. Why: a launch that rewrites a large buffer with the contents it held (clpeak's
//! compute tests write the same 277 MB at each of their 160 launches, captured `full` on the
//! H200) had every output read back and compared on the host, most of its replay's time.
//!
//! Outputs read back go into the launch's host allocations of its predecessor's inputs
//! ([`Chain::recycle`]), so a long replay faults in no fresh pages.

use super::cl::Mem;
use super::derive::{content_key, Key};
use super::devverify::{DeviceVerification, State};
use super::readback::Batch;
use super::run::access_flags;
use super::{BuiltProgram, Deriver, ExecError, InputArg, LaunchInput, RunOutput, Session};
use cltrap_capture::{ArgRecord, Content, DigestKind, LaunchRecord, MemId};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// Smallest allocation worth recycling ([`Chain::recycle`]): smaller ones cost little to
/// map afresh.
const SPARE_MIN: usize = 64 << 10;

/// Smallest output recorded as a stored blob whose `dd128` digest a chain learns
/// ([`Chain::keep`]), so that the next outputs with the same content are verified on the
/// device: a smaller one costs about as much to read back as to digest.
const LEARN_MIN: usize = 1 << 20;

/// Digests learned at most ([`Chain::keep`]); past it they are forgotten all at once.
const LEARNED_MAX: usize = 4096;

/// How [`Chain::run`] judges an output on the device: against this `dd128` digest (recorded,
/// or learned for the blob recorded), or by learning the digest of the blob recorded (the
/// output is read back and verified on the host as without a digest).
enum Judge {
    Expect(String),
    Learn(String),
}

/// A buffer object held between runs: its object, kernel-access flags and size.
struct Held {
    mem: Mem,
    flags: u64,
    size: usize,
    /// Verified on the device: its bytes were never read to the host.
    unread: bool,
}

/// What [`Chain::run`] gives back.
pub struct Ran {
    /// The run's outputs: `None` for one verified on the device (or not read back).
    pub out: RunOutput,
    /// Its buffer objects, for [`Chain::keep`] (see [`Session::run_bound`]).
    pub objects: Vec<Option<Mem>>,
    /// Which outputs were verified on the device, by argument index.
    pub on_device: Vec<bool>,
}

/// One held object: the content it holds, and which of the objects holding it.
type HeldAt = (Key, usize);

/// Which buffer arguments of a launch bind held objects, decided before its inputs are
/// restored ([`Chain::plan`]), so the restore can leave out what stays on the device.
#[derive(Debug, Default)]
pub struct Plan {
    /// Argument (the first of its memory object) → the held object it binds.
    binds: HashMap<usize, HeldAt>,
    /// Arguments whose object is an unread held one, with that object: their host copies are
    /// placeholders (no bytes), not restored.
    resident: Vec<(usize, HeldAt)>,
}

impl Plan {
    /// The arguments whose host copies are not restored: their objects hold their contents
    /// on the device, and nothing on the host has them.
    pub fn resident(&self) -> Vec<usize> {
        self.resident.iter().map(|(i, _)| *i).collect()
    }

    /// Gives up the placeholders: every input is to be restored on the host.
    pub fn restore_all(&mut self) {
        self.resident.clear();
    }
}

/// How a replay's buffer inputs reached the device: for `--timing` reports and for tests
/// that the resident path is taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Traffic {
    /// Buffer inputs bound to an object already on the device (not uploaded).
    pub bound: u64,
    /// Their bytes: what was not uploaded.
    pub bound_bytes: u64,
    /// Buffer inputs created and uploaded from the host.
    pub uploaded: u64,
    /// Their bytes.
    pub uploaded_bytes: u64,
    /// Outputs verified on the device from their `dd128` partials, not read back.
    #[serde(default)]
    pub device_verified: u64,
    /// Outputs read back whole (to compare them, or because their digest differed on the
    /// device), and unread contents read back for the host later ([`Chain::settle`]).
    #[serde(default)]
    pub read_back: u64,
    /// Their bytes.
    #[serde(default)]
    pub read_back_bytes: u64,
    /// Times the host waited for the device ([`Session::device_waits`]) while replaying the
    /// launches, deriving their inputs included: one per launch when each runs, has its
    /// outputs read or digested and waits in a single trip.
    #[serde(default)]
    pub waits: u64,
    /// Of those, the waits of the launches' own runs ([`Chain::run`], and the two runs of a
    /// launch with stand-ins): one per launch (the kernel, the reads of its outputs and the
    /// digests of those verified on the device in one trip), and one more per output whose
    /// device digest differs. The others restore inputs: outputs kept on the device read back
    /// for launches that derive from them ([`Chain::settle`], [`Chain::fill`]), producers
    /// re-executed.
    #[serde(default)]
    pub run_waits: u64,
}

impl Traffic {
    /// The traffic of `self` since `earlier` (a snapshot of the same counters).
    pub fn since(&self, earlier: &Traffic) -> Traffic {
        Traffic {
            bound: self.bound.saturating_sub(earlier.bound),
            bound_bytes: self.bound_bytes.saturating_sub(earlier.bound_bytes),
            uploaded: self.uploaded.saturating_sub(earlier.uploaded),
            uploaded_bytes: self.uploaded_bytes.saturating_sub(earlier.uploaded_bytes),
            device_verified: self.device_verified.saturating_sub(earlier.device_verified),
            read_back: self.read_back.saturating_sub(earlier.read_back),
            read_back_bytes: self.read_back_bytes.saturating_sub(earlier.read_back_bytes),
            waits: self.waits.saturating_sub(earlier.waits),
            run_waits: self.run_waits.saturating_sub(earlier.run_waits),
        }
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &Traffic) {
        self.bound += other.bound;
        self.bound_bytes += other.bound_bytes;
        self.uploaded += other.uploaded;
        self.uploaded_bytes += other.uploaded_bytes;
        self.device_verified += other.device_verified;
        self.read_back += other.read_back;
        self.read_back_bytes += other.read_back_bytes;
        self.waits += other.waits;
        self.run_waits += other.run_waits;
    }
}

/// The verified output buffers of the last launch run, on the device, by content.
#[derive(Default)]
pub struct Chain {
    /// The objects kept by content; one taken by a run is None.
    held: HashMap<Key, Vec<Option<Held>>>,
    /// Allocations of the last launch's inputs, for its successor's read-backs.
    spare: Vec<Vec<u8>>,
    /// How the buffer inputs of the launches run through the chain reached the device.
    pub traffic: Traffic,
    /// The `dd128` engine on the chain's session ([`super::devverify`]), decided at its
    /// first use.
    digest: std::cell::OnceCell<State>,
    /// The `dd128` digests of stored blobs (by blake3 digest) that earlier outputs were found
    /// equal to on the host ([`Chain::keep`]).
    learned: HashMap<String, String>,
    /// The last run's outputs digested to learn, their device digest found equal to the
    /// digest of the bytes read back: (launch id, argument, blob, `dd128` digest).
    learning: Vec<(u64, usize, String, String)>,
}

/// The memory object of argument `i` when it is a plain buffer argument of its own: no
/// other argument uses the object, none is a sub-buffer of it.
fn own_object(input: &LaunchInput, i: usize) -> Option<MemId> {
    let Some(InputArg::Buffer { mem: Some(m), .. }) = input.args.get(i) else {
        return None;
    };
    let shared = input.args.iter().enumerate().any(|(j, a)| {
        j != i
            && match a {
                InputArg::Buffer { mem, .. } | InputArg::Image { mem, .. } => *mem == Some(*m),
                InputArg::SubBuffer { mem, parent, .. } => *mem == Some(*m) || parent == m,
                _ => false,
            }
    });
    (!shared).then_some(*m)
}

/// Whether argument `i` is the first of `input`'s arguments to use its memory object (an
/// anonymous one is its own): a run reads each object once, whatever uses it.
fn first_of_its_object(input: &LaunchInput, i: usize) -> bool {
    let mem_of = |a: &InputArg| match a {
        InputArg::Buffer { mem, .. }
        | InputArg::Image { mem, .. }
        | InputArg::SubBuffer { mem, .. } => *mem,
        _ => None,
    };
    let Some(m) = input.args.get(i).and_then(mem_of) else {
        return true;
    };
    !input.args[..i].iter().any(|a| mem_of(a) == Some(m))
}

/// The recorded contents before (`true`) or after a buffer argument, if it is one.
fn content(l: &LaunchRecord, i: usize, before: bool) -> Option<&Content> {
    match l.args.get(i)? {
        ArgRecord::Buffer {
            before: b,
            after: a,
            ..
        } => Some(if before { b } else { a }),
        _ => None,
    }
}

impl Chain {
    /// An empty chain: the first launch uploads everything.
    pub fn new() -> Chain {
        Chain::default()
    }

    /// Whether outputs run through this chain on `session` (always the same session) are
    /// verified on its device, and if that was asked for but cannot be, why (for the
    /// command to say once).
    pub fn device_verification(&self, session: &Session) -> DeviceVerification {
        self.digest
            .get_or_init(|| State::of(session))
            .verification()
    }

    /// The held object `at`, unless a run took it.
    fn get(&self, at: &HeldAt) -> Option<&Held> {
        self.held.get(&at.0)?.get(at.1)?.as_ref()
    }

    /// Releases every held object: the next launch restores its inputs from the host.
    /// Unread objects are lost with them: call [`Chain::settle`] first where a later launch
    /// may derive from them.
    pub fn clear(&mut self) {
        self.held.clear();
        self.learning.clear();
    }

    /// Which of `l`'s buffer arguments will bind held objects ([`Chain::run`] binds exactly
    /// these): the first argument of each memory object whose recorded contents before the
    /// launch are those of a held object with the same kernel-access flags. Arguments of an
    /// unread object are [`Plan::resident`].
    pub fn plan(&self, l: &LaunchRecord) -> Plan {
        let mut plan = Plan::default();
        let mut first_of: HashMap<MemId, usize> = HashMap::new();
        let mut taken: HashSet<HeldAt> = HashSet::new();
        for (i, a) in l.args.iter().enumerate() {
            let ArgRecord::Buffer {
                mem, flags, before, ..
            } = a
            else {
                continue;
            };
            if super::input::sub_of_an_argument(l, a) || first_of.contains_key(mem) {
                continue;
            }
            first_of.insert(*mem, i);
            let Some(k) = content_key(before) else {
                continue;
            };
            // The first object holding it, with the argument's flags, not bound yet.
            let fits = |h: &Held| h.flags == access_flags(*flags) && h.size as u64 == k.2;
            let free = self.held.get(&k).and_then(|all| {
                (all.iter().enumerate())
                    .find(|(j, h)| {
                        h.as_ref().is_some_and(fits) && !taken.contains(&(k.clone(), *j))
                    })
                    .map(|(j, _)| j)
            });
            if let Some(j) = free {
                taken.insert((k.clone(), j));
                plan.binds.insert(i, (k, j));
            }
        }
        for (i, a) in l.args.iter().enumerate() {
            let ArgRecord::Buffer { mem, .. } = a else {
                continue;
            };
            if super::input::sub_of_an_argument(l, a) {
                continue;
            }
            let bound = first_of.get(mem).and_then(|f| plan.binds.get(f));
            if let Some(at) = bound {
                if self.get(at).is_some_and(|h| h.unread) {
                    plan.resident.push((i, at.clone()));
                }
            }
        }
        plan
    }

    /// Reads back, into `deriver`'s cache, every unread held object that `plan` (of launch
    /// `launch`) does not bind as resident and whose contents some launch of the capture
    /// derives its input from, or this or a later launch restores a stored input from
    /// ([`Deriver::wants`]): before such an object is released, its contents reach the host,
    /// as they would have had the output been read back when it was verified. Of several
    /// objects holding one content, one is read (and all count as read). They are read in one
    /// trip, waited for once. Read-back failures leave the contents to be derived
    /// again (by re-execution) or read from the capture, as after a cache eviction.
    pub fn settle(
        &mut self,
        session: &Session,
        plan: &Plan,
        deriver: &mut Deriver<'_>,
        launch: u64,
    ) {
        let keep: HashSet<&HeldAt> = plan.resident.iter().map(|(_, at)| at).collect();
        // All of them in one trip to the device, waited for once; one object per content.
        let mut trip = Batch::new(session);
        let mut reading: Vec<(Key, usize)> = Vec::new();
        for (k, all) in &self.held {
            let resident = |j: usize| keep.contains(&(k.clone(), j));
            let unread = (all.iter().enumerate())
                .find(|(j, h)| h.as_ref().is_some_and(|h| h.unread) && !resident(*j));
            let Some((_, Some(h))) = unread else {
                continue;
            };
            // Read even when another object holding it is bound as resident: the launch may
            // write through that one, and the content would then be nowhere.
            if !deriver.wants(k, launch) {
                continue;
            }
            let what = "reading back an output a later launch takes its input from";
            match trip.extra(&h.mem, h.size, what) {
                Ok(n) => reading.push((k.clone(), n)),
                Err(_) => break,
            }
        }
        if reading.is_empty() {
            return;
        }
        let Ok(mut landed) = trip.wait(None) else {
            return;
        };
        for (k, n) in reading {
            let Some(bytes) = landed.extras.get_mut(n) else {
                continue;
            };
            let bytes = std::mem::take(bytes);
            self.traffic.read_back += 1;
            self.traffic.read_back_bytes += bytes.len() as u64;
            // Every object holding that content has it on the host now.
            for h in self.held.get_mut(&k).into_iter().flatten().flatten() {
                h.unread = false;
            }
            deriver.put(k, bytes);
        }
    }

    /// Gives `input`'s placeholders (the resident arguments of `plan`) their bytes, read
    /// back from the held objects they were to bind, and empties the plan's resident list:
    /// for a launch that will not bind them after all (stand-in buffers, producers run on
    /// the device since).
    pub fn fill(
        &mut self,
        session: &Session,
        input: &mut LaunchInput,
        plan: &mut Plan,
    ) -> Result<(), ExecError> {
        for (i, at) in std::mem::take(&mut plan.resident) {
            let h = self.get(&at).ok_or_else(|| {
                ExecError::NotReplayable(format!(
                    "argument {i}: its contents were on the device only, and are gone"
                ))
            })?;
            let bytes = super::readback::read_whole(session, &h.mem, h.size, i)?;
            self.traffic.read_back += 1;
            self.traffic.read_back_bytes += bytes.len() as u64;
            if let Some(InputArg::Buffer { bytes: b, .. }) = input.args.get_mut(i) {
                *b = bytes;
            }
        }
        Ok(())
    }

    /// Runs `input` (launch `l`, restored with `plan`'s resident arguments as placeholders)
    /// on `session`, binding the held objects `plan` names. Every held object not bound is
    /// released; on an error the chain is left empty. Returns the run's outputs, its buffer
    /// objects and which outputs were verified on the device (not read back): [`Ran`]. An
    /// output the record holds nothing of (neither bytes nor digest) is not read back: nothing
    /// would compare or keep it. The kernel, the reads of its outputs and the digests of
    /// those verified on the device go to the device in one trip, waited for once
    /// ([`Session::run_riding`]); only an output whose digest differs costs another wait
    /// (counted by the caller: [`Session::waited`]).
    pub fn run(
        &mut self,
        session: &Session,
        program: &BuiltProgram,
        l: &LaunchRecord,
        input: &LaunchInput,
        plan: &Plan,
    ) -> Result<Ran, ExecError> {
        let mut held = std::mem::take(&mut self.held);
        let (mut bound, mut bound_bytes, mut uploaded, mut uploaded_bytes) = (0, 0, 0, 0);
        let mut bind = |i: usize, a: &InputArg| {
            let InputArg::Buffer { bytes, .. } = a else {
                return None;
            };
            let take = |(k, j): &HeldAt| held.get_mut(k)?.get_mut(*j)?.take();
            match plan.binds.get(&i).and_then(take) {
                Some(h) => {
                    bound += 1;
                    bound_bytes += h.size as u64;
                    Some(h.mem)
                }
                None => {
                    uploaded += 1;
                    uploaded_bytes += bytes.len() as u64;
                    None
                }
            }
        };
        // Outputs to verify on the device, in an object of their own: recorded as a `dd128`,
        // or as a stored blob whose `dd128` an earlier output taught the chain; a large blob it
        // does not know yet is digested too, to learn it.
        self.learning.clear();
        let engine = self.digest.get_or_init(|| State::of(session)).engine();
        let learned = &self.learned;
        let judged: Vec<Option<(usize, Judge)>> = (0..l.args.len())
            .map(|i| {
                let engine = engine?;
                own_object(input, i)?;
                // The object's size: its host copy's, or for a placeholder the bound object's.
                let object = match input.args.get(i) {
                    Some(InputArg::Buffer { bytes, .. }) if !bytes.is_empty() => bytes.len() as u64,
                    _ => plan.resident.iter().find(|(r, _)| *r == i)?.1 .0 .2,
                };
                let big = object as usize >= engine.min_bytes;
                let fits = |size: u64| size > 0 && size == object && big;
                match content(l, i, false)? {
                    Content::Digest {
                        algo: DigestKind::Dd128,
                        size,
                        hash,
                    } if fits(*size) => Some((object as usize, Judge::Expect(hash.clone()))),
                    Content::Blob { hash, size } if fits(*size) && object as usize >= LEARN_MIN => {
                        let judge = match learned.get(hash) {
                            Some(d) => Judge::Expect(d.clone()),
                            None => Judge::Learn(hash.clone()),
                        };
                        Some((object as usize, judge))
                    }
                    _ => None,
                }
            })
            .collect();
        let read = |i: usize| {
            !matches!(judged.get(i), Some(Some((_, Judge::Expect(_)))))
                && !matches!(content(l, i, false), Some(Content::Missing { .. }))
        };
        let wanted: Vec<(usize, usize)> = judged
            .iter()
            .enumerate()
            .filter_map(|(i, j)| j.as_ref().map(|(s, _)| (i, *s)))
            .collect();
        // The digests ride in the kernel's trip: enqueued behind it and its reads, waited for
        // with them.
        let mut digesting = None;
        let mut behind = |objects: &[Option<&Mem>], trip: &mut Batch<'_>| {
            let Some(engine) = engine.filter(|_| !wanted.is_empty()) else {
                return Ok(());
            };
            let mut items = Vec::with_capacity(wanted.len());
            for (i, size) in &wanted {
                // An argument with an object of its own always has one.
                let mem = objects.get(*i).copied().flatten().ok_or_else(|| {
                    ExecError::NotReplayable(format!(
                        "argument {i}: its buffer object was not handed over to verify it"
                    ))
                })?;
                items.push((mem, *size));
            }
            // A digest that cannot be enqueued is had from the bytes (read back below).
            digesting = engine.enqueue_digests(session, &items, trip).ok();
            Ok(())
        };
        let run = session.run_riding(
            program,
            input,
            &mut bind,
            &read,
            &mut behind,
            &mut self.spare,
        );
        drop(held);
        self.traffic.add(&Traffic {
            bound,
            bound_bytes,
            uploaded,
            uploaded_bytes,
            ..Traffic::default()
        });
        let (mut out, objects, extras) = run?;
        let digests = digesting.map(|d| d.finish(&extras)).unwrap_or_default();
        let mut on_device = vec![false; l.args.len()];
        for (n, (i, size)) in wanted.iter().enumerate() {
            let expected = match judged.get(*i) {
                Some(Some((_, Judge::Expect(d)))) => d,
                Some(Some((_, Judge::Learn(blob)))) => {
                    // Read back with the other outputs. The device's digest must be the one of
                    // the bytes read back (a digest kernel that misread them would otherwise
                    // pass other bytes later); learned once they are found equal to the blob.
                    let read = out.outputs.get(*i).and_then(Option::as_deref);
                    if let (Some(d), Some(bytes)) = (digests.get(n), read) {
                        if cltrap_capture::devdigest::dd128(bytes) == *d {
                            self.learning.push((l.id, *i, blob.clone(), d.clone()));
                        }
                    }
                    continue;
                }
                _ => continue,
            };
            if digests.get(n) == Some(expected) {
                on_device[*i] = true;
                self.traffic.device_verified += 1;
                continue;
            }
            // Its digest differs (or could not be had): read back whole, for the comparison
            // to report it.
            let mem = objects.get(*i).and_then(Option::as_ref).ok_or_else(|| {
                ExecError::NotReplayable(format!(
                    "argument {i}: its buffer object was not handed back to read it"
                ))
            })?;
            out.outputs[*i] = Some(super::readback::read_whole(session, mem, *size, *i)?);
        }
        // An object shared by several arguments was read once (and handed to each).
        for (i, o) in out.outputs.iter().enumerate().take(l.args.len()) {
            if let (Some(o), true) = (o, first_of_its_object(input, i)) {
                self.traffic.read_back += 1;
                self.traffic.read_back_bytes += o.len() as u64;
            }
        }
        Ok(Ran {
            out,
            objects,
            on_device,
        })
    }

    /// Takes back the allocations of `input`'s buffers (a launch done with), so the next
    /// run reads its outputs into memory already mapped instead of faulting in fresh pages.
    pub fn recycle(&mut self, input: LaunchInput) {
        self.spare.clear();
        for a in input.args {
            if let InputArg::Buffer { bytes, .. } = a {
                if bytes.capacity() >= SPARE_MIN {
                    self.spare.push(bytes);
                }
            }
        }
    }

    /// Keeps, for the next launch, the objects of `l`'s run whose outputs `verified` says
    /// equal their recorded contents (everything else is released); `on_device` marks those
    /// verified on the device, whose bytes are not on the host (held unread).
    pub fn keep(
        &mut self,
        l: &LaunchRecord,
        input: &LaunchInput,
        objects: Vec<Option<Mem>>,
        verified: &[bool],
        on_device: &[bool],
    ) {
        // An output found equal to its stored blob on the host: its device digest is the
        // blob's, and the next output recorded as that blob is verified on the device.
        for (id, i, blob, d) in std::mem::take(&mut self.learning) {
            if id == l.id && verified.get(i).copied().unwrap_or(false) {
                if self.learned.len() >= LEARNED_MAX {
                    self.learned.clear();
                }
                self.learned.insert(blob, d);
            }
        }
        self.held.clear();
        for (i, mem) in objects.into_iter().enumerate() {
            let (Some(mem), true) = (mem, verified.get(i).copied().unwrap_or(false)) else {
                continue;
            };
            let (Some(key), Some(InputArg::Buffer { flags, .. })) = (
                content(l, i, false).and_then(content_key),
                input.args.get(i),
            ) else {
                continue;
            };
            let Ok(size) = usize::try_from(key.2) else {
                continue;
            };
            self.held.entry(key).or_default().push(Some(Held {
                mem,
                flags: access_flags(*flags),
                size,
                unread: on_device.get(i).copied().unwrap_or(false),
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{DeviceSelector, InputArg, LaunchInput, Session};
    use opencl_sys::CL_MEM_READ_WRITE;

    fn add_one(bytes: Vec<u8>) -> LaunchInput {
        LaunchInput {
            kernel: "add_one".into(),
            work_dim: 1,
            global_offset: None,
            global_size: vec![4],
            local_size: None,
            args: vec![InputArg::Buffer {
                mem: None,
                flags: CL_MEM_READ_WRITE,
                bytes,
            }],
            stand_ins: Vec::new(),
        }
    }

    fn ints(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn a_bound_buffer_is_run_on_as_it_is_on_the_device_and_unread_outputs_stay_there() {
        let Ok(session) = Session::open(&DeviceSelector::default()) else {
            return;
        };
        let program = session
            .build_source(
                "__kernel void add_one(__global int* a) { a[get_global_id(0)] += 1; }",
                "",
            )
            .expect("builds");
        let mut spare = Vec::new();
        let (out, mut kept) = session
            .run_bound(
                &program,
                &add_one(ints(&[1, 2, 3, 4])),
                &mut |_, _| None,
                &|_| true,
                &mut spare,
            )
            .expect("runs");
        assert_eq!(out.outputs[0].as_deref(), Some(&ints(&[2, 3, 4, 5])[..]));
        let object = kept[0].take().expect("the buffer object is handed back");
        // The host bytes say zeros; the bound object holds 2..5 and is what the kernel sees.
        let mut object = Some(object);
        let (out, mut kept) = session
            .run_bound(
                &program,
                &add_one(ints(&[0, 0, 0, 0])),
                &mut |i, _| if i == 0 { object.take() } else { None },
                &|_| false,
                &mut spare,
            )
            .expect("runs");
        assert!(object.is_none(), "the object was bound");
        assert_eq!(out.outputs[0], None, "not read back");
        let (out, _) = session
            .run_bound(
                &program,
                &add_one(ints(&[0, 0, 0, 0])),
                &mut |_, _| kept[0].take(),
                &|_| true,
                &mut spare,
            )
            .expect("runs");
        assert_eq!(out.outputs[0].as_deref(), Some(&ints(&[4, 5, 6, 7])[..]));
    }
}
