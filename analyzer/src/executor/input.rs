//! A launch as plain data: geometry and argument values, independent of any capture.
//!
//! Replays make one from a captured launch; fuzzers make them up or mutate them.

use super::ExecError;
use crate::values::unhex;
use cltrap_capture::{
    ArgRecord, Capture, Content, DigestKind, ImageRecord, LaunchRecord, MemId, ReadError,
};

/// One kernel argument, ready to be set.
#[derive(Debug, Clone, PartialEq)]
pub enum InputArg {
    /// By-value bytes, exactly as for `clSetKernelArg`.
    Scalar(Vec<u8>),
    /// A `__local` allocation of this many bytes.
    Local(u64),
    /// A NULL `__global`/`__constant` pointer.
    NullBuffer,
    /// A buffer with initial contents. Arguments with the same `Some(mem)` share one object
    /// (aliasing); `None` always gets an object of its own.
    Buffer {
        /// Identity for aliasing; `None` = an object of its own.
        mem: Option<MemId>,
        /// `cl_mem_flags`; only the kernel-access bits are used.
        flags: u64,
        /// Initial contents.
        bytes: Vec<u8>,
    },
    /// A sub-buffer of another argument's buffer (`parent`), so writes through either are
    /// seen through both. Its contents come from the parent's. (A sub-buffer whose parent
    /// is not an argument of the launch replays as a standalone [`InputArg::Buffer`].)
    SubBuffer {
        /// Identity for aliasing; `None` = an object of its own.
        mem: Option<MemId>,
        /// The `mem` of the parent buffer argument.
        parent: MemId,
        /// Byte offset inside the parent.
        origin: u64,
        /// Size in bytes.
        size: u64,
        /// `cl_mem_flags`; only the kernel-access bits are used.
        flags: u64,
    },
    /// An image with initial (tightly packed) contents; sharing as for buffers.
    Image {
        /// Identity for aliasing; `None` = an object of its own.
        mem: Option<MemId>,
        /// `cl_mem_flags`; only the kernel-access bits are used.
        flags: u64,
        /// Format and dimensions.
        image: ImageRecord,
        /// Initial pixels, tightly packed (row pitch 0).
        bytes: Vec<u8>,
    },
    /// A sampler, by its properties.
    Sampler {
        /// Coordinates in [0, 1) rather than in pixels.
        normalized_coords: bool,
        /// `cl_addressing_mode`.
        addressing_mode: u32,
        /// `cl_filter_mode`.
        filter_mode: u32,
    },
}

/// Everything needed to run one kernel once.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchInput {
    /// Kernel name in the program.
    pub kernel: String,
    /// Number of dimensions of the NDRange (1 to 3).
    pub work_dim: u32,
    /// `None` = NULL offset.
    pub global_offset: Option<Vec<u64>>,
    /// Global work size per dimension.
    pub global_size: Vec<u64>,
    /// `None` = let the implementation choose (NULL), as the application did.
    pub local_size: Option<Vec<u64>>,
    /// The kernel's arguments in order.
    pub args: Vec<InputArg>,
    /// Indices of write-only buffers whose pre-launch contents were not recorded: their
    /// bytes are a stand-in (zeros). A kernel that overwrites them completely does not care;
    /// [`LaunchInput::with_stand_in_fill`] lets a caller check that it did.
    pub stand_ins: Vec<usize>,
}

/// What a memory argument must hold after the run.
#[derive(Debug, Clone, PartialEq)]
pub enum Expected {
    /// The exact bytes the application saw.
    Bytes(Vec<u8>),
    /// Only the digest is known (buffer mode `hash`), made by this function.
    Digest(DigestKind, String),
    /// Nothing to compare with; the reason.
    Unknown(String),
}

/// Bytes of a pre-launch content. A digest-only content can still be restored when it is
/// the digest of all zeros (a freshly cleared output buffer, the common case), or when
/// `derive` re-creates it (argument `arg`: see [`super::derive`]). `derive` may also hand
/// over a stored content it already holds, verified (an earlier launch's output).
fn restore(
    capture: &Capture,
    c: &Content,
    size: u64,
    what: &str,
    arg: u32,
    derive: &mut dyn FnMut(u32, &Content) -> Option<Vec<u8>>,
    deriving: bool,
) -> Result<Vec<u8>, ExecError> {
    if let Content::Blob { size: s, .. } = c {
        if let Some(bytes) = derive(arg, c).filter(|b| b.len() as u64 == *s) {
            return Ok(bytes);
        }
    }
    if let Content::Digest {
        hash,
        size: s,
        algo,
    } = c
    {
        if let Some(bytes) = derive(arg, c) {
            return Ok(bytes);
        }
        let n = usize::try_from(*s).unwrap_or(usize::MAX);
        if *s == size && n <= 1 << 30 && zeros_digest(*algo, n) == *hash {
            return Ok(vec![0u8; n]);
        }
        if deriving {
            // The caller re-creates derived inputs, and no launch before this one leaves
            // these bytes (the reader's own message is for commands that do not derive).
            return Err(ExecError::Capture(ReadError::NotRecorded {
                what: what.to_string(),
                why: "only their digest was captured (buffer mode `hash`, or past the disk budget), and no launch before this one in the capture leaves them, so they cannot be re-created".into(),
            }));
        }
    }
    Ok(capture.content(c, what)?)
}

