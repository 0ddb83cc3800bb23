//! Launch hooks: `clEnqueueNDRangeKernel` / `clEnqueueTask` become `LaunchRecord`s.
//!
//! Order of work for a recorded launch (buffer modes `full`/`hash`), all on the application's
//! thread and none of it blocking: plan (name, filters, arguments, program, device) → reserve
//! host memory ([`super::flight::admit`]) → enqueue non-blocking pre-reads of every
//! buffer/image argument in the application's queue ([`super::inqueue`]) → forward the
//! enqueue (the one call to `next.clEnqueueNDRangeKernel` / `next.clEnqueueTask`) → enqueue
//! post-reads → hand the launch to the writer thread, which records it when the reads
//! completed ([`super::flight`]). A launch gated by a user event is recorded like any other,
//! once the gate opens.
//!
//! Hook points for live instrumentation, in [`run`]: `crate::swap::before_enqueue` right
//! before the enqueue is forwarded (it may return a kernel to enqueue instead of the
//! application's) and `crate::swap::after_enqueue` right after it returned. A swapped enqueue
//! that the driver refuses is repeated with the application's kernel, so the return code is
//! the native one. The record always describes the application's kernel and arguments.

use super::args::{arg_infos, classify};
use super::contents::{self, Shape};
use super::device::{device_record, queue_facts, QueueFacts};
use super::flight::{self, Flight};
use super::info;
use super::inqueue::Around;
use super::kernel::describe;
use super::known;
use super::stats::{self, Phase};
use super::track::{lock, tables};
use crate::door::quietly;
use crate::Next;
use cltrap_capture::{CaptureWriter, LaunchApi, LaunchRecord, Settings};
use libc::size_t;
use opencl_sys::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Number of enqueues seen so far (all of them: the launch window counts filtered ones too).
static SEQ: AtomicU64 = AtomicU64::new(0);

pub unsafe fn clEnqueueNDRangeKernel(
    next: &'static Next,
    command_queue: cl_command_queue,
    kernel: cl_kernel,
    work_dim: cl_uint,
    global_work_offset: *const size_t,
    global_work_size: *const size_t,
    local_work_size: *const size_t,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueNDRangeKernel else {
        return CL_INVALID_OPERATION;
    };
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let geo = quietly(|| {
        if !(1..=3).contains(&work_dim) || global_work_size.is_null() {
            return None;
        }
        // SAFETY: with a valid work_dim, non-NULL size arrays hold `work_dim` entries.
        let dims = |p: *const size_t| {
            (!p.is_null()).then(|| {
                unsafe { std::slice::from_raw_parts(p, work_dim as usize) }
                    .iter()
                    .map(|v| *v as u64)
                    .collect::<Vec<u64>>()
            })
        };
        Some(Geometry {
            api: LaunchApi::NdRange,
            work_dim,
            offset: dims(global_work_offset),
            global: dims(global_work_size).unwrap_or_default(),
            local: dims(local_work_size),
        })
    })
    .flatten();
    let _launch = stats::span(Phase::Launch);
    let plan = geo
        .as_ref()
        .and_then(|g| quietly(|| Plan::new(next, seq, command_queue, kernel, g)))
        .flatten();
    run(
        next,
        plan,
        command_queue,
        kernel,
        geo.as_ref(),
        num_events_in_wait_list,
        event_wait_list,
        event,
        |k, local, n, list, ev| {
            f(
                command_queue,
                k,
                work_dim,
                global_work_offset,
                global_work_size,
                local.unwrap_or(local_work_size),
                n,
                list,
                ev,
            )
        },
    )
}

