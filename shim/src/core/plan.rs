//! The plan of a recorded launch, on the application's thread: whether the launch is recorded
//! (filters, the per-kernel budget, a healthy capture), its record (name, arguments, program,
//! device, launch site), which memory objects to read and which of them the kernel cannot
//! change; then the in-queue reads around the enqueue ([`super::inqueue`]), and the hand-over
//! of the launch to the capture path ([`super::flight`]).
//!
//! Job: the first stage of the capture path: decide what to read and build the [`Flight`]. It
//! must not forward the application's enqueue (that is the launch hook's, [`super::launch`]),
//! wait for any command, or touch the disk beyond storing a program the capture has not seen
//! (the record's program hash).
//!
//! Invariants:
//! * Everything here runs on the application's thread inside `quietly` (a panic loses the
//!   record, never the application's call), and never blocks it on the device: reads are
//!   non-blocking, and only admission may wait (bounded) for room among the launches in flight.
//! * A plan that takes a per-kernel slot gives it back when the launch is not recorded after
//!   all.
//! * The record always describes the application's kernel and arguments (a swapped kernel is
//!   the launch hook's business).

use super::args::{arg_infos, classify};
use super::contents::{self, Shape};
use super::device::{device_record, queue_facts, QueueFacts};
use super::flight::{self, Flight};
use super::info;
use super::inqueue::Around;
use super::kernel::describe;
use super::known;
use super::stats::{self, Phase};
use super::track::{lock, tables, Origin, Scanned};
use super::unwritten;
use crate::Next;
use cltrap_capture::{CaptureWriter, LaunchApi, LaunchRecord, Settings};
use opencl_sys::*;
use std::sync::Arc;

/// The launch's sizes as the application gave them.
pub(super) struct Geometry {
    pub(super) api: LaunchApi,
    pub(super) work_dim: cl_uint,
    pub(super) offset: Option<Vec<u64>>,
    pub(super) global: Vec<u64>,
    pub(super) local: Option<Vec<u64>>,
}

impl Geometry {
    /// The sizes as the swap asks for them.
    pub(super) fn view(&self) -> crate::swap::LaunchGeometry<'_> {
        crate::swap::LaunchGeometry {
            work_dim: self.work_dim,
            offset: self.offset.as_deref(),
            global: &self.global,
            local: self.local.as_deref(),
        }
    }
}

/// A launch being recorded.
pub(super) struct Plan {
    record: LaunchRecord,
    writer: &'static CaptureWriter,
    settings: &'static Settings,
    mode: contents::Keep,
    /// The queue's facts, looked up once per launch (the record's device and properties and
    /// the pinned pool's context all come from them).
    queue: QueueFacts,
    /// Memory object behind each argument (by index), for filling in contents.
    slots: Vec<Option<usize>>,
    /// Distinct memory objects to read, with their shape.
    reads: Vec<(usize, Shape)>,
    /// Per read: the kernel cannot change it (its contents after = before, not read again).
    read_only: Vec<bool>,
    /// Per read: read-only because the kernel's source never writes it, though its type
    /// would allow it ([`Plan::kernel_swapped`] takes that back).
    by_source: Vec<bool>,
    /// Host and device memory reserved for the reads.
    reserved: flight::Reservation,
    /// How a replay re-creates this launch's contents after.
    chain: known::Chain,
    /// Why contents are missing, when they are.
    missing: String,
}

