//! The executor's `dd128` engine: digests of a run's output buffers computed on the device.
//!
//! Why: a long capture keeps most outputs only as their `dd128` digest (computed on the
//! device by the shim, [`cltrap_capture::devdigest`]). Judging such an output by reading the
//! whole buffer back and digesting it on the host costs a bus transfer and a host digest per
//! output per launch — on a GPU most of a replay's time, while the kernel itself takes a few
//! microseconds. The same digest kernel run in the session's queue over the output reads at
//! most [`SLOT_BYTES`] of per-group partials back per output; the host finishes them with
//! [`dd128_from_partials`] and compares. Whoever uses it ([`super::Chain`]) reads an output
//! back whole only where the digest differs (to report the difference) or where its bytes
//! are needed on the host.
//!
//! The digests ride in the launch's own trip to the device: [`Engine::enqueue_digests`]
//! enqueues them, and the reads of their partials, behind the kernel and the reads of its
//! other outputs ([`super::readback::Batch`]), and the host waits once for all of it — on a
//! GPU a second wait per launch (a submission and a wake-up) costs more than a small kernel.
//!
//! One [`Engine`] per [`super::Chain`] (one replay on one session), built at its first use:
//! the program, its kernel (its arguments set from one thread: a chain is not `Sync`), and a
//! buffer of [`SLOTS`] partial slots.
//!
//! Where it is used ([`Mode`], `CLTRAP_REPLAY_DEVICE_DIGEST=auto|on|off`, default `auto`),
//! following the shim's `CLTRAP_DEVICE_DIGEST`:
//! - `auto`: on every device but a CPU one, whose "device memory" is host memory (reading
//!   back is a copy there, and the host digest is as fast as the device's), and there for
//!   outputs of at least [`AUTO_MIN_BYTES`] (a smaller one is read back in the kernel's trip
//!   for about what enqueueing a digest kernel costs);
//! - `on`: on every device, for every output (the tests force it on PoCL's CPU device);
//! - `off`: never.
//!
//! A device where the program does not build, or that is not little-endian (the kernel reads
//! words in the host's order), has no engine: outputs are read back as before, and the chain
//! says why ([`DeviceVerification::Unavailable`]) for its command to say once (nothing here
//! prints). `CLTRAP_TEST_DIGEST_BUILD=fail` breaks the build on purpose, for the test of that
//! path.

use super::cl::{Kernel, Mem};
use super::readback::Batch;
use super::{cl_err, BuiltProgram, ExecError, Session};
use cltrap_capture::devdigest::{
    dd128_from_partials, groups_for, GROUP_SIZE, KERNEL_NAME, KERNEL_SOURCE, SLOT_BYTES,
};
use opencl_sys::{CL_KERNEL_WORK_GROUP_SIZE, CL_MEM_READ_WRITE};
use std::ffi::c_void;

/// Digests enqueued before their partials are read back together (one slot each).
pub const SLOTS: usize = 16;
/// The environment variable that chooses where outputs are verified.
pub const ENV: &str = "CLTRAP_REPLAY_DEVICE_DIGEST";

/// Where a replay verifies outputs recorded as `dd128` digests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// On the device, except on CPU devices (reading back is a host copy there).
    Auto,
    /// On the device, whatever it is.
    On,
    /// On the host, from the bytes read back.
    Off,
}

impl Mode {
    /// The mode `CLTRAP_REPLAY_DEVICE_DIGEST` asks for (unset: [`Mode::Auto`]); a value that
    /// is none of `auto`, `on`, `off` is an error in one sentence.
    pub fn from_env() -> Result<Mode, String> {
        let v = std::env::var(ENV).unwrap_or_default();
        match v.trim() {
            "" | "auto" => Ok(Mode::Auto),
            "on" | "1" | "true" => Ok(Mode::On),
            "off" | "0" | "false" => Ok(Mode::Off),
            other => Err(format!("{ENV}={other:?} is not one of auto, on or off")),
        }
    }
}

/// Whether a session verifies `dd128` outputs on its device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceVerification {
    /// Not asked for here ([`Mode::Off`], or [`Mode::Auto`] on a CPU device).
    Off,
    /// The engine is built: outputs are verified on the device.
    On,
    /// Asked for, but the engine could not be made (the reason): outputs are read back.
    Unavailable(String),
}

/// The digest program of one session, its kernel and its partials buffer.
pub(super) struct Engine {
    // Field order: the kernel and buffer are released before the program.
    kernel: Kernel,
    partials: Mem,
    _program: BuiltProgram,
    /// Work-items per group: a power of two the kernel allows on this device.
    group: usize,
    /// Outputs smaller than this are read back ([`AUTO_MIN_BYTES`] under `auto`, 0 under `on`).
    pub(super) min_bytes: usize,
}

