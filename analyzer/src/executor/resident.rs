//! A launch kept on the device between runs, for fuzzing large captured launches fast.
//!
//! Why: a captured launch of a real application carries megabytes of buffers. Creating and
//! uploading them for every execution (what [`Session::run`] does) costs more than running a
//! few of its work-groups. A [`Resident`] launch creates its memory objects once; each run
//! then says, per buffer, which *version* of its contents it wants (a content the caller
//! defined once, kept on the device as a pristine copy) plus a few *patches* (the bytes a
//! mutation changed), and only that is written:
//!
//! - a buffer the kernel may write and read (`restore`) is copied back from its pristine
//!   version on the device (`clEnqueueCopyBuffer`, no host upload) before every run;
//! - any other buffer is copied from its version only when the version changes; otherwise
//!   only the ranges the previous run patched are copied back, and the new patches written.
//!   (A buffer the kernel only writes needs nothing more: it cannot read what it left.)
//! - images are never patched: a read-only image is the version itself, a written one a copy.
//!
//! Buffers run between guard zones (as [`Session::run_guarded`]) with pads of at most
//! [`RESIDENT_PAD`] bytes, checked after every run and poisoned again after a breach.
//! A run returns the first bytes of its first extra argument (the coverage counters) only.

use super::cl::{Event, Kernel, Mem, Sampler};
use super::guard::{GuardBreach, Zone};
use super::input::{image_region, InputArg};
use super::run::access_flags;
use super::{cl_err, BuiltProgram, ExecError, Session};
use cltrap_capture::ImageRecord;
use opencl_sys::{cl_mem, CL_FALSE};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::ffi::c_void;

/// The largest guard-zone pad of a resident buffer: the pads are read after every run, so
/// they are kept small (a full run's pads are the buffer's size, up to 16 MiB).
pub const RESIDENT_PAD: usize = 64 << 10;

/// Byte contents as a hex string in JSON (they travel to fuzz workers).
mod hexbytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&cltrap_capture::hex::encode(b))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        cltrap_capture::hex::decode(&text).ok_or_else(|| serde::de::Error::custom("bad hex"))
    }
}

/// How a kernel uses an image argument, from its access qualifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageUse {
    /// `read_only` (the default): the kernel never changes it.
    Read,
    /// `write_only`: the kernel never reads it.
    Write,
    /// `read_write`.
    ReadWrite,
}

/// What one argument of a resident launch is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotLayout {
    /// A by-value argument or a `__local` size: given by every run.
    Value,
    /// A NULL buffer.
    Null,
    /// A buffer of `size` bytes; `restore`: the kernel may read what it wrote, so every run
    /// starts from the pristine version.
    Buffer {
        /// Size in bytes.
        size: u64,
        /// `cl_mem_flags` (access bits).
        flags: u64,
        /// Copy the version back before every run.
        restore: bool,
    },
    /// An image.
    Image {
        /// `cl_mem_flags` (access bits).
        flags: u64,
        /// Format and size.
        image: ImageRecord,
        /// How the kernel uses it.
        usage: ImageUse,
    },
    /// A sampler.
    Sampler {
        /// Normalised coordinates.
        normalized_coords: bool,
        /// Addressing mode.
        addressing_mode: u32,
        /// Filter mode.
        filter_mode: u32,
    },
}

/// The memory objects of a resident launch: fixed for its lifetime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResidentLayout {
    /// Kernel name.
    pub kernel: String,
    /// Every argument of the kernel (extras not included).
    pub args: Vec<SlotLayout>,
}

/// A by-value argument of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueArg {
    /// Bytes for `clSetKernelArg`.
    Scalar(#[serde(with = "hexbytes")] Vec<u8>),
    /// A `__local` allocation of this many bytes.
    Local(u64),
}

/// Bytes written at an offset of a buffer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Patch {
    /// Byte offset.
    pub offset: u64,
    /// The bytes.
    #[serde(with = "hexbytes")]
    pub bytes: Vec<u8>,
}

/// A content to keep on the device as version `version` of argument `arg`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Define {
    /// Argument index.
    pub arg: usize,
    /// Version id (the caller's).
    pub version: u64,
    /// The whole content.
    pub content: Content,
}