pub unsafe fn clEnqueueTask(
    next: &'static Next,
    command_queue: cl_command_queue,
    kernel: cl_kernel,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueTask else {
        return CL_INVALID_OPERATION;
    };
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let geo = Geometry {
        api: LaunchApi::Task,
        work_dim: 1,
        offset: None,
        global: vec![1],
        local: Some(vec![1]),
    };
    let _launch = stats::span(Phase::Launch);
    let plan = quietly(|| Plan::new(next, seq, command_queue, kernel, &geo)).flatten();
    run(
        next,
        plan,
        command_queue,
        kernel,
        Some(&geo),
        num_events_in_wait_list,
        event_wait_list,
        event,
        |k, _, n, list, ev| f(command_queue, k, n, list, ev),
    )
}

/// Forwards the enqueue exactly once, recording around it when there is a plan. `enqueue` takes the kernel, the local size (`None`: the application's; the swap may choose one
/// for a NULL-local launch), the wait list and the event pointer to forward: the
/// application's, except where documented in [`super::inqueue`].
fn run(
    next: &'static Next,
    plan: Option<Plan>,
    queue: cl_command_queue,
    kernel: cl_kernel,
    geo: Option<&Geometry>,
    num_events: cl_uint,
    events: *const cl_event,
    app_event: *mut cl_event,
    enqueue: impl Fn(
        cl_kernel,
        Option<*const size_t>,
        cl_uint,
        *const cl_event,
        *mut cl_event,
    ) -> cl_int,
) -> cl_int {
    // Hook point: live instrumentation may swap the kernel of this launch.
    let swap = geo
        .and_then(|g| quietly(|| crate::swap::before_enqueue(next, queue, kernel, &g.view())))
        .flatten();
    let forward = |n: cl_uint, list: *const cl_event, ev: *mut cl_event| {
        let Some(s) = swap else {
            return enqueue(kernel, None, n, list, ev);
        };
        let ret = enqueue(s.kernel, s.local_size(), n, list, ev);
        let swapped_ok = ret == CL_SUCCESS;
        // Hook point: right after the forwarded enqueue, with the launch's event.
        let launch_event = if swapped_ok && !ev.is_null() {
            // SAFETY: the enqueue succeeded, so it stored an event where we asked.
            unsafe { *ev }
        } else {
            std::ptr::null_mut()
        };
        quietly(|| crate::swap::after_enqueue(next, queue, s, ret, launch_event));
        if swapped_ok {
            ret
        } else {
            enqueue(kernel, None, n, list, ev)
        }
    };
    let Some(mut plan) = plan else {
        // Not recorded with contents: whatever the kernel writes is unknown to the capture.
        quietly(|| known::kernel_may_write(kernel as usize));
        return forward(num_events, events, app_event);
    };
    let app_wait: &[cl_event] = if num_events == 0 || events.is_null() {
        &[]
    } else {
        // SAFETY: the application passes `num_events` events, as it does to the enqueue.
        unsafe { std::slice::from_raw_parts(events, num_events as usize) }
    };
    let reads = stats::span(Phase::Reads);
    let mut around = quietly(|| plan.start_reads(next, queue, app_wait)).flatten();
    drop(reads);
    let combined = around
        .as_ref()
        .and_then(|a| quietly(|| a.kernel_wait(app_wait)).flatten());
    let (n, list) = match &combined {
        Some(v) => (v.len() as cl_uint, v.as_ptr()),
        None => (num_events, events),
    };
    let mut own: cl_event = std::ptr::null_mut();
    let ev_ptr = if around.is_some() && plan.out_of_order() && app_event.is_null() {
        &mut own as *mut cl_event
    } else {
        app_event
    };
    let enqueued = stats::span(Phase::Enqueue);
    let ret = forward(n, list, ev_ptr);
    drop(enqueued);
    let _hand_over = stats::span(Phase::HandOver);
    quietly(|| {
        let kernel_event = if ret == CL_SUCCESS && !ev_ptr.is_null() {
            // SAFETY: the enqueue succeeded, so it stored an event where we asked.
            unsafe { *ev_ptr }
        } else {
            std::ptr::null_mut()
        };
        plan.hand_over(next, queue, ret, around.take(), kernel_event, own);
    });
    ret
}

