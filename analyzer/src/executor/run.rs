//! Running a [`LaunchInput`]: its inputs restored, the kernel enqueued, its outputs read in
//! the same trip to the device (judging them: [`super::outputs`]).

use super::cl::{Event, Kernel, Mem, Sampler};
use super::guard::{sub_buffer, GuardBreach, Zone};
use super::input::{image_region, InputArg};
use super::readback::Batch;
use super::{cl_err, BuiltProgram, ExecError, LaunchInput, Session};
use cltrap_capture::MemId;
use opencl_sys::{
    cl_image_desc, cl_image_format, cl_mem, CL_KERNEL_NUM_ARGS, CL_MEM_COPY_HOST_PTR,
    CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, CL_MEM_WRITE_ONLY, CL_PROFILING_COMMAND_END,
    CL_PROFILING_COMMAND_START, CL_TRUE,
};
use std::collections::HashMap;
use std::ffi::{c_void, CString};

/// What [`Session::run_riding`]'s caller enqueues behind a run's kernel and reads, before the
/// run's one wait: given each argument's memory object and the trip's reads.
pub(super) type Behind<'b> =
    &'b mut dyn FnMut(&[Option<&Mem>], &mut Batch<'_>) -> Result<(), ExecError>;

/// A run's outputs, guard breaches, plain buffer objects and the reads that rode along.
type Ran = (RunOutput, Vec<GuardBreach>, Vec<Option<Mem>>, Vec<Vec<u8>>);

/// What [`Session::run_riding`] gives back: the outputs, the plain buffer objects, and the
/// bytes of the reads that rode along, by their numbers.
pub(super) type Riding = (RunOutput, Vec<Option<Mem>>, Vec<Vec<u8>>);

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Contents after the run of every buffer/image argument (extras included, after the
    /// kernel's own), `None` for other arguments. Indexed like `args` then `extras`.
    pub outputs: Vec<Option<Vec<u8>>>,
    /// Device time of the kernel (profiling event), when the driver reports it.
    pub kernel_ns: Option<u64>,
}

pub(super) fn access_flags(flags: u64) -> u64 {
    let f = flags & (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY);
    if f == 0 {
        CL_MEM_READ_WRITE
    } else {
        f
    }
}

pub(super) fn to_sizes(v: &[u64]) -> Vec<usize> {
    v.iter()
        .map(|x| usize::try_from(*x).unwrap_or(usize::MAX))
        .collect()
}

/// The kernel of `names` (a program's `;`-separated `CL_PROGRAM_KERNEL_NAMES`) that the
/// captured name `wanted` means. PoCL 3.1 names the kernels of linked programs `_cl_<name>`,
/// so a capture made there says `_cl_mix` where other drivers say `mix`, and vice versa.
pub fn resolve_kernel_name<'a>(names: &'a str, wanted: &str) -> Option<&'a str> {
    fn bare(n: &str) -> &str {
        n.strip_prefix("_cl_").unwrap_or(n)
    }
    let list: Vec<&str> = names
        .split(';')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    list.iter()
        .find(|n| **n == wanted)
        .or_else(|| list.iter().find(|n| bare(n) == bare(wanted)))
        .copied()
}

impl Session {
    pub(super) fn create_kernel(
        &self,
        program: &BuiltProgram,
        name: &str,
    ) -> Result<Kernel, ExecError> {
        let no_kernel = || ExecError::NoKernel {
            kernel: name.to_string(),
        };
        let create = |n: &str| -> Result<Kernel, i32> {
            let c = CString::new(n).map_err(|_| opencl_sys::CL_INVALID_KERNEL_NAME)?;
            cl3::kernel::create_kernel(program.program.raw(), &c).map(Kernel)
        };
        match create(name) {
            Ok(k) => Ok(k),
            Err(opencl_sys::CL_INVALID_KERNEL_NAME) => {
                let names = cl3::program::get_program_data(
                    program.program.raw(),
                    opencl_sys::CL_PROGRAM_KERNEL_NAMES,
                )
                .map(super::cl::info_string)
                .unwrap_or_default();
                let other = resolve_kernel_name(&names, name)
                    .filter(|n| *n != name)
                    .ok_or_else(no_kernel)?;
                create(other).map_err(|c| cl_err(format!("clCreateKernel({other})"))(c))
            }
            Err(c) => Err(cl_err(format!("clCreateKernel({name})"))(c)),
        }
    }

