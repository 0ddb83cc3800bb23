//! The records of a capture. Every field is plain data so captures can be read, diffed and
//! generated (fuzz suites) without an OpenCL runtime.

use crate::text::Text;
use serde::{Deserialize, Serialize};

pub use crate::hex::Hash;

/// The manifest at the root of a capture: identifies the format and the process that wrote it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always [`crate::FORMAT_NAME`].
    pub format: String,
    /// [`crate::FORMAT_VERSION`] of the writer.
    pub version: u32,
    /// Writer identification, e.g. `cltrap-shim 0.1.0` or `cltrap fuzz 0.1.0`.
    pub writer: String,
    /// Process id of the captured application (0 for generated suites).
    #[serde(default)]
    pub pid: u32,
    /// Command line of the captured application, when known.
    #[serde(default)]
    pub argv: Vec<String>,
    /// Seconds since the Unix epoch at capture start.
    #[serde(default)]
    pub started_unix: u64,
    /// Buffer mode the capture ran with (`full`, `hash`, `none`).
    #[serde(default)]
    pub buffer_mode: String,
}

/// Reference to a run of bytes: stored in full, known only by digest, or not recorded.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Content {
    /// Bytes are in `blobs/` under `hash`.
    Blob { hash: Hash, size: u64 },
    /// Only the digest was recorded (buffer mode `hash`): comparable, not restorable.
    /// `algo` says which function made it (absent: blake3, as in every capture before
    /// format 3).
    Digest {
        hash: Hash,
        size: u64,
        #[serde(default, skip_serializing_if = "DigestKind::is_blake3")]
        algo: DigestKind,
    },
    /// Nothing was recorded (buffer mode `none`, or reading failed: see `note`).
    Missing {
        #[serde(default)]
        note: String,
    },
}

/// The function behind a [`Content::Digest`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "snake_case")]
pub enum DigestKind {
    /// blake3 of the bytes, computed on the host (the name of a blob).
    #[default]
    Blake3,
    /// [`crate::devdigest`]'s `dd128`, computed on the device by the shim (GPUs), so the
    /// contents never crossed the bus.
    Dd128,
}

impl DigestKind {
    /// Whether this is the default kind (left out of the record).
    pub fn is_blake3(&self) -> bool {
        *self == DigestKind::Blake3
    }

    /// The digest of `bytes` by this function: what a replay compares with a recorded one.
    pub fn digest(&self, bytes: &[u8]) -> Hash {
        match self {
            DigestKind::Blake3 => crate::parallel::digest(bytes),
            DigestKind::Dd128 => crate::devdigest::dd128(bytes),
        }
    }
}

impl Content {
    /// The digest, when the bytes or their digest were recorded.
    pub fn hash(&self) -> Option<&str> {
        match self {
            Content::Blob { hash, .. } | Content::Digest { hash, .. } => Some(hash),
            Content::Missing { .. } => None,
        }
    }
}

/// One frame of the application's stack: where a program was built or a kernel launched.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct Site {
    /// Path of the executable or library containing the caller.
    pub module: String,
    /// Offset of the return address inside `module` (for `addr2line -e module offset`).
    pub offset: u64,
    /// Nearest exported symbol from `dladdr`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// `file:line` when the writer could resolve it (the analyzer may fill it later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

/// How a program object came to be; stored as a content-addressed JSON blob so that
/// thousands of launches of one program share one record.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProgramRecord {
    pub origin: ProgramOrigin,
    /// Options the application passed to `clBuildProgram` (or `clLinkProgram` for linked
    /// programs), exactly as given: cltrap's own additions are not included.
    #[serde(default)]
    pub options: String,
    /// Names of the devices the program was built for.
    #[serde(default)]
    pub devices: Vec<String>,
    /// Where the application created the program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_site: Option<Site>,
    /// The files the program includes, as the driver found them at build time, so that
    /// every later build uses these copies and never the application's file system.
    #[serde(default, skip_serializing_if = "Includes::is_empty")]
    pub includes: Includes,
}