/// Where a defined content is: in the request, or (large ones, so that a worker restarted
/// after a crash gets them without megabytes of hex on its pipe) in a file the caller wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Content {
    /// The bytes.
    Inline(#[serde(with = "hexbytes")] Vec<u8>),
    /// A file holding exactly the bytes.
    File(std::path::PathBuf),
}

impl Content {
    fn bytes(&self) -> Result<Vec<u8>, ExecError> {
        match self {
            Content::Inline(b) => Ok(b.clone()),
            Content::File(p) => std::fs::read(p)
                .map_err(|e| ExecError::NotReplayable(format!("cannot read {}: {e}", p.display()))),
        }
    }
}

/// What one memory argument holds for a run: a version, then patches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemState {
    /// Argument index.
    pub arg: usize,
    /// Version id (defined by this or an earlier run).
    pub version: u64,
    /// Bytes that differ from the version (buffers only).
    pub patches: Vec<Patch>,
}

/// One run of a resident launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResidentRun {
    /// Number of dimensions.
    pub work_dim: u32,
    /// `None` = NULL offset.
    pub global_offset: Option<Vec<u64>>,
    /// Global size of this run (a reduced launch's).
    pub global_size: Vec<u64>,
    /// Local size (`None` = the driver's choice).
    pub local_size: Option<Vec<u64>>,
    /// Every by-value and `__local` argument.
    pub values: Vec<(usize, ValueArg)>,
    /// Versions to keep from now on (before `mems` is applied).
    pub define: Vec<Define>,
    /// Versions to forget (before `define`).
    pub evict: Vec<(usize, u64)>,
    /// Every buffer and image argument.
    pub mems: Vec<MemState>,
    /// Extra trailing arguments, fresh for this run: plain read-write buffers.
    #[serde(with = "hexvecs")]
    pub extras: Vec<Vec<u8>>,
    /// How many bytes of the first extra to read back.
    pub read_back: usize,
}

mod hexvecs {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        let texts: Vec<String> = v.iter().map(|b| cltrap_capture::hex::encode(b)).collect();
        serde::Serialize::serialize(&texts, s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        let texts = Vec::<String>::deserialize(d)?;
        texts
            .iter()
            .map(|t| {
                cltrap_capture::hex::decode(t).ok_or_else(|| serde::de::Error::custom("bad hex"))
            })
            .collect()
    }
}

enum Slot {
    Plain,
    Buffer {
        zone: Zone,
        view: Mem,
        versions: HashMap<u64, Mem>,
        /// The version the view holds and the ranges patched since it was copied.
        applied: Option<(u64, Vec<(usize, usize)>)>,
        restore: bool,
        flags: u64,
    },
    Image {
        /// The kernel's image when it writes one (`None`: the version itself is passed).
        working: Option<Mem>,
        versions: HashMap<u64, Mem>,
        /// The version the kernel's argument holds now.
        applied: Option<u64>,
        usage: ImageUse,
        flags: u64,
        image: ImageRecord,
    },
}

/// A launch whose memory objects live on the device between runs (see the module doc).
pub struct Resident {
    layout: ResidentLayout,
    kernel: Kernel,
    slots: Vec<Slot>,
    _samplers: Vec<Sampler>,
}

impl Resident {
    /// The layout it was made for.
    pub fn layout(&self) -> &ResidentLayout {
        &self.layout
    }
}

fn set_mem(kernel: &Kernel, name: &str, index: usize, mem: cl_mem) -> Result<(), ExecError> {
    // SAFETY: the pointer is to a live cl_mem value; OpenCL copies it.
    unsafe {
        cl3::kernel::set_kernel_arg(
            kernel.raw(),
            index as u32,
            std::mem::size_of::<cl_mem>(),
            (&raw const mem).cast::<c_void>(),
        )
    }
    .map_err(|c| ExecError::SetArg {
        kernel: name.to_string(),
        index,
        code: super::cl::error_name(c),
    })
}