/// Digests enqueued in a trip to the device ([`Engine::enqueue_digests`]), finished from
/// their partials once the trip has landed.
pub(super) struct Digesting {
    /// Per read of partials: its number among the trip's extra reads, and the lengths
    /// digested into its slots, in slot order.
    reads: Vec<(usize, Vec<usize>)>,
    /// Work-items per group of the kernel that made them.
    group: usize,
}

impl Digesting {
    /// The digests, in the order of the items enqueued, from the trip's extra reads
    /// ([`super::readback::Landed::extras`]). A read missing or short gives no digest for
    /// its items and those after them (the caller reads those outputs back instead).
    pub(super) fn finish(&self, extras: &[Vec<u8>]) -> Vec<String> {
        let mut found = Vec::new();
        for (n, lens) in &self.reads {
            for (slot, len) in lens.iter().enumerate() {
                let groups = groups_for(*len as u64, self.group);
                let at = slot * SLOT_BYTES;
                let Some(partials) = extras.get(*n).and_then(|p| p.get(at..at + groups * 16))
                else {
                    return found;
                };
                found.push(dd128_from_partials(partials, *len as u64));
            }
        }
        found
    }
}

/// Outputs smaller than this are read back under `auto`: reading a few kilobytes back in the
/// kernel's trip costs about what enqueueing the digest kernel does (the shim's threshold).
pub const AUTO_MIN_BYTES: usize = 64 << 10;

/// The engine of a session, or why there is none, decided at the session's first use.
pub(super) enum State {
    /// Not wanted on this device.
    Off,
    /// Built.
    Ready(Engine),
    /// Wanted, not available (why).
    Unavailable(String),
}

impl State {
    /// What the settings and `session`'s device give (builds the engine where wanted).
    pub(super) fn of(session: &Session) -> State {
        let mode = Mode::from_env().unwrap_or(Mode::Auto);
        if mode == Mode::Off || (mode == Mode::Auto && session.runs_in_this_process()) {
            return State::Off;
        }
        let broken = std::env::var("CLTRAP_TEST_DIGEST_BUILD").is_ok_and(|v| v.trim() == "fail");
        match Engine::build(session, broken) {
            Ok(mut e) => {
                e.min_bytes = if mode == Mode::On { 0 } else { AUTO_MIN_BYTES };
                State::Ready(e)
            }
            Err(why) => State::Unavailable(why),
        }
    }

    /// The engine, when there is one.
    pub(super) fn engine(&self) -> Option<&Engine> {
        match self {
            State::Ready(e) => Some(e),
            _ => None,
        }
    }

    /// The public view of this state.
    pub(super) fn verification(&self) -> DeviceVerification {
        match self {
            State::Off => DeviceVerification::Off,
            State::Ready(_) => DeviceVerification::On,
            State::Unavailable(why) => DeviceVerification::Unavailable(why.clone()),
        }
    }
}

impl Engine {
    /// Builds the digest program on `session`'s device (`broken`: with a line that cannot
    /// compile), its kernel and its partials buffer.
    fn build(session: &Session, broken: bool) -> Result<Engine, String> {
        let little =
            cl3::device::get_device_info(session.device, opencl_sys::CL_DEVICE_ENDIAN_LITTLE)
                .map(|v| v.to_uint() != 0)
                .unwrap_or(false);
        if !little {
            return Err("the device is not little-endian".into());
        }
        let source = if broken {
            format!("{KERNEL_SOURCE}\n#error CLTRAP_TEST_DIGEST_BUILD=fail\n")
        } else {
            KERNEL_SOURCE.to_string()
        };
        let program = session
            .build_source(&source, "")
            .map_err(|_| "its program did not build".to_string())?;
        let kernel = session
            .create_kernel(&program, KERNEL_NAME)
            .map_err(|e| e.to_string())?;
        let allowed = cl3::kernel::get_kernel_work_group_info(
            kernel.raw(),
            session.device,
            CL_KERNEL_WORK_GROUP_SIZE,
        )
        .map(|v| v.to_size())
        .unwrap_or(1)
        .max(1);
        let mut group = GROUP_SIZE;
        while group > allowed {
            group /= 2;
        }
        // SAFETY: a buffer of ours in the session's live context, no host pointer.
        let partials = unsafe {
            cl3::memory::create_buffer(
                session.context.raw(),
                CL_MEM_READ_WRITE,
                SLOTS * SLOT_BYTES,
                std::ptr::null_mut(),
            )
        }
        .map(Mem)
        .map_err(|c| {
            format!(
                "its buffer could not be made ({})",
                super::cl::error_name(c)
            )
        })?;
        Ok(Engine {
            kernel,
            partials,
            _program: program,
            group: group.max(1),
            min_bytes: 0,
        })
    }