/// A program's one OpenCL C translation unit: what every pass of the analyzer parses and
/// rewrites, and the options it was compiled with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceUnit<'a> {
    /// The source strings, concatenated as OpenCL does.
    pub sources: &'a [Hash],
    /// The options the unit was compiled with (`clBuildProgram`'s, or `clCompileProgram`'s
    /// for a linked program).
    pub compile_options: &'a str,
    /// `clLinkProgram`'s options when the program was linked from this one unit, which a
    /// rebuild of a rewritten unit adds to its compile options.
    pub link_options: Option<&'a str>,
}

impl SourceUnit<'_> {
    /// The options that build the unit with `clBuildProgram` as its compile (and link)
    /// built it; what the analyzer parses it with too.
    pub fn build_options(&self) -> String {
        match self.link_options.map(str::trim).filter(|l| !l.is_empty()) {
            Some(link) if !self.compile_options.trim().is_empty() => {
                format!("{} {link}", self.compile_options.trim_end())
            }
            Some(link) => link.to_string(),
            None => self.compile_options.to_string(),
        }
    }
}

impl ProgramRecord {
    /// The program's one translation unit, or what it was made from instead (`a binary`,
    /// ...). A program linked by `clLinkProgram` from one unit compiled from source
    /// (hashcat builds every kernel so) is that unit: compile + link of one unit is a
    /// build. Linked from several units, or compiled with headers passed in memory, it is
    /// not one unit the passes can rewrite.
    pub fn source_unit(&self) -> Result<SourceUnit<'_>, &'static str> {
        match &self.origin {
            ProgramOrigin::Source { sources } => Ok(SourceUnit {
                sources,
                compile_options: &self.options,
                link_options: None,
            }),
            ProgramOrigin::Binary { .. } => Err("a binary"),
            ProgramOrigin::Il { .. } => Err("SPIR-V"),
            ProgramOrigin::BuiltIn { .. } => Err("built-in kernels"),
            ProgramOrigin::Linked { inputs } => match inputs.as_slice() {
                [one] if !one.headers.is_empty() => {
                    Err("a linked program compiled with headers passed in memory")
                }
                [one] => match one.origin.as_ref() {
                    ProgramOrigin::Source { sources } => Ok(SourceUnit {
                        sources,
                        compile_options: &one.compile_options,
                        link_options: Some(&self.options),
                    }),
                    _ => Err("a program linked from a unit not compiled from source"),
                },
                _ => Err("a program linked from several units"),
            },
        }
    }
}

/// A program's included files (see `crate::includes` for how they are found).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct Includes {
    /// The application's working directory when it built the program (absolute): where
    /// the driver looked first, and what relative `-I` directories were relative to.
    #[serde(default)]
    pub build_dir: String,
    /// Every `#include` met, in every conditional branch, nested ones included.
    #[serde(default)]
    pub files: Vec<IncludedFile>,
}

impl Includes {
    /// True when the program includes nothing (older captures, or no `#include`).
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The includes that could not be found at build time (or name a macro).
    pub fn missing(&self) -> impl Iterator<Item = &IncludedFile> {
        self.files
            .iter()
            .filter(|f| f.content.is_none() && f.path.is_none())
    }
}

/// How an `#include` names its file.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum IncludeForm {
    /// `#include "name"`.
    Quoted,
    /// `#include <name>`.
    Angled,
    /// `#include MACRO(...)`: followed when it expands to a file name with the build's
    /// macros (`cltrap_capture::macros`); `name` is then the whole invocation as written.
    Macro,
}

/// One `#include` directive and the file it reached.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct IncludedFile {
    /// The name as written (for a macro include, the invocation: `M2S(INCLUDE_PATH/a.h)`).
    pub name: String,
    /// How it is written.
    pub form: IncludeForm,
    /// Absolute path of the file holding the directive; `None` for the program's source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Absolute path where it was found; `None` when it was not found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Blob of the file's bytes (on the first entry that reached this path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Hash>,
}