impl Session {
    /// Creates the memory objects of `layout` for kernel `layout.kernel` of `program` (empty:
    /// contents come with the runs' versions).
    pub fn resident(
        &self,
        program: &BuiltProgram,
        layout: &ResidentLayout,
    ) -> Result<Resident, ExecError> {
        let kernel = self.create_kernel(program, &layout.kernel)?;
        let mut slots = Vec::with_capacity(layout.args.len());
        let mut samplers = Vec::new();
        for (i, a) in layout.args.iter().enumerate() {
            slots.push(match a {
                SlotLayout::Value => Slot::Plain,
                SlotLayout::Null => {
                    set_mem(&kernel, &layout.kernel, i, std::ptr::null_mut())?;
                    Slot::Plain
                }
                SlotLayout::Buffer {
                    size,
                    flags,
                    restore,
                } => {
                    let zeros = vec![0u8; usize::try_from(*size).unwrap_or(0)];
                    let access = access_flags(*flags);
                    let (zone, view) = self
                        .zoned_buffer_padded(access, &zeros, i, RESIDENT_PAD)
                        .ok_or_else(|| ExecError::Cl {
                            what: format!("creating the buffer of argument {i}"),
                            code: "the driver refused the allocation".into(),
                        })?;
                    set_mem(&kernel, &layout.kernel, i, view.raw())?;
                    Slot::Buffer {
                        zone,
                        view,
                        versions: HashMap::new(),
                        applied: None,
                        restore: *restore,
                        flags: *flags,
                    }
                }
                SlotLayout::Image {
                    flags,
                    image,
                    usage,
                } => Slot::Image {
                    working: None,
                    versions: HashMap::new(),
                    applied: None,
                    usage: *usage,
                    flags: *flags,
                    image: image.clone(),
                },
                SlotLayout::Sampler {
                    normalized_coords,
                    addressing_mode,
                    filter_mode,
                } => {
                    let s =
                        self.create_sampler(i, *normalized_coords, *addressing_mode, *filter_mode)?;
                    let raw = s.raw();
                    // SAFETY: the pointer is to a live cl_sampler value; OpenCL copies it.
                    unsafe {
                        cl3::kernel::set_kernel_arg(
                            kernel.raw(),
                            i as u32,
                            std::mem::size_of_val(&raw),
                            (&raw const raw).cast::<c_void>(),
                        )
                    }
                    .map_err(|c| ExecError::SetArg {
                        kernel: layout.kernel.clone(),
                        index: i,
                        code: super::cl::error_name(c),
                    })?;
                    samplers.push(s);
                    Slot::Plain
                }
            });
        }
        Ok(Resident {
            layout: layout.clone(),
            kernel,
            slots,
            _samplers: samplers,
        })
    }

    /// Enqueues a read of `out.len()` bytes of `mem` from `at` without waiting. The caller
    /// keeps `out` alive and untouched until the queue is finished.
    fn read_async(
        &self,
        mem: &Mem,
        at: usize,
        out: &mut [u8],
        what: &str,
    ) -> Result<Event, ExecError> {
        // SAFETY: `out` holds exactly the bytes read and outlives the queue's finish, which
        // the caller waits for before using or dropping it.
        let ev = unsafe {
            cl3::command_queue::enqueue_read_buffer(
                self.queue.raw(),
                mem.raw(),
                CL_FALSE,
                at,
                out.len(),
                out.as_mut_ptr().cast::<c_void>(),
                0,
                std::ptr::null(),
            )
        }
        .map_err(cl_err(what.to_string()))?;
        Ok(Event(ev))
    }

    fn copy_buffer(
        &self,
        src: &Mem,
        dst: &Mem,
        at: usize,
        len: usize,
        arg: usize,
    ) -> Result<(), ExecError> {
        if len == 0 {
            return Ok(());
        }
        // SAFETY: both buffers are live and hold `at + len` bytes (the caller's ranges).
        let ev = unsafe {
            cl3::command_queue::enqueue_copy_buffer(
                self.queue.raw(),
                src.raw(),
                dst.raw(),
                at,
                at,
                len,
                0,
                std::ptr::null(),
            )
        }
        .map_err(cl_err(format!("restoring argument {arg} on the device")))?;
        drop(Event(ev));
        Ok(())
    }

