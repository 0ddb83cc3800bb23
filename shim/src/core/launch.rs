//! Launch hooks: `clEnqueueNDRangeKernel` / `clEnqueueTask` become `LaunchRecord`s.
//!
//! Order of work for a recorded launch (buffer modes `full`/`hash`):
//! plan (name, filters, arguments, program, device) → wait for the wait list and finish the
//! queue → read every buffer/image argument → forward the enqueue (with a private event if the
//! application passed none) → wait for it → read them again → append the record.
//! If any user event is still unset, the shim does not wait at all (that could deadlock the
//! application): contents are recorded as missing and the launch marked not replayable.

use super::args::{arg_infos, classify};
use super::contents::{self, Shape};
use super::device::{device_record, queue_properties};
use super::info;
use super::kernel::describe;
use super::track::{lock, tables};
use crate::door::quietly;
use crate::Next;
use cltrap_capture::{
    ArgRecord, BufferMode, CaptureWriter, Content, LaunchApi, LaunchRecord, Settings,
};
use libc::size_t;
use opencl_sys::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Number of enqueues seen so far (all of them: the launch window counts filtered ones too).
static SEQ: AtomicU64 = AtomicU64::new(0);

pub unsafe fn clEnqueueNDRangeKernel(
    next: &Next,
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
    let plan = quietly(|| {
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
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
        let shape = Geometry {
            api: LaunchApi::NdRange,
            work_dim,
            offset: dims(global_work_offset),
            global: dims(global_work_size).unwrap_or_default(),
            local: dims(local_work_size),
        };
        Plan::new(next, seq, command_queue, kernel, shape)
    })
    .flatten();
    run(
        next,
        plan,
        command_queue,
        num_events_in_wait_list,
        event_wait_list,
        event,
        |ev| {
            f(
                command_queue,
                kernel,
                work_dim,
                global_work_offset,
                global_work_size,
                local_work_size,
                num_events_in_wait_list,
                event_wait_list,
                ev,
            )
        },
    )
}

pub unsafe fn clEnqueueTask(
    next: &Next,
    command_queue: cl_command_queue,
    kernel: cl_kernel,
    num_events_in_wait_list: cl_uint,
    event_wait_list: *const cl_event,
    event: *mut cl_event,
) -> cl_int {
    let Some(f) = next.clEnqueueTask else {
        return CL_INVALID_OPERATION;
    };
    let plan = quietly(|| {
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let shape = Geometry {
            api: LaunchApi::Task,
            work_dim: 1,
            offset: None,
            global: vec![1],
            local: Some(vec![1]),
        };
        Plan::new(next, seq, command_queue, kernel, shape)
    })
    .flatten();
    run(
        next,
        plan,
        command_queue,
        num_events_in_wait_list,
        event_wait_list,
        event,
        |ev| {
            f(
                command_queue,
                kernel,
                num_events_in_wait_list,
                event_wait_list,
                ev,
            )
        },
    )
}

/// Forwards the enqueue exactly once, recording around it when there is a plan.
fn run(
    next: &Next,
    plan: Option<Plan>,
    queue: cl_command_queue,
    num_events: cl_uint,
    events: *const cl_event,
    app_event: *mut cl_event,
    enqueue: impl FnOnce(*mut cl_event) -> cl_int,
) -> cl_int {
    let Some(mut plan) = plan else {
        return enqueue(app_event);
    };
    let synced = quietly(|| plan.before(next, queue, num_events, events)).unwrap_or(false);
    let mut own: cl_event = std::ptr::null_mut();
    let ev_ptr = if synced && app_event.is_null() {
        &mut own as *mut cl_event
    } else {
        app_event
    };
    let ret = enqueue(ev_ptr);
    quietly(|| {
        if ret != CL_SUCCESS {
            plan.abandon();
            return;
        }
        if synced {
            // SAFETY: the enqueue succeeded, so it stored an event where we asked.
            let ev = if ev_ptr.is_null() {
                std::ptr::null_mut()
            } else {
                unsafe { *ev_ptr }
            };
            plan.after(next, queue, ev);
        }
        plan.finish(ret);
    });
    if !own.is_null() {
        if let Some(release) = next.clReleaseEvent {
            // SAFETY: our own event, released once.
            unsafe { release(own) };
        }
    }
    ret
}

