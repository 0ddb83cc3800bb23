//! Guard zones: buffers with poisoned memory on both sides, so a kernel that writes out of
//! bounds is caught instead of corrupting whatever lies next to the buffer.
//!
//! Why: mutation testing runs thousands of deliberately wrong kernels (`i + 1`, `id - 1`,
//! swapped ids). On a CPU device (PoCL) a buffer is host heap memory, so a write a few
//! elements past its end lands in the worker's heap: the worker dies (SIGSEGV, SIGABRT from
//! malloc's checks) and must be restarted, or worse, deadlocks on a trampled lock and costs a
//! whole run deadline; what happens depends on what lay there, so the verdict is luck. With a
//! guard zone the write lands in memory that belongs to the buffer object, the run finishes,
//! and the zone's changed bytes say exactly what happened, on every device alike.
//!
//! How: the kernel gets a sub-buffer `[pad, pad + size)` of an allocation `pad + size + pad`
//! whose pads hold [`POISON`]. After the run the pads are read back and compared with it.
//! Reads out of bounds see the poison (deterministic, and unlike zeros rarely harmless).
//! Writes farther away than `pad` are not caught (the pad is the buffer's size, 4 KiB at
//! least and [`MAX_PAD`] at most). Only whole buffers get zones; images, and sub-buffers of
//! the application's own, live in (or are) the zoned allocation of their parent.

use super::cl::Mem;
use super::{ExecError, Session};
use opencl_sys::{CL_DEVICE_MEM_BASE_ADDR_ALIGN, CL_MEM_COPY_HOST_PTR};
use std::ffi::c_void;

/// The byte the pads hold.
pub const POISON: u8 = 0xA5;
/// The least pad on each side.
pub const MIN_PAD: usize = 4096;
/// The largest pad on each side (a worker holds every test case's buffers).
pub const MAX_PAD: usize = 16 << 20;

/// A write outside an argument's buffer, caught in its guard zone. (Serde: it travels from
/// fuzz workers to their parent.)
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GuardBreach {
    /// The argument whose zone changed.
    pub arg_index: usize,
    /// Farthest changed byte before the buffer's start, as a distance (1 = the byte just
    /// before it).
    pub before: Option<u64>,
    /// Farthest changed byte after the buffer's end, as a distance (1 = the byte just past it).
    pub after: Option<u64>,
}

impl GuardBreach {
    /// One phrase, naming the argument like a [`super::Mismatch`] does when `name` and
    /// `type_name` (from the capture's argument info) are known.
    pub fn describe(&self, name: &str, type_name: &str) -> String {
        let place = match (self.before, self.after) {
            (Some(b), Some(a)) => {
                format!("up to {b} bytes before its start and {a} bytes past its end")
            }
            (Some(b), None) => format!("up to {b} bytes before its start"),
            (None, Some(a)) => format!("up to {a} bytes past its end"),
            (None, None) => "nowhere".to_string(),
        };
        self.phrase(name, type_name, &place)
    }

    /// [`GuardBreach::describe`] without the distances: one phrase per argument and side, so
    /// that many inputs overrunning the same buffer by different amounts read as one finding.
    pub fn summary(&self, name: &str) -> String {
        let place = match (self.before, self.after) {
            (Some(_), Some(_)) => "before its start and past its end",
            (Some(_), None) => "before its start",
            _ => "past its end",
        };
        self.phrase(name, "", place)
    }

    fn phrase(&self, name: &str, type_name: &str, place: &str) -> String {
        let label = match (name.is_empty(), type_name.is_empty()) {
            (false, false) => format!(" ({name}, {type_name})"),
            (false, true) => format!(" ({name})"),
            (true, false) => format!(" (?, {type_name})"),
            (true, true) => String::new(),
        };
        format!(
            "wrote out of bounds of argument {}{label}: {place}",
            self.arg_index
        )
    }
}

impl std::fmt::Display for GuardBreach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe("", ""))
    }
}

/// A zoned buffer of one run: the whole allocation and where the kernel's view starts.
pub(crate) struct Zone {
    /// The argument the view was made for.
    pub arg_index: usize,
    /// The allocation, pads included.
    pub outer: Mem,
    /// Bytes of poison on each side.
    pub pad: usize,
    /// Bytes of the view.
    pub size: usize,
}

/// The pad for a buffer of `size` bytes on a device aligning sub-buffers to `align` bytes.
pub(crate) fn pad_for(size: usize, align: usize) -> usize {
    let align = align.max(1);
    size.clamp(MIN_PAD, MAX_PAD).div_ceil(align) * align
}