    /// One run of `r` (see [`ResidentRun`]): the first `run.read_back` bytes of the first
    /// extra argument afterwards, and the breaches of the buffers' guard zones.
    pub fn run_resident(
        &self,
        r: &mut Resident,
        run: &ResidentRun,
    ) -> Result<(Vec<u8>, Vec<GuardBreach>), ExecError> {
        let name = r.layout.kernel.clone();
        let missing = |arg: usize, v: u64| {
            ExecError::NotReplayable(format!(
                "argument {arg}: content version {v} was never defined"
            ))
        };
        for (arg, v) in &run.evict {
            match r.slots.get_mut(*arg) {
                Some(Slot::Buffer { versions, .. }) | Some(Slot::Image { versions, .. }) => {
                    versions.remove(v);
                }
                _ => {}
            }
        }
        for d in &run.define {
            let bytes = d.content.bytes()?;
            match r.slots.get_mut(d.arg) {
                Some(Slot::Buffer {
                    versions, flags, ..
                }) => {
                    let m = self.create_memory(
                        &InputArg::Buffer {
                            mem: None,
                            flags: *flags,
                            bytes,
                        },
                        d.arg,
                    )?;
                    versions.insert(d.version, m);
                }
                Some(Slot::Image {
                    versions,
                    flags,
                    image,
                    ..
                }) => {
                    let m = self.create_memory(
                        &InputArg::Image {
                            mem: None,
                            flags: *flags,
                            image: image.clone(),
                            bytes,
                        },
                        d.arg,
                    )?;
                    versions.insert(d.version, m);
                }
                _ => {
                    return Err(ExecError::NotReplayable(format!(
                        "argument {} holds no memory object",
                        d.arg
                    )));
                }
            }
        }
        for m in &run.mems {
            match r.slots.get_mut(m.arg) {
                Some(Slot::Buffer {
                    view,
                    versions,
                    applied,
                    restore,
                    zone,
                    ..
                }) => {
                    let src = versions
                        .get(&m.version)
                        .ok_or_else(|| missing(m.arg, m.version))?;
                    match applied.take() {
                        Some((v, ranges)) if v == m.version && !*restore => {
                            for (at, len) in ranges {
                                self.copy_buffer(src, view, at, len, m.arg)?;
                            }
                        }
                        _ => self.copy_buffer(src, view, 0, zone.size, m.arg)?,
                    }
                    let mut ranges = Vec::with_capacity(m.patches.len());
                    for p in &m.patches {
                        let at = usize::try_from(p.offset).unwrap_or(usize::MAX);
                        if at.saturating_add(p.bytes.len()) > zone.size {
                            return Err(ExecError::NotReplayable(format!(
                                "argument {}: a patch at {at} of {} bytes overruns its {} bytes",
                                m.arg,
                                p.bytes.len(),
                                zone.size
                            )));
                        }
                        // SAFETY: the range lies inside the view (checked above); `p.bytes`
                        // lives in `run`, which outlives the blocking wait at the kernel.
                        let ev = unsafe {
                            cl3::command_queue::enqueue_write_buffer(
                                self.queue.raw(),
                                view.raw(),
                                CL_FALSE,
                                at,
                                p.bytes.len(),
                                p.bytes.as_ptr().cast::<c_void>(),
                                0,
                                std::ptr::null(),
                            )
                        }
                        .map_err(cl_err(format!("patching argument {}", m.arg)))?;
                        drop(Event(ev));
                        ranges.push((at, p.bytes.len()));
                    }
                    *applied = Some((m.version, ranges));
                }
                Some(Slot::Image {
                    working,
                    versions,
                    applied,
                    usage,
                    flags,
                    image,
                }) => {
                    let src = versions
                        .get(&m.version)
                        .ok_or_else(|| missing(m.arg, m.version))?;
                    match usage {
                        ImageUse::Read => {
                            if *applied != Some(m.version) {
                                set_mem(&r.kernel, &name, m.arg, src.raw())?;
                            }
                        }
                        ImageUse::Write | ImageUse::ReadWrite => {
                            if working.is_none() {
                                let bytes = vec![0u8; super::input::image_bytes(image) as usize];
                                let w = self.create_memory(
                                    &InputArg::Image {
                                        mem: None,
                                        flags: *flags,
                                        image: image.clone(),
                                        bytes,
                                    },
                                    m.arg,
                                )?;
                                set_mem(&r.kernel, &name, m.arg, w.raw())?;
                                *working = Some(w);
                            }
                            let again =
                                *usage == ImageUse::ReadWrite || *applied != Some(m.version);
                            if let (true, Some(w)) = (again, working.as_ref()) {
                                let (x, y, z) = image_region(image);
                                let origin = [0usize; 3];
                                let region = [x as usize, y as usize, z as usize];
                                // SAFETY: both images share the format and region.
                                let ev = unsafe {
                                    cl3::command_queue::enqueue_copy_image(
                                        self.queue.raw(),
                                        src.raw(),
                                        w.raw(),
                                        origin.as_ptr(),
                                        origin.as_ptr(),
                                        region.as_ptr(),
                                        0,
                                        std::ptr::null(),
                                    )
                                }
                                .map_err(cl_err(format!("restoring image argument {}", m.arg)))?;
                                drop(Event(ev));
                            }
                        }
                    }
                    *applied = Some(m.version);
                }
                _ => {
                    return Err(ExecError::NotReplayable(format!(
                        "argument {} holds no memory object",
                        m.arg
                    )))
                }
            }
        }
        let set_err = |i: usize| {
            let kernel = name.clone();
            move |c: i32| ExecError::SetArg {
                kernel,
                index: i,
                code: super::cl::error_name(c),
            }
        };
        for (i, v) in &run.values {
            // SAFETY: the pointers point at values that live until the call returns.
            match v {
                ValueArg::Scalar(bytes) => unsafe {
                    cl3::kernel::set_kernel_arg(
                        r.kernel.raw(),
                        *i as u32,
                        bytes.len(),
                        bytes.as_ptr().cast::<c_void>(),
                    )
                },
                ValueArg::Local(size) => unsafe {
                    cl3::kernel::set_kernel_arg(
                        r.kernel.raw(),
                        *i as u32,
                        *size as usize,
                        std::ptr::null(),
                    )
                },
            }
            .map_err(set_err(*i))?;
        }
        let mut extras = Vec::with_capacity(run.extras.len());
        for (j, bytes) in run.extras.iter().enumerate() {
            let i = r.layout.args.len() + j;
            let m = self.create_memory(
                &InputArg::Buffer {
                    mem: None,
                    flags: 0,
                    bytes: bytes.clone(),
                },
                i,
            )?;
            set_mem(&r.kernel, &name, i, m.raw())?;
            extras.push(m);
        }
        // One synchronisation point per run: the kernel, the counters' read and every guard
        // pad's read are enqueued together (in-order queue), then waited for once.
        let ev = self.enqueue_kernel(
            &r.kernel,
            &name,
            run.work_dim,
            run.global_offset.as_deref(),
            &run.global_size,
            run.local_size.as_deref(),
        )?;
        let mut out = vec![0u8; run.read_back.min(run.extras.first().map_or(0, Vec::len))];
        let mut reads: Vec<Event> = Vec::new();
        if let (Some(m), false) = (extras.first(), out.is_empty()) {
            reads.push(self.read_async(m, 0, &mut out, "reading back the coverage counters")?);
        }
        let mut pads: Vec<(&Zone, Vec<u8>, Vec<u8>)> = r
            .slots
            .iter()
            .filter_map(|s| match s {
                Slot::Buffer { zone, .. } => Some((zone, vec![0u8; zone.pad], vec![0u8; zone.pad])),
                _ => None,
            })
            .collect();
        for (z, before, after) in &mut pads {
            let what = "reading a guard zone";
            reads.push(self.read_async(&z.outer, 0, before, what)?);
            reads.push(self.read_async(&z.outer, z.pad + z.size, after, what)?);
        }
        let waited = self.wait_kernel(&ev);
        self.note_wait();
        cl3::command_queue::finish(self.queue.raw()).map_err(super::fault::failed)?;
        drop(reads);
        waited?;
        let mut breaches = Vec::new();
        for (z, before, after) in &pads {
            if let Some(b) = super::guard::breach_of(z, before, after) {
                self.repoison(z)?;
                breaches.push(b);
            }
        }
        Ok((out, breaches))
    }
}