/// The ways OpenCL can create a program.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ProgramOrigin {
    /// `clCreateProgramWithSource`: the source strings, one blob each, in order.
    Source { sources: Vec<Hash> },
    /// `clCreateProgramWithBinary`: one binary per device. Replayable only on a device that
    /// accepts the binary.
    Binary { binaries: Vec<Hash> },
    /// `clCreateProgramWithIL` (SPIR-V).
    Il { il: Hash },
    /// `clCreateProgramWithBuiltInKernels`: not replayable elsewhere.
    BuiltIn { kernel_names: String },
    /// `clLinkProgram` over programs compiled with `clCompileProgram`.
    Linked { inputs: Vec<CompiledInput> },
}

/// One input of `clLinkProgram`: a program compiled separately with its own options and
/// embedded headers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CompiledInput {
    pub origin: Box<ProgramOrigin>,
    /// Options passed to `clCompileProgram`.
    #[serde(default)]
    pub compile_options: String,
    /// `(include name, header source blob)` pairs passed to `clCompileProgram`.
    #[serde(default)]
    pub headers: Vec<(String, Hash)>,
}

/// Platform and device facts at capture time, so a replay can say where the capture came from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct DeviceRecord {
    pub platform: Text,
    pub name: Text,
    pub vendor: Text,
    pub driver_version: Text,
    pub version: Text,
}

/// A memory object's identity inside one capture: arguments that share an id alias the same
/// `cl_mem`, which a replay must preserve.
pub type MemId = u64;

/// One kernel argument as it was when the launch was enqueued.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", try_from = "RawArg")]
pub enum ArgRecord {
    /// A by-value argument: its raw bytes in hex, as passed to `clSetKernelArg`.
    Scalar {
        #[serde(flatten)]
        info: ArgInfo,
        bytes: String,
    },
    /// A `__local` pointer: only its size.
    Local {
        #[serde(flatten)]
        info: ArgInfo,
        size: u64,
    },
    /// A `__global`/`__constant` pointer set to NULL.
    NullBuffer {
        #[serde(flatten)]
        info: ArgInfo,
    },
    /// A buffer (or sub-buffer) object.
    Buffer {
        #[serde(flatten)]
        info: ArgInfo,
        mem: MemId,
        /// `cl_mem_flags` of the object.
        flags: u64,
        size: u64,
        /// For sub-buffers: the parent's id and the origin inside it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sub_of: Option<(MemId, u64)>,
        before: Content,
        after: Content,
    },
    /// An image object.
    Image {
        #[serde(flatten)]
        info: ArgInfo,
        mem: MemId,
        flags: u64,
        image: ImageRecord,
        before: Content,
        after: Content,
    },
    /// A sampler object, recreated from its properties.
    Sampler {
        #[serde(flatten)]
        info: ArgInfo,
        normalized_coords: bool,
        addressing_mode: u32,
        filter_mode: u32,
    },
    /// An SVM pointer (`clSetKernelArgSVMPointer`): recorded, not replayable.
    Svm {
        #[serde(flatten)]
        info: ArgInfo,
        pointer: u64,
    },
    /// Never set by the application (the launch itself would fail).
    Unset {
        #[serde(flatten)]
        info: ArgInfo,
    },
}

impl ArgRecord {
    /// The common part every argument has.
    pub fn info(&self) -> &ArgInfo {
        match self {
            ArgRecord::Scalar { info, .. }
            | ArgRecord::Local { info, .. }
            | ArgRecord::NullBuffer { info }
            | ArgRecord::Buffer { info, .. }
            | ArgRecord::Image { info, .. }
            | ArgRecord::Sampler { info, .. }
            | ArgRecord::Svm { info, .. }
            | ArgRecord::Unset { info } => info,
        }
    }
}

