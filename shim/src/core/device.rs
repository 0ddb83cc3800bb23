//! Where a launch ran: device facts (cached per device) and the queue's facts (cached per
//! queue until the application releases it).

use super::info;
use super::track::{lock, tables};
use crate::handles::HandleMap;
use crate::Next;
use cltrap_capture::DeviceRecord;
use opencl_sys::*;
use std::sync::Mutex;

/// What never changes about a command queue: asked once, not at every launch (three driver
/// queries per launch were a measurable part of the capture's cost in launch storms).
#[derive(Clone, Copy, Default)]
pub(crate) struct QueueFacts {
    pub device: usize,
    pub context: usize,
    pub properties: u64,
}

static QUEUES: once_cell::sync::Lazy<Mutex<HandleMap<usize, QueueFacts>>> =
    once_cell::sync::Lazy::new(Default::default);

/// The facts of `queue` (zeros for what the driver does not say).
pub(crate) fn queue_facts(next: &Next, queue: cl_command_queue) -> QueueFacts {
    if let Some(f) = lock(&QUEUES).get(&(queue as usize)) {
        return *f;
    }
    let Some(qf) = next.clGetCommandQueueInfo else {
        return QueueFacts::default();
    };
    // SAFETY: standard info queries on the application's live queue.
    let ask = |param| info::value::<usize>(|s, p, r| unsafe { qf(queue, param, s, p, r) });
    let facts = QueueFacts {
        device: ask(CL_QUEUE_DEVICE).unwrap_or(0),
        context: ask(CL_QUEUE_CONTEXT).unwrap_or(0),
        properties: info::value::<cl_command_queue_properties>(|s, p, r| unsafe {
            qf(queue, CL_QUEUE_PROPERTIES, s, p, r)
        })
        .unwrap_or(0),
    };
    if facts.device != 0 && facts.context != 0 {
        lock(&QUEUES).insert(queue as usize, facts);
    }
    facts
}

/// Forgets the facts of `queue` (its release hook is about to forward the release): the handle
/// may name another queue once this one is gone.
pub(super) fn forget_queue(queue: usize) {
    lock(&QUEUES).remove(&queue);
}

/// Whether `device` is a CPU device (one that computes in host memory, such as PoCL's), as
/// its driver says (None: it does not say). One query for the capture's choices that depend
/// on it: digest engines, pinned pools and in-place digests.
pub(super) fn is_cpu(next: &Next, device: usize) -> Option<bool> {
    let f = next.clGetDeviceInfo?;
    // SAFETY: a standard info query on the application's live device.
    let kind = info::value::<cl_device_type>(|s, p, r| unsafe {
        f(device as cl_device_id, CL_DEVICE_TYPE, s, p, r)
    })?;
    Some(kind & CL_DEVICE_TYPE_CPU != 0)
}

/// Platform and device names and versions of `dev` (a queue's [`QueueFacts::device`]).
pub(super) fn device_record(next: &Next, dev: usize) -> DeviceRecord {
    if dev == 0 {
        return DeviceRecord::default();
    }
    if let Some(d) = lock(&tables().devices).get(&dev) {
        return d.clone();
    }
    let mut rec = DeviceRecord::default();
    if let Some(f) = next.clGetDeviceInfo {
        let q = |param| move |s, p, r| unsafe { f(dev as cl_device_id, param, s, p, r) };
        rec.name = info::string(q(CL_DEVICE_NAME)).unwrap_or_default().into();
        rec.vendor = info::string(q(CL_DEVICE_VENDOR)).unwrap_or_default().into();
        rec.driver_version = info::string(q(CL_DRIVER_VERSION))
            .unwrap_or_default()
            .into();
        rec.version = info::string(q(CL_DEVICE_VERSION))
            .unwrap_or_default()
            .into();
        let platform = info::value::<usize>(q(CL_DEVICE_PLATFORM)).unwrap_or(0);
        if let (Some(pf), true) = (next.clGetPlatformInfo, platform != 0) {
            rec.platform = info::string(|s, p, r| unsafe {
                pf(platform as cl_platform_id, CL_PLATFORM_NAME, s, p, r)
            })
            .unwrap_or_default()
            .into();
        }
    }
    lock(&tables().devices).insert(dev, rec.clone());
    rec
}
