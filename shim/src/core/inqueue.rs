//! The capture's own commands around one launch, in the application's queue: non-blocking
//! reads of every buffer/image argument right before the kernel and right after it, so what
//! is recorded is exactly what the kernel saw, and the application never waits for us.
//!
//! * In-order queue: the pre-reads (with the application's wait list) run before the kernel
//!   and the post-reads after it by queue order; only the last post-read gets an event, whose
//!   completion means every command of ours completed, and a *rider* launch gets none (a
//!   later event of its queue answers for it, see [`super::flight`]).
//! * Out-of-order queue: the kernel also waits for the pre-read events (appended to the
//!   application's wait list; its own wait semantics are unchanged); the post-reads wait for
//!   the kernel's event; a barrier on the post-read events keeps later commands of the
//!   application from overwriting a buffer before it was read. The barrier's event is final.
//!
//! Buffers digested on the device ([`super::digest`]) get the digest kernel (and, when the
//! contents may have to be stored, a device-side copy into a snapshot of ours) followed by a
//! read of its few partials, in place of the read of their contents; the order and waits are
//! those of a read (each step waits for the one before it, so the last read's event answers
//! for all of them).
//!
//! On a CPU device, large buffers get a native kernel that hashes the buffer where it is (and
//! copies it when the launch stores it and the capture does not hold it yet,
//! [`super::inplace`]) in place of the read, in the same place and with the same waits; a side
//! whose native kernel is refused is read back.
//!
//! Objects the host may not read are copied into a device-side staging buffer first. Objects
//! the kernel cannot change (`__constant`, pointers to `const`, `read_only` images, and no
//! writable argument overlapping them) are read once: their contents after are those before.

use super::contents::{self, Keep, Shape};
use super::device::QueueFacts;
use super::digest::{self, Engine, Side};
use super::flight::{self, DevItem, Item};
use super::inplace;
use super::known::Reuse;
use super::room::Landing;
use crate::Next;
use cltrap_capture::Settings;
use opencl_sys::*;
use std::sync::Arc;

/// How one side of a read is taken.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Take {
    /// Read back.
    #[default]
    Read,
    /// Hashed in place ([`super::inplace`]): only its digest is recorded.
    Digest,
    /// Hashed in place, and copied when the capture does not hold that content yet (a side
    /// the launch stores).
    Store,
}

/// How the two sides of one read are taken.
#[derive(Clone, Copy, Default)]
pub(super) struct InPlace {
    pub pre: Take,
    pub post: Take,
}

#[derive(Clone, Copy)]
enum Phase {
    Pre,
    Post,
}

/// The reads of one launch, being enqueued.
pub(super) struct Around<'a> {
    next: &'a Next,
    queue: cl_command_queue,
    facts: QueueFacts,
    out_of_order: bool,
    pub items: Vec<Item>,
    staged: Vec<cl_mem>,
    /// Every event we created (released by the writer after completion).
    pub events: Vec<cl_event>,
    /// Staging buffers (released by the writer).
    pub temps: Vec<cl_mem>,
    pre_events: Vec<cl_event>,
}