    /// Enqueues the `dd128` digests of the first `len` bytes of each buffer of `items` in
    /// `session`'s queue behind whatever was enqueued before (the kernel that wrote them, its
    /// reads), and the reads of their partials into `trip` (at most [`SLOT_BYTES`] per item),
    /// without waiting: the caller waits once for the whole trip, then has the digests from
    /// [`Digesting::finish`]. More items than [`SLOTS`] reuse the slots: the in-order queue
    /// runs a batch's partials read before the next batch's kernels overwrite them.
    pub(super) fn enqueue_digests(
        &self,
        session: &Session,
        items: &[(&Mem, usize)],
        trip: &mut Batch<'_>,
    ) -> Result<Digesting, ExecError> {
        let mut reads = Vec::with_capacity(items.len().div_ceil(SLOTS));
        for batch in items.chunks(SLOTS) {
            for (slot, (mem, len)) in batch.iter().enumerate() {
                self.enqueue(session, mem, *len, slot)?;
            }
            let n = trip.extra(
                &self.partials,
                batch.len() * SLOT_BYTES,
                "reading the device digests back",
            )?;
            reads.push((n, batch.iter().map(|(_, len)| *len).collect()));
        }
        Ok(Digesting {
            reads,
            group: self.group,
        })
    }

    /// Enqueues the digest of `len` bytes of `mem` into partial slot `slot`.
    fn enqueue(
        &self,
        session: &Session,
        mem: &Mem,
        len: usize,
        slot: usize,
    ) -> Result<(), ExecError> {
        let groups = groups_for(len as u64, self.group);
        let raw = mem.raw();
        let out = self.partials.raw();
        let len64 = len as u64;
        let slot32 = slot as u32;
        let k = self.kernel.raw();
        let set = |i: u32, size: usize, p: *const c_void| {
            // SAFETY: `p` points at a value of `size` bytes (or is NULL for the local
            // argument) that lives until the call returns; OpenCL copies it.
            unsafe { cl3::kernel::set_kernel_arg(k, i, size, p) }
                .map_err(cl_err(format!("setting argument {i} of the digest kernel")))
        };
        set(0, size_of::<opencl_sys::cl_mem>(), (&raw const raw).cast())?;
        set(1, size_of::<u64>(), (&raw const len64).cast())?;
        set(2, size_of::<opencl_sys::cl_mem>(), (&raw const out).cast())?;
        set(3, size_of::<u32>(), (&raw const slot32).cast())?;
        set(4, self.group * 16, std::ptr::null())?;
        let global = (groups * self.group) as u64;
        let local = self.group as u64;
        session
            .enqueue_kernel(
                &self.kernel,
                KERNEL_NAME,
                1,
                None,
                &[global],
                Some(&[local]),
            )
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{DeviceSelector, Session};
    use super::*;
    use cltrap_capture::devdigest::dd128;

    /// The engine's digests are the host's `dd128` of the same bytes, for sizes that fill
    /// one group, many, more than [`cltrap_capture::devdigest::MAX_GROUPS`] (several blocks
    /// per work-item) and a short last block; more items than slots reuse the slots within
    /// the one trip waited for.
    #[test]
    fn device_digests_are_the_host_dd128_of_the_same_bytes() {
        let Ok(session) = Session::open(&DeviceSelector::default()) else {
            return;
        };
        let engine = Engine::build(&session, false).expect("the digest program builds");
        let sizes = [1usize, 15, 16, 4096, 65_537, 1 << 20, 3 * (1 << 20) + 5];
        let contents: Vec<Vec<u8>> = (0..SLOTS + 3)
            .map(|k| {
                let n = sizes[k % sizes.len()];
                (0..n)
                    .map(|i| (i.wrapping_mul(2_654_435_761) >> (k % 7)) as u8)
                    .collect()
            })
            .collect();
        let mems: Vec<Mem> = contents
            .iter()
            .map(|c| {
                // SAFETY: a buffer of ours initialised from `c`, copied at creation.
                let m = unsafe {
                    cl3::memory::create_buffer(
                        session.context.raw(),
                        CL_MEM_READ_WRITE | opencl_sys::CL_MEM_COPY_HOST_PTR,
                        c.len(),
                        c.as_ptr() as *mut c_void,
                    )
                }
                .expect("buffer");
                Mem(m)
            })
            .collect();
        let items: Vec<(&Mem, usize)> = mems
            .iter()
            .zip(&contents)
            .map(|(m, c)| (m, c.len()))
            .collect();
        let waits = session.device_waits();
        let mut trip = Batch::new(&session);
        let digesting = engine
            .enqueue_digests(&session, &items, &mut trip)
            .expect("digests enqueued");
        let landed = trip.wait(None).expect("digests read back");
        let got = digesting.finish(&landed.extras);
        let want: Vec<String> = contents.iter().map(|c| dd128(c)).collect();
        assert_eq!(got, want);
        // Every batch of slots in one wait.
        assert_eq!(session.device_waits() - waits, 1);
        // A broken build is refused with a reason.
        assert!(Engine::build(&session, true).is_err());
    }
}