    pub(super) fn create_memory(&self, arg: &InputArg, index: usize) -> Result<Mem, ExecError> {
        let what = format!("creating the memory object of argument {index}");
        match arg {
            InputArg::Buffer { flags, bytes, .. } => {
                let one = [0u8; 1];
                let host: &[u8] = if bytes.is_empty() { &one } else { bytes };
                // SAFETY: `host` outlives the call; COPY_HOST_PTR only reads it (the pointer
                // is `*mut` in the C signature only), so no copy of the contents is made here.
                let m = unsafe {
                    cl3::memory::create_buffer(
                        self.context.raw(),
                        access_flags(*flags) | CL_MEM_COPY_HOST_PTR,
                        host.len(),
                        host.as_ptr().cast_mut().cast::<c_void>(),
                    )
                }
                .map_err(cl_err(what))?;
                Ok(Mem(m))
            }
            InputArg::Image {
                flags,
                image,
                bytes,
                ..
            } => {
                if image.image_type == 0x10F6 {
                    return Err(ExecError::NotReplayable(format!(
                        "argument {index} is a 1D image backed by a buffer"
                    )));
                }
                let (w, h, d) = image_region(image);
                let expected = w * h * d * image.element_size;
                if bytes.len() as u64 != expected {
                    return Err(ExecError::NotReplayable(format!(
                        "argument {index}: the recorded image holds {} bytes, its description needs {expected}",
                        bytes.len()
                    )));
                }
                let format = cl_image_format {
                    image_channel_order: image.channel_order,
                    image_channel_data_type: image.channel_data_type,
                };
                // SAFETY: an all-zero cl_image_desc is valid (pitches 0, no buffer).
                let mut desc: cl_image_desc = unsafe { std::mem::zeroed() };
                desc.image_type = image.image_type;
                desc.image_width = image.width.max(1) as usize;
                desc.image_height = image.height as usize;
                desc.image_depth = image.depth as usize;
                desc.image_array_size = image.array_size as usize;
                // SAFETY: format/desc/bytes outlive the call; COPY_HOST_PTR only reads
                // `bytes`, which is exactly the tightly packed size checked above.
                let m = unsafe {
                    cl3::memory::create_image(
                        self.context.raw(),
                        access_flags(*flags) | CL_MEM_COPY_HOST_PTR,
                        &format,
                        &desc,
                        bytes.as_ptr().cast_mut().cast::<c_void>(),
                    )
                }
                .map_err(cl_err(what))?;
                Ok(Mem(m))
            }
            _ => Err(ExecError::NotReplayable(format!(
                "argument {index} is not a memory object"
            ))),
        }
    }

    /// Reads `out.len()` bytes of buffer `mem` from `offset` (blocking); `what` names the
    /// read in the error.
    pub(crate) fn read_buffer(
        &self,
        mem: &Mem,
        offset: usize,
        out: &mut [u8],
        what: String,
    ) -> Result<(), ExecError> {
        // SAFETY: `out` has exactly the bytes read.
        unsafe { self.read_raw(mem, offset, out.as_mut_ptr(), out.len(), what) }
    }

    /// Reads `len` bytes of buffer `mem` from `offset` to `dst` (blocking).
    ///
    /// # Safety
    /// `dst` must be valid for writes of `len` bytes; they are all written when this
    /// returns `Ok`.
    pub(super) unsafe fn read_raw(
        &self,
        mem: &Mem,
        offset: usize,
        dst: *mut u8,
        len: usize,
        what: String,
    ) -> Result<(), ExecError> {
        self.note_wait();
        // SAFETY: the caller guarantees `dst` holds `len` writable bytes; the read is
        // blocking, so it is done with them when this returns.
        let ev = unsafe {
            cl3::command_queue::enqueue_read_buffer(
                self.queue.raw(),
                mem.raw(),
                CL_TRUE,
                offset,
                len,
                dst.cast::<c_void>(),
                0,
                std::ptr::null(),
            )
        }
        .map_err(cl_err(what))?;
        drop(Event(ev));
        Ok(())
    }

    /// A sampler in the session's context for argument `i` (a replayed or resident launch's
    /// recorded sampler).
    pub(super) fn create_sampler(
        &self,
        i: usize,
        normalized_coords: bool,
        addressing_mode: u32,
        filter_mode: u32,
    ) -> Result<Sampler, ExecError> {
        #[allow(deprecated)]
        let raw = cl3::sampler::create_sampler(
            self.context.raw(),
            u32::from(normalized_coords),
            addressing_mode,
            filter_mode,
        )
        .map_err(cl_err(format!("creating the sampler of argument {i}")))?;
        Ok(Sampler(raw))
    }