/// The digest of `n` zero bytes, computed once per function and size in a thread (a long
/// capture asks for the same few sizes at every launch).
fn zeros_digest(algo: DigestKind, n: usize) -> String {
    thread_local! {
        static KNOWN: std::cell::RefCell<std::collections::HashMap<(DigestKind, usize), String>> =
            Default::default();
    }
    KNOWN.with(|known| {
        known
            .borrow_mut()
            .entry((algo, n))
            .or_insert_with(|| algo.digest(&vec![0u8; n]))
            .clone()
    })
}

fn expected(capture: &Capture, c: &Content, what: &str) -> Result<Expected, ExecError> {
    Ok(match c {
        Content::Blob { .. } => Expected::Bytes(capture.content(c, what)?),
        Content::Digest { hash, algo, .. } => Expected::Digest(*algo, hash.clone()),
        Content::Missing { note } => Expected::Unknown(if note.is_empty() {
            "not recorded".into()
        } else {
            note.clone()
        }),
    })
}

impl LaunchInput {
    /// The launch as the application made it, with every buffer and image restored to its
    /// pre-launch contents. Fails with a skip-kind error ([`ExecError::is_skip`]) when the
    /// launch is marked not replayable or its inputs were not recorded.
    pub fn from_record(capture: &Capture, l: &LaunchRecord) -> Result<LaunchInput, ExecError> {
        Self::restored(capture, l, &[], &mut |_, _| None, false)
    }

    /// [`LaunchInput::from_record`] where `derive(argument index, content)` may supply the
    /// bytes of a digest-only content before the launch (a derived input, re-created by
    /// re-executing the launch that left it: [`super::Deriver`]).
    pub fn from_record_with(
        capture: &Capture,
        l: &LaunchRecord,
        derive: &mut dyn FnMut(u32, &Content) -> Option<Vec<u8>>,
    ) -> Result<LaunchInput, ExecError> {
        Self::from_record_except(capture, l, &[], derive)
    }

    /// [`LaunchInput::from_record_with`] where each derived input comes from a file, by
    /// argument index (what a worker process is handed: re-created on a device elsewhere).
    /// A derived input with no file there stays missing, as without a deriver.
    pub fn from_record_with_files(
        capture: &Capture,
        l: &LaunchRecord,
        files: &std::collections::BTreeMap<u32, std::path::PathBuf>,
    ) -> Result<LaunchInput, FromFiles> {
        let mut unread = None;
        let input = Self::from_record_with(capture, l, &mut |arg, _| {
            let path = files.get(&arg)?;
            std::fs::read(path)
                .map_err(|e| unread = Some(format!("{}: {e}", path.display())))
                .ok()
        });
        match unread {
            Some(why) => Err(FromFiles::Unread(why)),
            None => input.map_err(FromFiles::Exec),
        }
    }

    /// [`LaunchInput::from_record_with`] where the buffer arguments `resident` get an empty
    /// placeholder instead of their contents: each binds an object that holds them on the
    /// device, verified there, and nothing on the host has them ([`super::Chain`]).
    pub fn from_record_except(
        capture: &Capture,
        l: &LaunchRecord,
        resident: &[usize],
        derive: &mut dyn FnMut(u32, &Content) -> Option<Vec<u8>>,
    ) -> Result<LaunchInput, ExecError> {
        Self::restored(capture, l, resident, derive, true)
    }