/// The kinds of [`ArgRecord`], as the `kind` field spells them.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum ArgKind {
    Scalar,
    Local,
    NullBuffer,
    Buffer,
    Image,
    Sampler,
    Svm,
    Unset,
}

/// An argument as read, every field of every kind optional: what lets a reader refuse an
/// unknown field (serde cannot deny unknown fields of a tagged enum with flattened parts)
/// and a field of another kind, and say which field a kind misses.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArg {
    kind: ArgKind,
    index: u32,
    #[serde(default)]
    name: Text,
    #[serde(default)]
    type_name: Text,
    #[serde(default)]
    address_space: Text,
    #[serde(default)]
    qualifiers: Text,
    bytes: Option<String>,
    size: Option<u64>,
    mem: Option<MemId>,
    flags: Option<u64>,
    sub_of: Option<(MemId, u64)>,
    before: Option<Content>,
    after: Option<Content>,
    image: Option<ImageRecord>,
    normalized_coords: Option<bool>,
    addressing_mode: Option<u32>,
    filter_mode: Option<u32>,
    pointer: Option<u64>,
}

impl TryFrom<RawArg> for ArgRecord {
    type Error = String;

    fn try_from(r: RawArg) -> Result<ArgRecord, String> {
        let kind = r.kind;
        // Fields present, by name, so the ones a kind does not have can be named.
        let present: [(&str, bool); 12] = [
            ("bytes", r.bytes.is_some()),
            ("size", r.size.is_some()),
            ("mem", r.mem.is_some()),
            ("flags", r.flags.is_some()),
            ("sub_of", r.sub_of.is_some()),
            ("before", r.before.is_some()),
            ("after", r.after.is_some()),
            ("image", r.image.is_some()),
            ("normalized_coords", r.normalized_coords.is_some()),
            ("addressing_mode", r.addressing_mode.is_some()),
            ("filter_mode", r.filter_mode.is_some()),
            ("pointer", r.pointer.is_some()),
        ];
        let allowed: &[&str] = match kind {
            ArgKind::Scalar => &["bytes"],
            ArgKind::Local => &["size"],
            ArgKind::NullBuffer | ArgKind::Unset => &[],
            ArgKind::Buffer => &["mem", "flags", "size", "sub_of", "before", "after"],
            ArgKind::Image => &["mem", "flags", "image", "before", "after"],
            ArgKind::Sampler => &["normalized_coords", "addressing_mode", "filter_mode"],
            ArgKind::Svm => &["pointer"],
        };
        if let Some((field, _)) = present
            .iter()
            .find(|(f, here)| *here && !allowed.contains(f))
        {
            return Err(format!(
                "unknown field `{field}` for an argument of kind {kind:?}"
            ));
        }
        fn need<T>(v: Option<T>, field: &str) -> Result<T, String> {
            v.ok_or_else(|| format!("missing field `{field}`"))
        }
        let info = ArgInfo {
            index: r.index,
            name: r.name,
            type_name: r.type_name,
            address_space: r.address_space,
            qualifiers: r.qualifiers,
        };
        Ok(match kind {
            ArgKind::Scalar => ArgRecord::Scalar {
                info,
                bytes: need(r.bytes, "bytes")?,
            },
            ArgKind::Local => ArgRecord::Local {
                info,
                size: need(r.size, "size")?,
            },
            ArgKind::NullBuffer => ArgRecord::NullBuffer { info },
            ArgKind::Buffer => ArgRecord::Buffer {
                info,
                mem: need(r.mem, "mem")?,
                flags: need(r.flags, "flags")?,
                size: need(r.size, "size")?,
                sub_of: r.sub_of,
                before: need(r.before, "before")?,
                after: need(r.after, "after")?,
            },
            ArgKind::Image => ArgRecord::Image {
                info,
                mem: need(r.mem, "mem")?,
                flags: need(r.flags, "flags")?,
                image: need(r.image, "image")?,
                before: need(r.before, "before")?,
                after: need(r.after, "after")?,
            },
            ArgKind::Sampler => ArgRecord::Sampler {
                info,
                normalized_coords: need(r.normalized_coords, "normalized_coords")?,
                addressing_mode: need(r.addressing_mode, "addressing_mode")?,
                filter_mode: need(r.filter_mode, "filter_mode")?,
            },
            ArgKind::Svm => ArgRecord::Svm {
                info,
                pointer: need(r.pointer, "pointer")?,
            },
            ArgKind::Unset => ArgRecord::Unset { info },
        })
    }
}