impl Plan {
    /// The plan of launch number `seq` of `kernel` on `queue` (None: not recorded: filtered out,
    /// over the kernel's budget, or the capture cannot take it).
    pub(super) fn new(
        next: &Next,
        seq: u64,
        queue: cl_command_queue,
        kernel: cl_kernel,
        geo: &Geometry,
    ) -> Option<Plan> {
        let _plan = stats::span(Phase::Plan);
        let settings = crate::state::settings()?;
        if !crate::sink::healthy() || !flight::available() {
            return None;
        }
        // The name decides most filters: look at it before copying the arguments (once per
        // launch: with `CLTRAP_KERNELS` it is a glob match per pattern).
        let known = match lock(&tables().kernels).get(&(kernel as usize)) {
            Some(k) if !settings.wants(seq, &k.name) => return None,
            k => k.cloned(),
        };
        let k = match known {
            Some(k) => k,
            None => {
                let k = describe(next, kernel);
                lock(&tables().kernels).insert(kernel as usize, k.clone());
                if !settings.wants(seq, &k.name) {
                    return None;
                }
                k
            }
        };
        if !reserve(settings, &k.name) {
            return None;
        }
        let Some(writer) = crate::sink::writer() else {
            release(settings, &k.name);
            return None;
        };
        let arg_info = match &k.info {
            Some(i) => i.clone(),
            None => {
                let i = arg_infos(next, kernel).map(Arc::new);
                if let Some(entry) = lock(&tables().kernels).get_mut(&(kernel as usize)) {
                    entry.info = Some(i.clone());
                }
                i
            }
        };
        let unwritten = match &k.unwritten {
            _ if settings.declared_only => Arc::new(Vec::new()),
            Some(u) => u.clone(),
            None => {
                let u = unwritten_params(k.program, &k.name, arg_info.as_deref());
                if let Some(entry) = lock(&tables().kernels).get_mut(&(kernel as usize)) {
                    entry.unwritten = Some(u.clone());
                }
                u
            }
        };
        let num_args = match k.num_args {
            Some(n) => n,
            None => {
                let n = next
                    .clGetKernelInfo
                    .and_then(|f| {
                        // SAFETY: standard info query.
                        info::value::<cl_uint>(|s, p, r| unsafe {
                            f(kernel, CL_KERNEL_NUM_ARGS, s, p, r)
                        })
                    })
                    .unwrap_or(k.args.len() as cl_uint);
                if let Some(entry) = lock(&tables().kernels).get_mut(&(kernel as usize)) {
                    entry.num_args = Some(n);
                }
                n
            }
        } as usize;
        let mut notes = Vec::new();
        let mut args = Vec::with_capacity(num_args);
        let mut slots = Vec::with_capacity(num_args);
        let mut reads: Vec<(usize, Shape)> = Vec::with_capacity(num_args);
        // Per read: whether every argument naming it is read-only for the kernel.
        let mut read_only: Vec<bool> = Vec::with_capacity(num_args);
        // Per read: whether an argument naming it is read-only by its source, not its type.
        let mut by_source: Vec<bool> = Vec::with_capacity(num_args);
        for i in 0..num_args {
            let info = arg_info.as_ref().and_then(|v| v.get(i));
            let value = k.args.get(i).and_then(|v| v.as_ref());
            let (rec, mem) = classify(next, i as u32, info, value, &mut notes);
            if let Some((h, shape)) = mem {
                let declared = info.is_some_and(kernel_cannot_write);
                let from_source = !declared && unwritten.get(i) == Some(&true);
                let ro = declared || from_source;
                match reads.iter().position(|(m, _)| *m == h) {
                    Some(j) => {
                        read_only[j] &= ro;
                        by_source[j] |= from_source;
                    }
                    None => {
                        reads.push((h, shape));
                        read_only.push(ro);
                        by_source.push(from_source);
                    }
                }
            }
            slots.push(mem.map(|(h, _)| h));
            args.push(rec);
        }
        unchanged_by_launch(&reads, &mut read_only);
        let program = match super::record::program_hash(next, writer, k.program, &k.name) {
            Ok((hash, mut pnotes)) => {
                notes.append(&mut pnotes);
                hash
            }
            Err(e) => {
                crate::sink::fail(&e);
                release(settings, &k.name);
                return None;
            }
        };
        let facts = queue_facts(next, queue);
        let record = LaunchRecord {
            id: 0,
            seq,
            kernel: k.name.to_string(),
            program,
            api: geo.api,
            work_dim: geo.work_dim,
            global_offset: geo.offset.clone(),
            global_size: geo.global.clone(),
            local_size: geo.local.clone(),
            args,
            device: device_record(next, facts.device),
            queue_properties: facts.properties,
            launch_site: crate::site::capture(),
            thread: thread_id(),
            status: CL_SUCCESS,
            not_replayable: notes,
        };
        Some(Plan {
            record,
            writer,
            settings,
            mode: contents::plan(writer, settings, &k.name, flight::in_flight_bytes),
            queue: facts,
            slots,
            reads,
            read_only,
            by_source,
            reserved: flight::Reservation::default(),
            chain: known::Chain::start(true),
            missing: String::new(),
        })
    }