impl<'a> Around<'a> {
    /// Host memory for every object's before and after contents (or their digests' partials).
    /// `facts`: the queue's, as the launch looked them up (not asked again here).
    /// `reuse`: per read, contents before that an earlier launch left (not read again).
    /// `dev`: per read, its device-side digest plan ([`Around::device_sides`]).
    /// `in_place`: per read, the sides digested in place ([`Around::in_place_sides`]).
    pub fn new(
        next: &'a Next,
        queue: cl_command_queue,
        facts: QueueFacts,
        reads: &[(usize, Shape)],
        read_only: &[bool],
        reuse: Vec<Option<Reuse>>,
        dev: Vec<Option<DevItem>>,
        in_place: &[InPlace],
    ) -> Around<'a> {
        let room = |i: usize, bytes: usize, pre: bool| match &dev[i] {
            Some(d) => {
                let side = if pre { &d.pre } else { &d.post };
                side.as_ref().map_or(0, |_| d.engine.groups(bytes) * 16)
            }
            None => bytes,
        };
        // Per read: room for the contents (or partials) before and after.
        let rooms: Vec<(usize, usize)> = reads
            .iter()
            .enumerate()
            .map(|(i, (_, s))| (room(i, s.bytes(), true), room(i, s.bytes(), false)))
            .collect();
        let small = rooms
            .iter()
            .any(|(a, b)| (*a).max(*b) <= super::pinned::MAX_CHUNK);
        let pool = if small {
            super::pinned::pool_for(next, facts)
        } else {
            None
        };
        let pool = pool.as_ref();
        Around {
            next,
            queue,
            facts,
            out_of_order: facts.properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE != 0,
            items: reads
                .iter()
                .zip(read_only)
                .zip(reuse)
                .zip(dev)
                .enumerate()
                .map(|(i, ((((mem, shape), ro), reuse), dev))| {
                    let (pre, post) = rooms[i];
                    let landing = |take: Take, n: usize| match take {
                        Take::Read => Landing::with_room(n, pool),
                        Take::Digest => Landing::digest_in_place(false),
                        Take::Store => Landing::digest_in_place(true),
                    };
                    Item {
                        mem: *mem,
                        shape: *shape,
                        pre: landing(in_place[i].pre, if reuse.is_some() { 0 } else { pre }),
                        post: landing(in_place[i].post, if *ro { 0 } else { post }),
                        post_is_pre: *ro,
                        reuse,
                        raced: false,
                        cell: Default::default(),
                        dev,
                    }
                })
                .collect(),
            staged: vec![std::ptr::null_mut(); reads.len()],
            events: Vec::new(),
            temps: Vec::new(),
            pre_events: Vec::new(),
        }
    }

    /// Memory all reads need: host bytes of the reads back (objects the kernel cannot change
    /// are read once, objects whose contents before are reused only after) and of the digest
    /// partials; device bytes of the snapshots of buffers digested on the device.
    pub fn bytes(
        reads: &[(usize, Shape)],
        read_only: &[bool],
        reuse: &[Option<Reuse>],
        dev: &[Option<DevItem>],
        in_place: &[InPlace],
    ) -> flight::Reservation {
        let mut r = flight::Reservation::default();
        let reads = reads
            .iter()
            .zip(read_only)
            .zip(reuse)
            .zip(dev)
            .zip(in_place);
        for ((((&(_, s), ro), re), d), here) in reads {
            let Some(d) = d else {
                // A side hashed in place holds host memory only for a copy of new bytes.
                let pre = re.is_none() && here.pre != Take::Digest;
                let post = !*ro && here.post != Take::Digest;
                r.host += s.bytes() * (usize::from(pre) + usize::from(post));
                continue;
            };
            for side in [&d.pre, &d.post].into_iter().flatten() {
                r.host += cltrap_capture::devdigest::SLOT_BYTES;
                r.device += side.snapshot.as_ref().map_or(0, |_| s.bytes());
            }
        }
        r
    }

    /// Per read: whether it is digested on the device, with the slots (and, where `keep`
    /// stores that side, the snapshots) it needs; None where it is read back (images, small
    /// buffers under `auto`, no engine for the device, or no free slot).
    pub fn device_sides(
        engine: Option<&Arc<Engine>>,
        settings: &Settings,
        keep: Keep,
        reads: &[(usize, Shape)],
        read_only: &[bool],
        reuse: &[Option<Reuse>],
    ) -> Vec<Option<DevItem>> {
        reads
            .iter()
            .zip(read_only)
            .zip(reuse)
            .map(|(((_, shape), ro), re)| {
                let engine = engine?;
                let Shape::Buffer { size } = *shape else {
                    return None;
                };
                if size == 0 || !digest::wanted(settings, size) {
                    return None;
                }
                let side = |store: bool| -> Option<Side> {
                    Some(Side {
                        slot: engine.slot()?,
                        snapshot: if store {
                            Some(engine.snapshot(size)?)
                        } else {
                            None
                        },
                        ahead: None,
                    })
                };
                let pre = match re {
                    Some(_) => None,
                    None => Some(side(matches!(
                        keep,
                        Keep::All | Keep::Inputs | Keep::Befores
                    ))?),
                };
                let post = if *ro {
                    None
                } else {
                    Some(side(keep == Keep::All)?)
                };
                Some(DevItem {
                    engine: engine.clone(),
                    pre,
                    post,
                })
            })
            .collect()
    }

    /// Per read: the sides digested in place ([`super::inplace`]) instead of read back:
    /// buffers that `--device-digest auto` would digest on a GPU (`host`: every buffer), on
    /// a device that computes in host memory and runs native kernels, not digested on the
    /// device, not a sub-buffer nor cut into some, on a side the launch reads; copied too when
    /// new where the launch stores it (`keep`).
    pub fn in_place_sides(
        next: &Next,
        facts: QueueFacts,
        settings: &Settings,
        keep: Keep,
        reads: &[(usize, Shape)],
        read_only: &[bool],
        reuse: &[Option<Reuse>],
        dev: &[Option<DevItem>],
    ) -> Vec<InPlace> {
        use cltrap_capture::DeviceDigest;
        let wanted = |shape: &Shape| match *shape {
            Shape::Buffer { size } => size > 0 && digest::wanted(settings, size),
            Shape::Image { .. } => false,
        };
        let modes = matches!(
            settings.device_digest,
            DeviceDigest::Auto | DeviceDigest::Host
        );
        let usable = modes
            && reads.iter().any(|(_, s)| wanted(s))
            && inplace::usable(next, facts.context, facts.device);
        reads
            .iter()
            .zip(read_only)
            .zip(reuse)
            .zip(dev)
            .map(|(((&(mem, ref shape), ro), re), d)| {
                if !usable || d.is_some() || !wanted(shape) || !inplace::alone(mem) {
                    return InPlace::default();
                }
                let take = |read: bool, after: bool| match (read, contents::stores(keep, after)) {
                    (false, _) => Take::Read,
                    (true, false) => Take::Digest,
                    (true, true) => Take::Store,
                };
                InPlace {
                    pre: take(re.is_none(), false),
                    post: take(!*ro, true),
                }
            })
            .collect()
    }

    /// Enqueues the pre-launch reads, each waiting for the application's wait list.
    pub fn before(&mut self, app_wait: &[cl_event]) {
        for i in 0..self.items.len() {
            if self.items[i].reuse.is_some() {
                continue;
            }
            if let Some(ev) = self.read(i, Phase::Pre, app_wait, self.out_of_order) {
                self.pre_events.push(ev);
            }
        }
    }

    /// The wait list to give the kernel instead of the application's (out-of-order queues
    /// only: the application's events plus our pre-reads).
    pub fn kernel_wait(&self, app_wait: &[cl_event]) -> Option<Vec<cl_event>> {
        if !self.out_of_order || self.pre_events.is_empty() {
            return None;
        }
        let mut v = app_wait.to_vec();
        v.extend_from_slice(&self.pre_events);
        Some(v)
    }

    /// Enqueues the post-launch reads after the kernel (whose event is `kernel_event` on
    /// out-of-order queues). Returns the final event (null: none could be had, or `rider`).
    /// `rider` (in-order queues only): no event at all, the launch's completion is learned
    /// from a later event of its queue ([`super::flight`]'s riders).
    pub fn after(&mut self, kernel_event: cl_event, rider: bool) -> cl_event {
        let wait: Vec<cl_event> = if self.out_of_order && !kernel_event.is_null() {
            vec![kernel_event]
        } else {
            Vec::new()
        };
        // Objects the kernel cannot change are not read again.
        let to_read: Vec<usize> = (0..self.items.len())
            .filter(|i| !self.items[*i].post_is_pre)
            .collect();
        let mut post_events = Vec::new();
        let mut last: cl_event = std::ptr::null_mut();
        for (n, &i) in to_read.iter().enumerate() {
            let want = self.out_of_order || (!rider && n + 1 == to_read.len());
            if let Some(ev) = self.read(i, Phase::Post, &wait, want) {
                post_events.push(ev);
                last = ev;
            }
        }
        if self.out_of_order {
            if post_events.is_empty() {
                // Nothing to protect from later commands: just learn when the kernel is done.
                return self.fence(&wait, false);
            }
            let barrier = self.fence(&post_events, true);
            if !barrier.is_null() {
                super::guard::set(self.next, self.queue, barrier);
            }
            return barrier;
        }
        if rider || !last.is_null() {
            return last;
        }
        self.fence(&[], false)
    }

    /// The kernel's enqueue failed: an event that completes after our pre-reads.
    pub fn abandoned(&mut self) -> cl_event {
        let pre = std::mem::take(&mut self.pre_events);
        self.fence(&pre, false)
    }

    /// A marker (or barrier) after `wait` (or after everything before it, when empty).
    fn fence(&mut self, wait: &[cl_event], barrier: bool) -> cl_event {
        let f = if barrier {
            self.next.clEnqueueBarrierWithWaitList
        } else {
            self.next.clEnqueueMarkerWithWaitList
        };
        let Some(f) = f else {
            return std::ptr::null_mut();
        };
        // SAFETY: the application's queue and our own events.
        match contents::enqueued(wait, true, |n, list, ev| unsafe {
            f(self.queue, n, list, ev)
        }) {
            Ok(ev) if !ev.is_null() => {
                self.events.push(ev);
                ev
            }
            _ => std::ptr::null_mut(),
        }
    }

    /// Enqueues one read (directly, or through a staging buffer); returns its event when
    /// asked for one and it was enqueued. Failures are noted on the item's landing.
    fn read(
        &mut self,
        i: usize,
        phase: Phase,
        wait: &[cl_event],
        want_event: bool,
    ) -> Option<cl_event> {
        let item = &mut self.items[i];
        let shape = item.shape;
        let mem = item.mem as cl_mem;
        let bytes = shape.bytes();
        let landing = match phase {
            Phase::Pre => &mut item.pre,
            Phase::Post => &mut item.post,
        };
        if bytes == 0 {
            return None;
        }
        if let Some((slot, copy_new)) = landing.digest_slot() {
            let r = inplace::enqueue(
                self.next,
                self.queue,
                mem,
                bytes,
                (slot, copy_new),
                wait,
                want_event,
            );
            match r {
                Ok(ev) => return self.keep(ev),
                // Refused: this side and, from now on, the device's launches are read back
                // (a side that was to be digested only had no host memory counted against the
                // in-flight cap for this read).
                Err(_) => {
                    inplace::refuse(self.facts.context, self.facts.device);
                    *landing = Landing::with_room(bytes, None);
                }
            }
        }
        let dst = landing.as_mut_ptr().cast();
        if let Some(dev) = &mut item.dev {
            let side = match phase {
                Phase::Pre => &mut dev.pre,
                Phase::Post => &mut dev.post,
            };
            if let Some(s) = side {
                let r = dev.engine.enqueue(
                    self.queue,
                    !self.out_of_order,
                    mem,
                    bytes,
                    s,
                    dst,
                    wait,
                    want_event,
                    &mut self.events,
                );
                return match r {
                    Ok(ev) => self.keep(ev),
                    Err(e) => {
                        // Commands of ours may still use the slot and snapshot: never reuse them.
                        if let Some(s) = side.take() {
                            s.abandon();
                        }
                        landing.err = Some(format!(
                            "digesting it on the device failed (OpenCL error {e})"
                        ));
                        None
                    }
                };
            }
        }
        super::stats::add(&super::stats::CONTENT_READS, 1);
        super::stats::add(&super::stats::CONTENT_READ_BYTES, bytes as u64);
        let mut direct = CL_SUCCESS;
        if self.staged[i].is_null() {
            match contents::enqueue_read(self.next, self.queue, mem, shape, dst, wait, want_event) {
                Ok(ev) => return self.keep(ev),
                Err(e) => direct = e,
            }
            match contents::staging_buffer(self.next, mem, bytes) {
                Ok(t) => {
                    self.staged[i] = t;
                    self.temps.push(t);
                }
                Err(e) => {
                    landing.err = Some(format!(
                        "reading it failed (OpenCL error {direct}; creating a staging buffer: {e})"
                    ));
                    return None;
                }
            }
        }
        let tmp = self.staged[i];
        let copied = contents::enqueue_stage(
            self.next,
            self.queue,
            mem,
            shape,
            tmp,
            wait,
            self.out_of_order,
        );
        let copy_event = match copied {
            Ok(ev) => ev,
            Err(e) => {
                landing.err = Some(format!(
                    "reading it failed (OpenCL error {direct}; copying it to a staging buffer: {e})"
                ));
                return None;
            }
        };
        let read_wait: Vec<cl_event> = if copy_event.is_null() {
            Vec::new()
        } else {
            vec![copy_event]
        };
        let read = contents::enqueue_read(
            self.next,
            self.queue,
            tmp,
            Shape::Buffer { size: bytes },
            dst,
            &read_wait,
            want_event,
        );
        if !copy_event.is_null() {
            self.events.push(copy_event);
        }
        match read {
            Ok(ev) => self.keep(ev),
            Err(e) => {
                let landing = match phase {
                    Phase::Pre => &mut self.items[i].pre,
                    Phase::Post => &mut self.items[i].post,
                };
                landing.err = Some(format!(
                    "reading it failed (OpenCL error {direct}; reading the staging buffer: {e})"
                ));
                None
            }
        }
    }

    fn keep(&mut self, ev: cl_event) -> Option<cl_event> {
        if ev.is_null() {
            None
        } else {
            self.events.push(ev);
            Some(ev)
        }
    }
}