/// The device's sub-buffer origin alignment in bytes (`CL_DEVICE_MEM_BASE_ADDR_ALIGN` is in
/// bits); 4096 when the driver does not say.
pub(crate) fn sub_buffer_align(device: opencl_sys::cl_device_id) -> usize {
    cl3::device::get_device_data(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN)
        .ok()
        .and_then(|b| {
            b.get(..4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        })
        .map_or(4096, |bits| (bits as usize / 8).max(1))
}

impl Session {
    /// A zoned buffer holding `bytes` for argument `index`: the zone and the kernel's view.
    /// `None` when the driver refuses the larger allocation (the caller then makes a plain
    /// buffer: a zone is a safety net, not a requirement).
    pub(crate) fn zoned_buffer(
        &self,
        access: u64,
        bytes: &[u8],
        index: usize,
    ) -> Option<(Zone, Mem)> {
        self.zoned_buffer_padded(access, bytes, index, MAX_PAD)
    }

    /// [`Session::zoned_buffer`] with pads of at most `max_pad` bytes (aligned up).
    pub(crate) fn zoned_buffer_padded(
        &self,
        access: u64,
        bytes: &[u8],
        index: usize,
        max_pad: usize,
    ) -> Option<(Zone, Mem)> {
        let size = bytes.len().max(1);
        let pad = pad_for(size.min(max_pad), self.sub_buffer_align);
        let mut host = vec![POISON; pad * 2 + size];
        host[pad..pad + bytes.len()].copy_from_slice(bytes);
        // SAFETY: `host` outlives the call; COPY_HOST_PTR only reads it.
        let outer = Mem(unsafe {
            cl3::memory::create_buffer(
                self.context.raw(),
                access | CL_MEM_COPY_HOST_PTR,
                host.len(),
                host.as_mut_ptr().cast::<c_void>(),
            )
        }
        .ok()?);
        let view = sub_buffer(&outer, access, pad, size).ok()?;
        Some((
            Zone {
                arg_index: index,
                outer,
                pad,
                size,
            },
            view,
        ))
    }

    /// The breaches of `zones` after a run: one per argument whose pads changed.
    pub(crate) fn breaches(&self, zones: &[Zone]) -> Result<Vec<GuardBreach>, ExecError> {
        let mut found = Vec::new();
        for z in zones {
            let mut before = vec![0u8; z.pad];
            let mut after = vec![0u8; z.pad];
            let what = || format!("reading the guard zone of argument {}", z.arg_index);
            self.read_buffer(&z.outer, 0, &mut before, what())?;
            self.read_buffer(&z.outer, z.pad + z.size, &mut after, what())?;
            found.extend(breach_of(z, &before, &after));
        }
        Ok(found)
    }
}

impl Session {
    /// Writes the poison back into both pads of `zone` (after a breach, so the next run of a
    /// zone kept between runs starts clean).
    pub(crate) fn repoison(&self, zone: &Zone) -> Result<(), ExecError> {
        let poison = vec![POISON; zone.pad];
        for at in [0, zone.pad + zone.size] {
            // SAFETY: `poison` holds exactly the bytes written; the write is blocking.
            let ev = unsafe {
                cl3::command_queue::enqueue_write_buffer(
                    self.queue.raw(),
                    zone.outer.raw(),
                    opencl_sys::CL_TRUE,
                    at,
                    poison.len(),
                    poison.as_ptr().cast::<c_void>(),
                    0,
                    std::ptr::null(),
                )
            }
            .map_err(super::cl_err(format!(
                "restoring the guard zone of argument {}",
                zone.arg_index
            )))?;
            drop(super::cl::Event(ev));
        }
        Ok(())
    }
}

/// The breach of zone `z` whose pads read back as `before` and `after`, if any.
pub(crate) fn breach_of(z: &Zone, before: &[u8], after: &[u8]) -> Option<GuardBreach> {
    let before = before
        .iter()
        .position(|b| *b != POISON)
        .map(|i| (z.pad - i) as u64);
    let after = after
        .iter()
        .rposition(|b| *b != POISON)
        .map(|i| i as u64 + 1);
    (before.is_some() || after.is_some()).then_some(GuardBreach {
        arg_index: z.arg_index,
        before,
        after,
    })
}

/// A sub-buffer `[origin, origin + size)` of `parent`.
pub(crate) fn sub_buffer(
    parent: &Mem,
    access: u64,
    origin: usize,
    size: usize,
) -> Result<Mem, i32> {
    let region = opencl_sys::cl_buffer_region { origin, size };
    // SAFETY: `region` outlives the call; the parent is a live buffer.
    unsafe {
        cl3::memory::create_sub_buffer(
            parent.raw(),
            access,
            opencl_sys::CL_BUFFER_CREATE_TYPE_REGION,
            (&raw const region).cast::<c_void>(),
        )
    }
    .map(Mem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_are_the_buffer_size_within_bounds_and_aligned() {
        assert_eq!(pad_for(1, 128), MIN_PAD);
        assert_eq!(pad_for(10_000, 128), 10_112);
        assert_eq!(pad_for(10_000, 1), 10_000);
        assert_eq!(pad_for(1 << 30, 512), MAX_PAD);
        assert_eq!(pad_for(100, 0), MIN_PAD);
    }

    #[test]
    fn breaches_read_as_distances() {
        let b = GuardBreach {
            arg_index: 1,
            before: Some(4),
            after: None,
        };
        assert_eq!(
            b.to_string(),
            "wrote out of bounds of argument 1: up to 4 bytes before its start"
        );
        let b = GuardBreach {
            before: Some(4),
            after: Some(8),
            ..b
        };
        assert_eq!(
            b.summary("out"),
            "wrote out of bounds of argument 1 (out): before its start and past its end"
        );
        assert_eq!(
            b.describe("out", "int*"),
            "wrote out of bounds of argument 1 (out, int*): up to 4 bytes before its start and 8 bytes past its end"
        );
    }
}