    /// Whether the launch's queue runs commands out of order (the launch then needs an event
    /// of its own for its reads to wait on).
    pub(super) fn out_of_order(&self) -> bool {
        self.queue.properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE != 0
    }

    /// The launch runs a swapped kernel (instrumented, or a mutant): what the application's
    /// source never writes, the swapped one might, so only declarations keep an argument
    /// read-only.
    pub(super) fn kernel_swapped(&mut self) {
        for (ro, by_source) in self.read_only.iter_mut().zip(&self.by_source) {
            *ro &= !by_source;
        }
    }

    /// Enqueues the pre-launch reads (None: nothing to read, or not allowed to).
    pub(super) fn start_reads<'a>(
        &mut self,
        next: &'a Next,
        queue: cl_command_queue,
        app_wait: &[cl_event],
    ) -> Option<Around<'a>> {
        if self.mode == contents::Keep::Nothing {
            self.missing = "not read (CLTRAP_BUFFERS=none)".into();
            return None;
        }
        if self.reads.is_empty() {
            return None;
        }
        // Contents known from an earlier launch on this queue are not read again (except by a
        // launch that must store its inputs: the earlier launch may have kept only digests).
        let none = || self.reads.iter().map(|_| None).collect();
        let mut reuse: Vec<Option<known::Reuse>> = if self.out_of_order()
            || !app_wait.is_empty()
            || self.mode == contents::Keep::Befores
        {
            none()
        } else {
            known::reuse(self.reads.iter().map(|(mem, _)| *mem), queue as usize)
        };
        if self.mode == contents::Keep::All {
            // A launch that stores everything reuses only stored contents: under the paced
            // `auto` threshold it may follow launches that kept only digests of theirs.
            for r in reuse.iter_mut() {
                if r.as_ref().is_some_and(|r| r.chain.depth > 0) {
                    *r = None;
                }
            }
        }
        // The longest chain this launch's inputs derive along.
        let derived = known::Chain::longest(reuse.iter().flatten().map(|r| &r.chain));
        let inputs = || self.reads.iter().map(|(_, s)| s.bytes() as u64).sum();
        let checkpoint = self.mode == contents::Keep::Inputs
            && derived.is_some_and(|c| contents::checkpoint_due(c, inputs()));
        if checkpoint {
            // A checkpoint: this launch's inputs are read and stored, so no replay re-executes
            // a chain longer than `contents::checkpoint_due` allows to re-create an input.
            self.mode = contents::Keep::Befores;
            reuse = none();
        }
        // What a replay re-executes to re-create this launch's contents after.
        self.chain = match (self.mode, derived) {
            (contents::Keep::All, _) => known::Chain::start(true),
            (_, Some(c)) if !checkpoint => c.extended(),
            _ => known::Chain::start(false),
        };
        // An engine only for launches with a buffer to digest on the device: launches over
        // small buffers alone put nothing of ours into the application's context.
        let engine = self
            .reads
            .iter()
            .any(|(_, s)| {
                matches!(s, Shape::Buffer { size } if *size > 0
                    && super::digest::wanted(self.settings, *size))
            })
            .then(|| super::digest::engine_for(next, self.settings, self.queue))
            .flatten();
        let dev = Around::device_sides(
            engine.as_ref(),
            self.settings,
            self.mode,
            &self.reads,
            &self.read_only,
            &reuse,
        );
        let in_place = Around::in_place_sides(
            next,
            self.queue,
            self.settings,
            self.mode,
            &self.reads,
            &self.read_only,
            &reuse,
            &dev,
        );
        let bytes = Around::bytes(&self.reads, &self.read_only, &reuse, &dev, &in_place);
        let device_cap = engine
            .as_ref()
            .map_or(flight::MAX_INFLIGHT_BYTES, |e| e.snapshot_cap());
        if let Err(full) = flight::admit(bytes, device_cap) {
            let (missing, why) = match full {
                flight::Full::Bytes => (
                    format!(
                        "not read: launches in flight already held {} MB of host memory or {} MB of device snapshots",
                        flight::MAX_INFLIGHT_BYTES >> 20,
                        device_cap >> 20
                    ),
                    "in-flight memory cap reached",
                ),
                flight::Full::Launches => (
                    format!(
                        "not read: {} launches were already in flight and none completed in time",
                        flight::MAX_INFLIGHT_LAUNCHES
                    ),
                    "in-flight launch cap reached",
                ),
            };
            self.missing = missing;
            self.record
                .not_replayable
                .push(format!("buffer contents were not recorded ({why})"));
            return None;
        }
        self.reserved = bytes;
        let by_source = self
            .read_only
            .iter()
            .zip(&self.by_source)
            .filter(|(ro, src)| **ro && **src)
            .count();
        stats::add(&stats::UNWRITTEN_BY_SOURCE, by_source as u64);
        let mut around = Around::new(
            next,
            queue,
            self.queue,
            &self.reads,
            &self.read_only,
            reuse,
            dev,
            &in_place,
        );
        around.before(app_wait);
        Some(around)
    }

    /// After the forwarded enqueue: enqueues the post-launch reads and hands the launch to
    /// the writer thread (or gives its slot back when the enqueue failed).
    pub(super) fn hand_over(
        self,
        next: &Next,
        queue: cl_command_queue,
        ret: cl_int,
        around: Option<Around<'_>>,
        kernel_event: cl_event,
        own_event: cl_event,
    ) {
        let in_order = !self.out_of_order();
        let succeeded = ret == CL_SUCCESS;
        if !succeeded {
            release(self.settings, &self.record.kernel);
        }
        let Some(mut around) = around else {
            // Contents not read: what the kernel may write is unknown from now on.
            let writable: Vec<usize> = (self.reads.iter().zip(&self.read_only))
                .filter(|(_, ro)| !**ro)
                .map(|((m, _), _)| *m)
                .collect();
            known::wrote(&writable);
            if succeeded {
                flight::submit(
                    next,
                    self.into_flight(None, next, true),
                    queue,
                    in_order,
                    std::ptr::null_mut(),
                    false,
                    0,
                );
            }
            return;
        };
        // The queue is held (see `queue_ref`) while our commands are in it; a rider (no event
        // of its own, see `flight`) needs it held, so the writer can put a marker there.
        let held = super::queue_ref::hold(next, queue);
        let rider = succeeded
            && in_order
            && held
            && flight::rides(
                next,
                queue,
                &self.record.device.platform,
                self.record.thread,
            );
        let post_reads = stats::span(Phase::PostReads);
        let final_event = if succeeded {
            around.after(kernel_event, rider)
        } else {
            around.abandoned()
        };
        drop(post_reads);
        if !own_event.is_null() {
            around.events.push(own_event);
        }
        let tracked = rider || !final_event.is_null();
        let remember = in_order && succeeded && tracked;
        note_known(&mut around, queue, remember, self.chain);
        if !tracked {
            // Our reads can no longer be tracked: keep their memory alive for good (the driver
            // may still write into it) and record the contents as missing.
            if held {
                super::queue_ref::done(queue);
            }
            let reserved = self.reserved;
            std::mem::forget(around);
            flight::unreserve(reserved);
            if succeeded {
                let mut plan = self;
                plan.missing = "not recorded: the capture's reads could not be tracked".into();
                plan.reserved = flight::Reservation::default();
                flight::submit(
                    next,
                    plan.into_flight(None, next, true),
                    queue,
                    in_order,
                    std::ptr::null_mut(),
                    false,
                    0,
                );
            }
            return;
        }
        let thread = self.record.thread;
        let mut f = self.into_flight(Some(around), next, succeeded);
        if held {
            f.queue = queue;
        }
        if !succeeded {
            f.record = None;
        }
        flight::submit(next, f, queue, in_order, final_event, rider, thread);
    }

    /// The flight this plan becomes: its record (None: not `recorded`), the reads around the
    /// launch, and what the writer needs to release them.
    fn into_flight(mut self, around: Option<Around<'_>>, next: &Next, recorded: bool) -> Flight {
        // Ids follow the order launches were enqueued, whatever order they complete in.
        // No id (the capture's id file cannot be written): the launch goes on unrecorded.
        let mut keep = true;
        if recorded {
            match self.writer.take_id() {
                Ok(id) => self.record.id = id,
                Err(e) => {
                    crate::sink::fail(&e);
                    keep = false;
                }
            }
        }
        let (items, events, temps) = match around {
            Some(a) => (a.items, a.events, a.temps),
            None => (Vec::new(), Vec::new(), Vec::new()),
        };
        Flight {
            record: keep.then_some(self.record),
            slots: self.slots,
            items,
            missing: self.missing,
            events,
            temps,
            queue: std::ptr::null_mut(),
            writer: self.writer,
            mode: self.mode,
            reserved: self.reserved,
            calls: flight::Calls::of(next),
        }
    }
}