    /// The launch restored (`resident`: see [`LaunchInput::from_record_except`]); `deriving`:
    /// the caller re-creates derived inputs through `derive`.
    fn restored(
        capture: &Capture,
        l: &LaunchRecord,
        resident: &[usize],
        derive: &mut dyn FnMut(u32, &Content) -> Option<Vec<u8>>,
        deriving: bool,
    ) -> Result<LaunchInput, ExecError> {
        if !l.not_replayable.is_empty() {
            return Err(ExecError::NotReplayable(l.not_replayable.join("; ")));
        }
        if l.status != 0 {
            return Err(ExecError::NotReplayable(format!(
                "the application's enqueue failed ({}), so the kernel never ran",
                super::cl::error_name(l.status)
            )));
        }
        // A zero local size crashes PoCL inside the call; a huge range runs for hours.
        cltrap_capture::validate::check_geometry(
            l.work_dim,
            l.global_offset.as_deref(),
            &l.global_size,
            l.local_size.as_deref(),
        )
        .map_err(ExecError::Geometry)?;
        // A record of kilobytes may claim buffers and images of zeros (up to 64 GiB each,
        // restored lazily, then copied by the device: on a CPU device into this process's
        // memory, so counted twice there), each memory object once. Checked against the
        // memory available before anything is restored: one clear error, not the OOM killer.
        let mut seen = std::collections::HashSet::new();
        let objects: u64 = l
            .args
            .iter()
            .filter_map(|a| match a {
                ArgRecord::Buffer {
                    mem,
                    size,
                    sub_of: None,
                    ..
                } if seen.insert(*mem) => Some(*size),
                ArgRecord::Image { mem, image, .. } if seen.insert(*mem) => {
                    Some(image.packed_size())
                }
                _ => None,
            })
            .fold(0u64, u64::saturating_add);
        let copies = if crate::heap::cpu_in_process() { 2 } else { 1 };
        if objects >= 1 << 30 && !cltrap_capture::bulk::has_room(objects.saturating_mul(copies)) {
            return Err(ExecError::NotReplayable(format!(
                "its buffers and images take {objects} bytes, more than the memory available{}",
                if copies == 2 {
                    " for them and the CPU device's copy"
                } else {
                    ""
                }
            )));
        }
        let mut args = Vec::with_capacity(l.args.len());
        let mut stand_ins = Vec::new();
        for (i, a) in l.args.iter().enumerate() {
            let name = |a: &ArgRecord| {
                let info = a.info();
                if info.name.is_empty() {
                    format!("argument {i} of launch {}", l.id)
                } else {
                    format!("argument {i} ({}) of launch {}", info.name, l.id)
                }
            };
            args.push(match a {
                ArgRecord::Scalar { bytes, .. } => {
                    InputArg::Scalar(unhex(bytes).ok_or_else(|| {
                        ExecError::Capture(cltrap_capture::ReadError::Corrupt {
                            path: capture.dir().join(cltrap_capture::LAUNCHES_FILE),
                            message: format!("{} has invalid hex bytes {bytes:?}", name(a)),
                        })
                    })?)
                }
                ArgRecord::Local { size, .. } => InputArg::Local(*size),
                ArgRecord::NullBuffer { .. } => InputArg::NullBuffer,
                ArgRecord::Buffer {
                    mem,
                    flags,
                    size,
                    sub_of: Some((parent, origin)),
                    ..
                } if sub_of_an_argument(l, a) => InputArg::SubBuffer {
                    mem: Some(*mem),
                    parent: *parent,
                    origin: *origin,
                    size: *size,
                    flags: *flags,
                },
                ArgRecord::Buffer {
                    mem,
                    flags,
                    size,
                    before,
                    ..
                } => {
                    let what = format!("the pre-launch contents of {}", name(a));
                    let restored = match resident.contains(&i) {
                        true => Ok(Vec::new()),
                        false => restore(capture, before, *size, &what, i as u32, derive, deriving),
                    };
                    let bytes = match restored {
                        Ok(b) => b,
                        Err(ExecError::Capture(ReadError::NotRecorded { .. }))
                            if flags & opencl_sys::CL_MEM_WRITE_ONLY != 0 =>
                        {
                            stand_ins.push(i);
                            zeroed(*size, &name(a))?
                        }
                        Err(e) => return Err(e),
                    };
                    InputArg::Buffer {
                        mem: Some(*mem),
                        flags: *flags,
                        bytes,
                    }
                }
                ArgRecord::Image {
                    mem,
                    flags,
                    image,
                    before,
                    ..
                } => {
                    let size = image_bytes(image);
                    InputArg::Image {
                        mem: Some(*mem),
                        flags: *flags,
                        image: image.clone(),
                        bytes: restore(
                            capture,
                            before,
                            size,
                            &format!("the pre-launch contents of {}", name(a)),
                            i as u32,
                            derive,
                            deriving,
                        )?,
                    }
                }
                ArgRecord::Sampler {
                    normalized_coords,
                    addressing_mode,
                    filter_mode,
                    ..
                } => InputArg::Sampler {
                    normalized_coords: *normalized_coords,
                    addressing_mode: *addressing_mode,
                    filter_mode: *filter_mode,
                },
                ArgRecord::Svm { .. } => {
                    return Err(ExecError::NotReplayable(format!(
                        "{} is an SVM pointer",
                        name(a)
                    )))
                }
                ArgRecord::Unset { .. } => {
                    return Err(ExecError::NotReplayable(format!(
                        "{} was never set by the application",
                        name(a)
                    )))
                }
            });
        }
        Ok(LaunchInput {
            kernel: l.kernel.clone(),
            work_dim: l.work_dim,
            global_offset: l.global_offset.clone(),
            global_size: l.global_size.clone(),
            local_size: l.local_size.clone(),
            args,
            stand_ins,
        })
    }