    /// Runs `input` once with `extras` appended after its arguments, and returns every memory
    /// argument's contents afterwards plus the kernel's device time. All OpenCL objects of
    /// the run are released before this returns.
    pub fn run(
        &self,
        program: &BuiltProgram,
        input: &LaunchInput,
        extras: &[InputArg],
    ) -> Result<RunOutput, ExecError> {
        self.run_with(
            program,
            input,
            extras,
            false,
            &mut |_, _| None,
            &|_| true,
            &mut |_, _| Ok(()),
            &mut Vec::new(),
        )
        .map(|(out, ..)| out)
    }

    /// [`Session::run`] of a launch (no extras) whose buffers may already be on the device:
    /// `bind(i, arg)` may hand over a buffer that holds exactly `arg`'s contents (an earlier
    /// run's output, verified), which argument `i` then uses instead of a new object
    /// initialised from the host; `read(i)` says whether argument `i`'s contents after the
    /// run are read back (`None` in the outputs otherwise). Returns, besides the outputs,
    /// the plain buffer object of every buffer argument (`None` for any other argument, and
    /// for all but the first argument sharing one object), so a next run can be handed them.
    /// Contents are read back into allocations taken from `spare` where one is large
    /// enough (a replay hands back its last launch's input buffers).
    /// Why: an in-order replay hands each launch's verified outputs to the next launch that
    /// reads them, uploading nothing ([`super::chain`]).
    pub fn run_bound(
        &self,
        program: &BuiltProgram,
        input: &LaunchInput,
        bind: &mut dyn FnMut(usize, &InputArg) -> Option<Mem>,
        read: &dyn Fn(usize) -> bool,
        spare: &mut Vec<Vec<u8>>,
    ) -> Result<(RunOutput, Vec<Option<Mem>>), ExecError> {
        self.run_riding(program, input, bind, read, &mut |_, _| Ok(()), spare)
            .map(|(out, kept, _)| (out, kept))
    }

    /// [`Session::run_bound`] with more work in the run's one trip to the device: after the
    /// kernel and the reads of its outputs are enqueued, and before the single wait for them,
    /// `behind(objects, trip)` is given each argument's memory object (`None` for other
    /// arguments) and may enqueue commands on them, and reads into `trip`
    /// ([`Batch::extra`]), whose bytes come back third, by their numbers. Why: a replay
    /// digests its outputs on the device ([`super::devverify`]) behind the kernel, so the
    /// host waits for the device once per launch, not once for the kernel and again for the
    /// digests.
    pub(super) fn run_riding(
        &self,
        program: &BuiltProgram,
        input: &LaunchInput,
        bind: &mut dyn FnMut(usize, &InputArg) -> Option<Mem>,
        read: &dyn Fn(usize) -> bool,
        behind: Behind<'_>,
        spare: &mut Vec<Vec<u8>>,
    ) -> Result<Riding, ExecError> {
        self.run_with(program, input, &[], false, bind, read, behind, spare)
            .map(|(out, _, kept, extras)| (out, kept, extras))
    }

    /// [`Session::run`] with a guard zone around every buffer of `input` (not `extras`): the
    /// run's outputs plus every write out of bounds the zones caught (see [`super::guard`]).
    /// For kernels that may be wrong on purpose (mutants): their stray writes are caught
    /// instead of corrupting this process or the device's other allocations.
    pub fn run_guarded(
        &self,
        program: &BuiltProgram,
        input: &LaunchInput,
        extras: &[InputArg],
    ) -> Result<(RunOutput, Vec<GuardBreach>), ExecError> {
        self.run_with(
            program,
            input,
            extras,
            true,
            &mut |_, _| None,
            &|_| true,
            &mut |_, _| Ok(()),
            &mut Vec::new(),
        )
        .map(|(out, breaches, ..)| (out, breaches))
    }