/// Tells [`known`] what this launch may write and (`remember`) which contents later launches
/// on `queue` may take from it; marks reused contents that a concurrent write made unknown.
fn note_known(
    around: &mut Around<'_>,
    queue: cl_command_queue,
    remember: bool,
    chain: known::Chain,
) {
    let reads: Vec<known::Read<'_>> = around
        .items
        .iter()
        .map(|i| known::Read {
            mem: i.mem,
            writable: !i.post_is_pre,
            cell: &i.cell,
        })
        .collect();
    let reused: Vec<(usize, &known::Reuse)> = around
        .items
        .iter()
        .filter_map(|i| Some((i.mem, i.reuse.as_ref()?)))
        .collect();
    let raced = known::after_launch(queue as usize, remember, chain, &reads, &reused);
    let mut raced = raced.into_iter();
    for item in around.items.iter_mut().filter(|i| i.reuse.is_some()) {
        item.raced = raced.next().unwrap_or(true);
    }
}

/// Per argument of kernel `name` of `program`: a `__global` pointer (not an image) that the
/// program's source never writes through ([`unwritten::unwritten`]); all false for a program
/// not built from source in this process, whose last build failed (its options are not the
/// executable's), or without argument names.
fn unwritten_params(
    program: usize,
    name: &str,
    info: Option<&Vec<cltrap_capture::ArgInfo>>,
) -> Arc<Vec<bool>> {
    let Some(info) = info else {
        return Arc::new(Vec::new());
    };
    let (origin, options, includes) = match lock(&tables().programs).get(&program) {
        Some(p) if !p.last_build_failed => {
            if let Some((_, u)) = p.unwritten.iter().find(|(n, _)| n == name) {
                return u.clone();
            }
            (p.origin.clone(), p.options.clone(), p.includes.clone())
        }
        _ => return Arc::new(vec![false; info.len()]),
    };
    let flags = Arc::new(scan_params(
        &origin,
        &options,
        includes.as_deref(),
        name,
        info,
    ));
    if let Some(p) = lock(&tables().programs).get_mut(&program) {
        p.unwritten.push((name.to_string(), flags.clone()));
    }
    flags
}