struct Geometry {
    api: LaunchApi,
    work_dim: cl_uint,
    offset: Option<Vec<u64>>,
    global: Vec<u64>,
    local: Option<Vec<u64>>,
}

/// A launch being recorded.
struct Plan {
    record: LaunchRecord,
    writer: &'static CaptureWriter,
    settings: &'static Settings,
    mode: BufferMode,
    /// Memory object behind each argument (by index), for filling in contents.
    slots: Vec<Option<usize>>,
    /// Distinct memory objects to read, with their shape.
    reads: Vec<(usize, Shape)>,
    before: HashMap<usize, Content>,
    after: HashMap<usize, Content>,
    /// Why contents are missing, when they are.
    missing: String,
}

impl Plan {
    fn new(
        next: &Next,
        seq: u64,
        queue: cl_command_queue,
        kernel: cl_kernel,
        geo: Geometry,
    ) -> Option<Plan> {
        let settings = crate::state::settings()?;
        if !crate::sink::healthy() {
            return None;
        }
        // The name decides most filters: look at it before copying the arguments.
        let known_name = lock(&tables().kernels)
            .get(&(kernel as usize))
            .map(|k| k.name.clone());
        if known_name
            .as_deref()
            .is_some_and(|n| !settings.wants(seq, n))
        {
            return None;
        }
        let known = lock(&tables().kernels).get(&(kernel as usize)).cloned();
        let k = match known {
            Some(k) => k,
            None => {
                let k = describe(next, kernel);
                lock(&tables().kernels).insert(kernel as usize, k.clone());
                k
            }
        };
        if !settings.wants(seq, &k.name) || !reserve(settings, &k.name) {
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
        for i in 0..num_args {
            let info = arg_info.as_ref().and_then(|v| v.get(i));
            let value = k.args.get(i).and_then(|v| v.as_ref());
            let (rec, mem) = classify(next, i as u32, info, value, &mut notes);
            if let Some((h, shape)) = mem {
                if !reads.iter().any(|(m, _)| *m == h) {
                    reads.push((h, shape));
                }
            }
            slots.push(mem.map(|(h, _)| h));
            args.push(rec);
        }
        let program = match super::record::program_hash(next, writer, k.program) {
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
        let record = LaunchRecord {
            id: 0,
            seq,
            kernel: k.name.clone(),
            program,
            api: geo.api,
            work_dim: geo.work_dim,
            global_offset: geo.offset,
            global_size: geo.global,
            local_size: geo.local,
            args,
            device: device_record(next, queue),
            queue_properties: queue_properties(next, queue),
            launch_site: crate::site::capture(),
            // SAFETY: gettid has no preconditions.
            thread: unsafe { libc::gettid() } as u64,
            status: CL_SUCCESS,
            not_replayable: notes,
        };
        Some(Plan {
            record,
            writer,
            settings,
            mode: contents::mode(settings.buffers),
            slots,
            reads,
            before: HashMap::new(),
            after: HashMap::new(),
            missing: String::new(),
        })
    }

    /// Waits for what the kernel waits for and reads its inputs. Returns whether it synced
    /// (and the post-launch contents should be read too).
    fn before(
        &mut self,
        next: &Next,
        queue: cl_command_queue,
        num_events: cl_uint,
        events: *const cl_event,
    ) -> bool {
        if self.mode == BufferMode::None {
            self.missing = "not read (CLTRAP_BUFFERS=none)".into();
            return false;
        }
        if self.reads.is_empty() {
            return false;
        }
        if tables().user_events_pending() {
            self.missing = "not read: a user event was still unset, and waiting could have deadlocked the application".into();
            self.record.not_replayable.push(
                "buffer contents were not recorded (a user event was pending at launch)".into(),
            );
            return false;
        }
        flush_queues_of(next, num_events, events);
        if self.record.queue_properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE == 0 {
            // In order: reads queued behind everything before, waiting for the launch's own
            // wait list, see what the kernel will see; one clFinish covers them all.
            let wait = if num_events == 0 || events.is_null() {
                Vec::new()
            } else {
                // SAFETY: the application passes `num_events` events, as to the enqueue.
                unsafe { std::slice::from_raw_parts(events, num_events as usize) }.to_vec()
            };
            self.before = self.read_all(next, queue, &wait);
            return true;
        }
        // SAFETY: the application's own wait list and queue, as it passes them to the enqueue.
        let waited = unsafe {
            (num_events == 0
                || next.clWaitForEvents.map(|f| f(num_events, events)) == Some(CL_SUCCESS))
                && next.clFinish.map(|f| f(queue)) == Some(CL_SUCCESS)
        };
        if !waited {
            self.missing = "not read: waiting for the launch's wait list or queue failed".into();
            self.record
                .not_replayable
                .push("buffer contents were not recorded (wait list failed)".into());
            return false;
        }
        self.before = self.read_all(next, queue, &[]);
        true
    }

    fn after(&mut self, next: &Next, queue: cl_command_queue, ev: cl_event) {
        if ev.is_null() {
            return;
        }
        self.after = self.read_all(next, queue, &[ev]);
        let status = next.clGetEventInfo.and_then(|f| {
            // SAFETY: standard info query on the event the enqueue just returned.
            info::value::<cl_int>(|s, p, r| unsafe {
                f(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, s, p, r)
            })
        });
        if status != Some(CL_COMPLETE) {
            self.after.clear();
            self.record
                .not_replayable
                .push("the kernel did not complete; no post-launch contents".into());
        }
    }

    fn read_all(
        &self,
        next: &Next,
        queue: cl_command_queue,
        wait: &[cl_event],
    ) -> HashMap<usize, Content> {
        let results = contents::read_many(next, queue, &self.reads, wait);
        self.reads
            .iter()
            .zip(results)
            .map(|((mem, _), r)| {
                let content = match r {
                    Ok(bytes) => {
                        contents::store(self.writer, self.mode, self.settings.max_bytes, &bytes)
                    }
                    Err(why) => Content::Missing { note: why },
                };
                (*mem, content)
            })
            .collect()
    }

    fn abandon(&self) {
        release(self.settings, &self.record.kernel);
    }

    fn finish(mut self, status: cl_int) {
        let missing = |note: &str| Content::Missing {
            note: note.to_string(),
        };
        let default_note = if self.missing.is_empty() {
            "not read".to_string()
        } else {
            self.missing.clone()
        };
        for (arg, slot) in self.record.args.iter_mut().zip(&self.slots) {
            let Some(mem) = slot else { continue };
            let (b, a) = match arg {
                ArgRecord::Buffer { before, after, .. }
                | ArgRecord::Image { before, after, .. } => (before, after),
                _ => continue,
            };
            if matches!(b, Content::Missing { note } if note.is_empty()) {
                *b = self
                    .before
                    .get(mem)
                    .cloned()
                    .unwrap_or_else(|| missing(&default_note));
                *a = self
                    .after
                    .get(mem)
                    .cloned()
                    .unwrap_or_else(|| missing(&default_note));
            }
        }
        self.record.status = status;
        if let Err(e) = self.writer.append(self.record) {
            crate::sink::fail(&e);
        }
    }
}

/// Flushes the queues the wait list's events belong to: the application may flush them only
/// later, and our synchronisation must not wait for commands nobody submitted yet.
fn flush_queues_of(next: &Next, num_events: cl_uint, events: *const cl_event) {
    let (Some(get), Some(flush)) = (next.clGetEventInfo, next.clFlush) else {
        return;
    };
    if num_events == 0 || events.is_null() {
        return;
    }
    // SAFETY: the application passes `num_events` events, as it does to the enqueue.
    let events = unsafe { std::slice::from_raw_parts(events, num_events as usize) };
    for ev in events {
        // SAFETY: standard info query; user events have no queue (NULL), which is skipped.
        let q =
            info::value::<usize>(|s, p, r| unsafe { get(*ev, CL_EVENT_COMMAND_QUEUE, s, p, r) });
        if let Some(q) = q.filter(|q| *q != 0) {
            // SAFETY: a live queue the application's event belongs to.
            unsafe { flush(q as cl_command_queue) };
        }
    }
}

/// Takes one of the kernel's `CLTRAP_PER_KERNEL` slots.
fn reserve(settings: &Settings, name: &str) -> bool {
    let Some(limit) = settings.per_kernel else {
        return true;
    };
    let mut counts = lock(&tables().per_kernel);
    let c = counts.entry(name.to_string()).or_insert(0);
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