/// The launch's sizes as the application gave them.
struct Geometry {
    api: LaunchApi,
    work_dim: cl_uint,
    offset: Option<Vec<u64>>,
    global: Vec<u64>,
    local: Option<Vec<u64>>,
}

impl Geometry {
    fn view(&self) -> crate::swap::LaunchGeometry<'_> {
        crate::swap::LaunchGeometry {
            work_dim: self.work_dim,
            offset: self.offset.as_deref(),
            global: &self.global,
            local: self.local.as_deref(),
        }
    }
}

/// A launch being recorded.
struct Plan {
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
    /// Host bytes reserved for the reads.
    reserved: usize,
    /// Launches a replay re-executes to re-create this launch's contents after (0: stored).
    depth: u32,
    /// Why contents are missing, when they are.
    missing: String,
}

impl Plan {
    fn new(
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
        let mut reads: Vec<(usize, Shape)> = Vec::new();
        // Per read: whether every argument naming it is read-only for the kernel.
        let mut read_only: Vec<bool> = Vec::new();
        for i in 0..num_args {
            let info = arg_info.as_ref().and_then(|v| v.get(i));
            let value = k.args.get(i).and_then(|v| v.as_ref());
            let (rec, mem) = classify(next, i as u32, info, value, &mut notes);
            if let Some((h, shape)) = mem {
                let ro = info.is_some_and(kernel_cannot_write);
                match reads.iter().position(|(m, _)| *m == h) {
                    Some(j) => read_only[j] &= ro,
                    None => {
                        reads.push((h, shape));
                        read_only.push(ro);
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
            mode: contents::plan(writer, settings, &k.name),
            queue: facts,
            slots,
            reads,
            read_only,
            reserved: 0,
            depth: 0,
            missing: String::new(),
        })
    }

    fn out_of_order(&self) -> bool {
        self.queue.properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE != 0
    }

    /// Enqueues the pre-launch reads (None: nothing to read, or not allowed to).
    fn start_reads<'a>(
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
        let chain = reuse.iter().flatten().map(|r| r.depth).max().unwrap_or(0);
        if self.mode == contents::Keep::Inputs && chain >= contents::CHECKPOINT_EVERY {
            // A checkpoint: this launch's inputs are read and stored, so no replay re-executes
            // more than CHECKPOINT_EVERY launches to re-create an input.
            self.mode = contents::Keep::Befores;
            reuse = none();
        }
        // What a replay re-executes to re-create this launch's contents after.
        self.depth = match self.mode {
            contents::Keep::All => 0,
            _ => 1 + reuse.iter().flatten().map(|r| r.depth).max().unwrap_or(0),
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
        let bytes = Around::bytes(&self.reads, &self.read_only, &reuse, &dev);
        if let Err(full) = flight::admit(bytes) {
            let (missing, why) = match full {
                flight::Full::Bytes => (
                    format!(
                        "not read: launches in flight already held {} MB of host memory",
                        flight::MAX_INFLIGHT_BYTES >> 20
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
        let mut around = Around::new(
            next,
            queue,
            self.queue,
            &self.reads,
            &self.read_only,
            reuse,
            dev,
        );
        around.before(app_wait);
        Some(around)
    }

    /// After the forwarded enqueue: enqueues the post-launch reads and hands the launch to
    /// the writer thread (or gives its slot back when the enqueue failed).
    fn hand_over(
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
        note_known(&mut around, queue, remember, self.depth);
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
                plan.reserved = 0;
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
fn note_known(around: &mut Around<'_>, queue: cl_command_queue, remember: bool, depth: u32) {
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
    let raced = known::after_launch(queue as usize, remember, depth, &reads, &reused);
    let mut raced = raced.into_iter();
    for item in around.items.iter_mut().filter(|i| i.reuse.is_some()) {
        item.raced = raced.next().unwrap_or(true);
    }
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