/// [`unwritten_params`] for a program not scanned yet.
fn scan_params(
    origin: &Origin,
    options: &str,
    includes: Option<&Scanned>,
    name: &str,
    info: &[cltrap_capture::ArgInfo],
) -> Vec<bool> {
    let Origin::Source(sources) = origin else {
        return vec![false; info.len()];
    };
    // Options a driver adds from its environment are options the scan does not see.
    const DRIVER_OPTIONS: [&str; 5] = [
        "POCL_EXTRA_BUILD_FLAGS",
        "AMD_OCL_BUILD_OPTIONS",
        "AMD_OCL_BUILD_OPTIONS_APPEND",
        "CLOVER_EXTRA_BUILD_OPTIONS",
        "CLOVER_EXTRA_COMPILE_OPTIONS",
    ];
    if DRIVER_OPTIONS
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|o| !o.is_empty()))
    {
        return vec![false; info.len()];
    }
    let texts: Vec<&[u8]> = sources.iter().map(Vec::as_slice).collect();
    let headers = includes.and_then(every_header);
    let names: Vec<&str> = info.iter().map(|a| &*a.name).collect();
    let mut flags = unwritten::unwritten(&texts, headers.as_ref(), options, name, &names);
    for (f, a) in flags.iter_mut().zip(info) {
        *f &= &*a.address_space == "global"
            && a.type_name.strip_suffix('*').is_some_and(builtin_element);
    }
    flags
}