    /// Enqueues `kernel` over the given NDRange without waiting: its event.
    pub(super) fn enqueue_kernel(
        &self,
        kernel: &Kernel,
        name: &str,
        work_dim: u32,
        global_offset: Option<&[u64]>,
        global_size: &[u64],
        local_size: Option<&[u64]>,
    ) -> Result<Event, ExecError> {
        let global = to_sizes(global_size);
        let offset = global_offset.map(to_sizes);
        let local = local_size.map(to_sizes);
        // Every NDRange a driver is handed keeps clEnqueueNDRangeKernel's rules, whoever
        // made it (a capture's records are checked when read; fuzzers make their own).
        cltrap_capture::validate::check_geometry(work_dim, global_offset, global_size, local_size)
            .map_err(|why| ExecError::Geometry(format!("kernel {name}: {why}")))?;
        // SAFETY: the size arrays have exactly work_dim entries (checked) and outlive the call.
        Ok(Event(
            unsafe {
                cl3::command_queue::enqueue_nd_range_kernel(
                    self.queue.raw(),
                    kernel.raw(),
                    work_dim,
                    offset.as_ref().map_or(std::ptr::null(), |o| o.as_ptr()),
                    global.as_ptr(),
                    local.as_ref().map_or(std::ptr::null(), |l| l.as_ptr()),
                    0,
                    std::ptr::null(),
                )
            }
            .map_err(cl_err(format!("clEnqueueNDRangeKernel({name})")))?,
        ))
    }