    /// The same launch with every stand-in buffer filled with `byte` instead of zeros.
    /// Running with two different fills and getting the same outputs proves the kernel
    /// overwrote those buffers completely, so the unrecorded contents did not matter.
    pub fn with_stand_in_fill(&self, byte: u8) -> LaunchInput {
        let mut copy = self.clone();
        for i in &self.stand_ins {
            if let Some(InputArg::Buffer { bytes, .. }) = copy.args.get_mut(*i) {
                bytes.fill(byte);
            }
        }
        copy
    }

    /// `expected` without the stand-in buffers' entries: their contents before the launch
    /// were not recorded, so where the kernel leaves parts of them alone the recording is no
    /// yardstick for what a run of an instrumented variant leaves there.
    pub fn without_stand_ins(&self, mut expected: Vec<Option<Expected>>) -> Vec<Option<Expected>> {
        for i in &self.stand_ins {
            if let Some(e) = expected.get_mut(*i) {
                *e = None;
            }
        }
        expected
    }

    /// What each argument must hold after the launch: `Some` for buffers and images, `None`
    /// for everything else. Indexed like `args`.
    pub fn expected_outputs(
        capture: &Capture,
        l: &LaunchRecord,
    ) -> Result<Vec<Option<Expected>>, ExecError> {
        Self::expected_outputs_except(capture, l, &[])
    }

    /// [`LaunchInput::expected_outputs`] without the arguments `known_equal` marks (outputs
    /// already found equal to their recorded contents: nothing left to compare, and their
    /// recorded bytes are not read from the capture).
    pub fn expected_outputs_except(
        capture: &Capture,
        l: &LaunchRecord,
        known_equal: &[bool],
    ) -> Result<Vec<Option<Expected>>, ExecError> {
        l.args
            .iter()
            .enumerate()
            .map(|(i, a)| match a {
                _ if known_equal.get(i).copied().unwrap_or(false) => Ok(None),
                ArgRecord::Buffer { after, .. } | ArgRecord::Image { after, .. } => expected(
                    capture,
                    after,
                    &format!(
                        "the post-launch contents of argument {i} of launch {}",
                        l.id
                    ),
                )
                .map(Some),
                _ => Ok(None),
            })
            .collect()
    }
}

/// `size` zero bytes for a stand-in, or an error when this machine cannot hold them (a
/// capture's sizes are bounded, not by this machine's memory).
fn zeroed(size: u64, what: &str) -> Result<Vec<u8>, ExecError> {
    let n = usize::try_from(size).unwrap_or(usize::MAX);
    if !cltrap_capture::bulk::fits_in_memory(n) {
        return Err(ExecError::NotReplayable(format!(
            "{what} is a buffer of {size} bytes, more than this machine has memory available"
        )));
    }
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        ExecError::NotReplayable(format!(
            "{what} is a buffer of {size} bytes, more than this machine can allocate"
        ))
    })?;
    v.resize(n, 0);
    Ok(v)
}

/// Size in bytes of an image's tightly packed contents.
pub fn image_bytes(image: &ImageRecord) -> u64 {
    image.packed_size()
}

/// The `region` of an image for read/write calls: (width, height or array size, depth or array size).
pub fn image_region(image: &ImageRecord) -> (u64, u64, u64) {
    image.region()
}

/// Whether argument `a` of `l` replays as a sub-buffer of another argument: its parent is a
/// whole-buffer argument of the launch (else it replays as a buffer of its own).
pub(super) fn sub_of_an_argument(l: &LaunchRecord, a: &ArgRecord) -> bool {
    let ArgRecord::Buffer {
        sub_of: Some((parent, _)),
        ..
    } = a
    else {
        return false;
    };
    l.args
        .iter()
        .any(|b| matches!(b, ArgRecord::Buffer { mem: m, sub_of: None, .. } if m == parent))
}

/// Why [`LaunchInput::from_record_with_files`] could not restore a launch.
#[derive(Debug)]
pub enum FromFiles {
    /// A derived input's file could not be read (`PATH: why`).
    Unread(String),
    /// The record could not be restored.
    Exec(ExecError),
}