/// The text of every file a program included, when the build-time scan found each one and
/// read it (None: one was not found, named by a macro, or past the scan's limits).
fn every_header(scanned: &Scanned) -> Option<unwritten::Headers<'_>> {
    let mut texts = Vec::new();
    for f in &scanned.files {
        let path = f.path.as_ref()?;
        match &f.bytes {
            Some(b) => texts.push(b.as_slice()),
            // Read once per path: an earlier entry of the same path carries it.
            None => {
                scanned
                    .files
                    .iter()
                    .find(|g| g.path.as_ref() == Some(path) && g.bytes.is_some())?;
            }
        }
    }
    Some(unwritten::Headers {
        texts,
        directives: scanned.files.len(),
    })
}

/// Whether `name` is a built-in scalar or vector type (`float`, `uint4`, …): an element of
/// one is a value, where a struct's member could be an array that decays to a pointer into
/// the buffer (and a typedef could hide either).
fn builtin_element(name: &str) -> bool {
    let name = name.trim();
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit());
    let width = &name[base.len()..];
    matches!(
        base,
        "char"
            | "uchar"
            | "short"
            | "ushort"
            | "int"
            | "uint"
            | "long"
            | "ulong"
            | "float"
            | "double"
            | "half"
    ) && matches!(width, "" | "2" | "3" | "4" | "8" | "16")
}

/// Whether the argument's declaration forbids the kernel to write what it points to:
/// `__constant`, a pointer to `const`, a `read_only` image.
fn kernel_cannot_write(info: &cltrap_capture::ArgInfo) -> bool {
    let quals = || info.qualifiers.split(' ');
    info.address_space == "constant"
        || (info.address_space == "global" && quals().any(|q| q == "const"))
        || (info.type_name.starts_with("image") && quals().any(|q| q == "read_only"))
}

/// Clears `read_only` for objects that overlap a writable one (a sub-buffer and its parent,
/// or two sub-buffers of one parent): the kernel may change them through the other argument.
fn unchanged_by_launch(reads: &[(usize, Shape)], read_only: &mut [bool]) {
    if !read_only.iter().any(|r| *r) {
        return;
    }
    let root = |h: usize| {
        tables()
            .mem_facts(h)
            .and_then(|f| f.parent.map(|(p, _)| p))
            .unwrap_or(h)
    };
    let roots: Vec<usize> = reads.iter().map(|(h, _)| root(*h)).collect();
    for i in 0..reads.len() {
        if read_only[i] {
            let shared_with_writer =
                (0..reads.len()).any(|j| j != i && !read_only[j] && roots[j] == roots[i]);
            if shared_with_writer {
                read_only[i] = false;
            }
        }
    }
}

/// The kernel's id of the calling thread (asked once per thread: it is a system call).
fn thread_id() -> u64 {
    thread_local! {
        // SAFETY: gettid has no preconditions.
        static TID: u64 = unsafe { libc::gettid() } as u64;
    }
    TID.try_with(|t| *t)
        .unwrap_or_else(|_| unsafe { libc::gettid() } as u64)
}

/// Takes one of the kernel's `CLTRAP_PER_KERNEL` slots.
fn reserve(settings: &Settings, name: &str) -> bool {
    let Some(limit) = settings.per_kernel else {
        return true;
    };
    let mut counts = lock(&tables().per_kernel);
    // The name is copied into the table only the first time (every launch comes here).
    let c = match counts.get_mut(name) {
        Some(c) => c,
        None => counts.entry(name.to_string()).or_insert(0),
    };
    if *c >= limit {
        return false;
    }
    *c += 1;
    true
}

/// Gives a slot back (the enqueue failed, or could not be recorded).
fn release(settings: &Settings, name: &str) {
    if settings.per_kernel.is_some() {
        if let Some(c) = lock(&tables().per_kernel).get_mut(name) {
            *c = c.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::builtin_element;

    #[test]
    fn only_built_in_scalars_and_vectors_are_elements_read_as_values() {
        for t in ["float", "uint4", "char16", "double3", "half", "long8"] {
            assert!(builtin_element(t), "{t}");
        }
        for t in [
            "struct particle",
            "real",
            "float5",
            "uint32",
            "image2d_t",
            "",
            "int*",
        ] {
            assert!(!builtin_element(t), "{t}");
        }
    }
}