/// What `clGetKernelArgInfo` said about an argument (empty strings where the driver would not say).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct ArgInfo {
    pub index: u32,
    #[serde(default)]
    pub name: Text,
    /// e.g. `float4*`, `uint`, `struct params`.
    #[serde(default)]
    pub type_name: Text,
    /// `global`, `constant`, `local` or `private`.
    #[serde(default)]
    pub address_space: Text,
    /// `const`, `restrict`, `volatile`, `read_only`, ... space-separated.
    #[serde(default)]
    pub qualifiers: Text,
}

/// Image description and format, enough to recreate the image anywhere.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct ImageRecord {
    /// `cl_mem_object_type` (e.g. `CL_MEM_OBJECT_IMAGE2D`).
    pub image_type: u32,
    pub channel_order: u32,
    pub channel_data_type: u32,
    pub width: u64,
    pub height: u64,
    pub depth: u64,
    pub array_size: u64,
    /// Bytes per pixel (`CL_IMAGE_ELEMENT_SIZE`); contents are stored tightly packed.
    pub element_size: u64,
}

impl ImageRecord {
    /// The `region` of the whole image for read/write calls: (width, height or array size,
    /// depth or array size), each at least 1.
    pub fn region(&self) -> (u64, u64, u64) {
        let one = |v: u64| v.max(1);
        match self.image_type {
            0x10F5 => (one(self.width), one(self.array_size), 1),
            0x10F3 => (one(self.width), one(self.height), one(self.array_size)),
            0x10F2 => (one(self.width), one(self.height), one(self.depth)),
            0x10F1 => (one(self.width), one(self.height), 1),
            _ => (one(self.width), 1, 1),
        }
    }

    /// Size in bytes of the image's tightly packed contents (saturating: a record's
    /// dimensions are checked against this by [`crate::validate`]).
    pub fn packed_size(&self) -> u64 {
        let (w, h, d) = self.region();
        w.saturating_mul(h)
            .saturating_mul(d)
            .saturating_mul(self.element_size)
    }
}

/// Which API call launched the kernel.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LaunchApi {
    NdRange,
    Task,
}

/// One kernel launch: everything needed to re-run it and check the result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LaunchRecord {
    /// Sequential id in the capture (0-based, in order of completion of the record).
    pub id: u64,
    /// Index of the enqueue among *all* launches the application made (filtered ones count).
    #[serde(default)]
    pub seq: u64,
    pub kernel: String,
    /// Blob holding the JSON [`ProgramRecord`].
    pub program: Hash,
    pub api: LaunchApi,
    pub work_dim: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_offset: Option<Vec<u64>>,
    pub global_size: Vec<u64>,
    /// `None` when the application passed NULL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_size: Option<Vec<u64>>,
    pub args: Vec<ArgRecord>,
    pub device: DeviceRecord,
    /// `cl_command_queue_properties` of the queue.
    #[serde(default)]
    pub queue_properties: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_site: Option<Site>,
    /// OS thread id of the caller.
    #[serde(default)]
    pub thread: u64,
    /// What the enqueue returned to the application.
    pub status: i32,
    /// Why this launch cannot be replayed exactly (empty = replayable).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_replayable: Vec<String>,
}
