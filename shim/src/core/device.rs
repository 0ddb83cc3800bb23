//! Where a launch ran: device facts (cached per device) and the queue's properties.

use super::info;
use super::track::{lock, tables};
use crate::Next;
use cltrap_capture::DeviceRecord;
use opencl_sys::*;

/// Platform and device names and versions of the queue's device.
pub(super) fn device_record(next: &Next, queue: cl_command_queue) -> DeviceRecord {
    let Some(qf) = next.clGetCommandQueueInfo else {
        return DeviceRecord::default();
    };
    // SAFETY: standard info queries.
    let Some(dev) = info::value::<usize>(|s, p, r| unsafe { qf(queue, CL_QUEUE_DEVICE, s, p, r) })
    else {
        return DeviceRecord::default();
    };
    if let Some(d) = lock(&tables().devices).get(&dev) {
        return d.clone();
    }
    let mut rec = DeviceRecord::default();
    if let Some(f) = next.clGetDeviceInfo {
        let q = |param| move |s, p, r| unsafe { f(dev as cl_device_id, param, s, p, r) };
        rec.name = info::string(q(CL_DEVICE_NAME)).unwrap_or_default();
        rec.vendor = info::string(q(CL_DEVICE_VENDOR)).unwrap_or_default();
        rec.driver_version = info::string(q(CL_DRIVER_VERSION)).unwrap_or_default();
        rec.version = info::string(q(CL_DEVICE_VERSION)).unwrap_or_default();
        let platform = info::value::<usize>(q(CL_DEVICE_PLATFORM)).unwrap_or(0);
        if let (Some(pf), true) = (next.clGetPlatformInfo, platform != 0) {
            rec.platform = info::string(|s, p, r| unsafe {
                pf(platform as cl_platform_id, CL_PLATFORM_NAME, s, p, r)
            })
            .unwrap_or_default();
        }
    }
    lock(&tables().devices).insert(dev, rec.clone());
    rec
}

/// `cl_command_queue_properties` of the queue.
pub(super) fn queue_properties(next: &Next, queue: cl_command_queue) -> u64 {
    next.clGetCommandQueueInfo
        .and_then(|f| {
            // SAFETY: standard info query.
            info::value::<cl_command_queue_properties>(|s, p, r| unsafe {
                f(queue, CL_QUEUE_PROPERTIES, s, p, r)
            })
        })
        .unwrap_or(0)
}