    /// Waits for the kernel of `ev`: [`ExecError::Execution`] when it failed on the device.
    pub(super) fn wait_kernel(&self, ev: &Event) -> Result<(), ExecError> {
        self.note_wait();
        cl3::event::wait_for_events(&[ev.raw()]).map_err(super::fault::failed)?;
        if let Some(s) = ev.status() {
            if s < 0 {
                return Err(super::fault::failed(s));
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn run_with(
        &self,
        program: &BuiltProgram,
        input: &LaunchInput,
        extras: &[InputArg],
        guard: bool,
        bind: &mut dyn FnMut(usize, &InputArg) -> Option<Mem>,
        read: &dyn Fn(usize) -> bool,
        behind: Behind<'_>,
        spare: &mut Vec<Vec<u8>>,
    ) -> Result<Ran, ExecError> {
        let ns = |t: std::time::Instant| t.elapsed().as_nanos() as u64;
        let started = std::time::Instant::now();
        let kernel = self.create_kernel(program, &input.kernel)?;
        let all: Vec<&InputArg> = input.args.iter().chain(extras.iter()).collect();
        let num_args = cl3::kernel::get_kernel_data(kernel.raw(), CL_KERNEL_NUM_ARGS)
            .ok()
            .and_then(|b| {
                b.get(..4)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            });
        if let Some(n) = num_args {
            if n as usize != all.len() {
                return Err(ExecError::ArgCount {
                    kernel: input.kernel.clone(),
                    expected: n,
                    got: all.len(),
                });
            }
        }

        self.note_split(|s| s.kernel_ns += ns(started));
        let started = std::time::Instant::now();
        // Memory objects: one per distinct mem id (aliasing), one per anonymous argument.
        let mut shared: HashMap<MemId, usize> = HashMap::new();
        let mut mems: Vec<Mem> = Vec::new();
        let mut mem_of: Vec<Option<usize>> = Vec::with_capacity(all.len());
        let mut samplers: Vec<Sampler> = Vec::new();
        // Guard zones (`guard`): zone index of a slot whose memory is a zoned view.
        let mut zones: Vec<Zone> = Vec::new();
        let mut zone_of: HashMap<usize, usize> = HashMap::new();
        // Sizes of the objects bound by `bind`, by slot.
        let mut bound_len: HashMap<usize, usize> = HashMap::new();
        for (i, a) in all.iter().enumerate() {
            let id = match a {
                InputArg::Buffer { mem, .. } | InputArg::Image { mem, .. } => *mem,
                _ => {
                    mem_of.push(None);
                    continue;
                }
            };
            let slot = match id.and_then(|m| shared.get(&m).copied()) {
                Some(s) => s,
                None => {
                    let zoned = match a {
                        InputArg::Buffer { flags, bytes, .. } if guard && i < input.args.len() => {
                            self.zoned_buffer(access_flags(*flags), bytes, i)
                        }
                        _ => None,
                    };
                    let bound = match a {
                        InputArg::Buffer { .. } if !guard && i < input.args.len() => bind(i, a),
                        _ => None,
                    };
                    match (zoned, bound) {
                        (Some((zone, view)), _) => {
                            mems.push(view);
                            zones.push(zone);
                            zone_of.insert(mems.len() - 1, zones.len() - 1);
                        }
                        (None, Some(m)) => {
                            // A bound object's host copy may be a placeholder (its contents
                            // never came to the host: [`super::Chain`]); its size is the
                            // object's own.
                            if let Ok(size) =
                                cl3::memory::get_mem_object_info(m.raw(), opencl_sys::CL_MEM_SIZE)
                            {
                                bound_len.insert(mems.len(), size.to_size());
                            }
                            mems.push(m)
                        }
                        (None, None) => mems.push(self.create_memory(a, i)?),
                    }
                    let s = mems.len() - 1;
                    if let Some(m) = id {
                        shared.insert(m, s);
                    }
                    s
                }
            };
            mem_of.push(Some(slot));
        }
        // Sub-buffers second: their parents exist now.
        for (i, a) in all.iter().enumerate() {
            let InputArg::SubBuffer {
                mem,
                parent,
                origin,
                size,
                flags,
            } = a
            else {
                continue;
            };
            if let Some(s) = mem.and_then(|m| shared.get(&m).copied()) {
                mem_of[i] = Some(s);
                continue;
            }
            let parent_slot = shared.get(parent).copied().ok_or_else(|| {
                ExecError::NotReplayable(format!(
                    "argument {i} is a sub-buffer of #{parent}, which is not an argument"
                ))
            })?;
            // A zoned parent is itself a view: the sub-buffer is cut from its allocation.
            let (whole, shift) = match zone_of.get(&parent_slot) {
                Some(z) => (&zones[*z].outer, zones[*z].pad),
                None => (&mems[parent_slot], 0),
            };
            let sub = sub_buffer(
                whole,
                access_flags(*flags),
                shift + *origin as usize,
                *size as usize,
            )
            .map_err(|c| match c {
                opencl_sys::CL_MISALIGNED_SUB_BUFFER_OFFSET => ExecError::NotReplayable(format!(
                    "argument {i}: sub-buffer offset {origin} is not aligned for {}",
                    self.info().name
                )),
                c => cl_err(format!("creating the sub-buffer of argument {i}"))(c),
            })?;
            mems.push(sub);
            let s = mems.len() - 1;
            if let Some(m) = mem {
                shared.insert(*m, s);
            }
            mem_of[i] = Some(s);
        }

        self.note_split(|s| s.objects_ns += ns(started));
        let started = std::time::Instant::now();
        let set_err = |i: usize| {
            let kernel = input.kernel.clone();
            move |c: i32| ExecError::SetArg {
                kernel,
                index: i,
                code: super::cl::error_name(c),
            }
        };
        for (i, a) in all.iter().enumerate() {
            let idx = i as u32;
            // SAFETY (all arms): pointers passed to clSetKernelArg point at values that live
            // until the call returns; OpenCL copies them.
            match a {
                InputArg::Scalar(bytes) => unsafe {
                    cl3::kernel::set_kernel_arg(
                        kernel.raw(),
                        idx,
                        bytes.len(),
                        bytes.as_ptr().cast::<c_void>(),
                    )
                }
                .map_err(set_err(i))?,
                InputArg::Local(size) => unsafe {
                    cl3::kernel::set_kernel_arg(kernel.raw(), idx, *size as usize, std::ptr::null())
                }
                .map_err(set_err(i))?,
                InputArg::NullBuffer => {
                    let null: cl_mem = std::ptr::null_mut();
                    unsafe {
                        cl3::kernel::set_kernel_arg(
                            kernel.raw(),
                            idx,
                            std::mem::size_of::<cl_mem>(),
                            (&raw const null).cast::<c_void>(),
                        )
                    }
                    .map_err(set_err(i))?
                }
                InputArg::Buffer { .. } | InputArg::SubBuffer { .. } | InputArg::Image { .. } => {
                    let raw = mem_of[i]
                        .map(|s| mems[s].raw())
                        .unwrap_or(std::ptr::null_mut());
                    unsafe {
                        cl3::kernel::set_kernel_arg(
                            kernel.raw(),
                            idx,
                            std::mem::size_of::<cl_mem>(),
                            (&raw const raw).cast::<c_void>(),
                        )
                    }
                    .map_err(set_err(i))?
                }
                InputArg::Sampler {
                    normalized_coords,
                    addressing_mode,
                    filter_mode,
                } => {
                    let s =
                        self.create_sampler(i, *normalized_coords, *addressing_mode, *filter_mode)?;
                    let raw = s.raw();
                    samplers.push(s);
                    unsafe {
                        cl3::kernel::set_kernel_arg(
                            kernel.raw(),
                            idx,
                            std::mem::size_of_val(&raw),
                            (&raw const raw).cast::<c_void>(),
                        )
                    }
                    .map_err(set_err(i))?
                }
            }
        }

        let ev = self.enqueue_kernel(
            &kernel,
            &input.kernel,
            input.work_dim,
            input.global_offset.as_deref(),
            &input.global_size,
            input.local_size.as_deref(),
        )?;
        // An object is read once, when any argument using it is to be read, in the kernel's
        // trip to the device ([`super::readback`]).
        let mut wanted: HashMap<usize, bool> = HashMap::new();
        for (i, slot) in mem_of.iter().enumerate() {
            if let Some(slot) = slot {
                *wanted.entry(*slot).or_default() |= i >= input.args.len() || read(i);
            }
        }
        let mut batch = Batch::new(self);
        let mut batched: Vec<usize> = Vec::new();
        for (i, a) in all.iter().enumerate() {
            let Some(slot) = mem_of[i] else { continue };
            if wanted.get(&slot) != Some(&true) || batched.contains(&slot) {
                continue;
            }
            batched.push(slot);
            match a {
                InputArg::Buffer { bytes, .. } => {
                    let len = bound_len.get(&slot).copied().unwrap_or(bytes.len());
                    batch.read(slot, &mems[slot], len, i, spare)?;
                }
                InputArg::SubBuffer { size, .. } => {
                    batch.read(slot, &mems[slot], *size as usize, i, spare)?;
                }
                InputArg::Image { image, bytes, .. } => {
                    let (w, h, d) = image_region(image);
                    let region = [w as usize, h as usize, d as usize];
                    batch.read_image(slot, &mems[slot], region, bytes.len(), i)?;
                }
                _ => {}
            }
        }
        let objects_of: Vec<Option<&Mem>> = mem_of.iter().map(|s| s.map(|s| &mems[s])).collect();
        behind(&objects_of, &mut batch)?;
        self.note_split(|s| s.enqueue_ns += ns(started));
        let started = std::time::Instant::now();
        // One wait for the kernel, its reads and whatever rode along.
        let landed = batch.wait(Some(&ev))?;
        self.note_split(|s| s.wait_ns += ns(started));
        let stamp = |what| {
            cl3::event::get_event_profiling_data(ev.raw(), what)
                .ok()
                .and_then(|b| {
                    b.get(..8)
                        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                })
        };
        let kernel_ns = match (
            stamp(CL_PROFILING_COMMAND_START),
            stamp(CL_PROFILING_COMMAND_END),
        ) {
            (Some(s), Some(e)) if e >= s => Some(e - s),
            _ => None,
        };

        let mut read: HashMap<usize, Vec<u8>> = landed.objects.into_iter().collect();
        // Each object's contents go to the arguments that share it: copies for all but the
        // last, which takes them.
        let mut outputs = Vec::with_capacity(all.len());
        for i in 0..all.len() {
            outputs.push(mem_of[i].and_then(|slot| {
                if mem_of[i + 1..].contains(&Some(slot)) {
                    read.get(&slot).cloned()
                } else {
                    read.remove(&slot)
                }
            }));
        }
        let breaches = self.breaches(&zones)?;
        // The plain buffers of the launch's own arguments, for a next run to bind.
        let mut objects: Vec<Option<Mem>> = mems.into_iter().map(Some).collect();
        let kept = (0..input.args.len())
            .map(|i| match (&input.args[i], mem_of[i]) {
                (InputArg::Buffer { .. }, Some(slot)) if !zone_of.contains_key(&slot) => {
                    objects.get_mut(slot).and_then(Option::take)
                }
                _ => None,
            })
            .collect();
        Ok((
            RunOutput { outputs, kernel_ns },
            breaches,
            kept,
            landed.extras,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linked_kernel_names_match_across_drivers() {
        assert_eq!(
            resolve_kernel_name("vadd;_cl_mix", "_cl_mix"),
            Some("_cl_mix")
        );
        assert_eq!(resolve_kernel_name("vadd;_cl_mix", "mix"), Some("_cl_mix"));
        assert_eq!(resolve_kernel_name("vadd;mix", "_cl_mix"), Some("mix"));
        assert_eq!(resolve_kernel_name("vadd;mix", "mixer"), None);
        assert_eq!(resolve_kernel_name("", "mix"), None);
    }
}
