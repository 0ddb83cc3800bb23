//! Engine 2 of `cltrap check`: the native instrumented engine. The launch's program is
//! rewritten by `cltrap_kernel::sanitize` (bounds, `__local` and inter-group `__global` races,
//! uninitialised `__local` reads), built for the real device and run there once with four
//! extra trailing arguments (report buffer, extents, two shadows); the records the kernel
//! wrote become the same [`Diagnostic`]s as Oclgrind's, so deduplication and every report are
//! shared.
//!
//! Why a worker process here too: an instrumented kernel can still crash or hang a driver;
//! the parent (`super::check`) runs [`worker_main`] in a child with a deadline.

use super::finding::{Access, Diagnostic, Family, Kind, Target};
use crate::executor::{Deriver, DeviceSelector, InputArg, LaunchInput, Session};
use crate::variant::{word_buffer, words, DiskCache, VariantCache};
use cltrap_capture::Capture;
use cltrap_kernel::sanitize::{
    races::{GLOBAL_SHADOW_WORDS, LOCAL_SHADOW_WORDS, MAX_GROUP_ITEMS},
    SanitizeMap, SanitizedKernel, Unchecked, FLAG_BOUNDS, FLAG_GLOBAL_RACES, FLAG_LOCAL_RACES,
    FLAG_UNINIT, HEADER_WORDS, KIND_GLOBAL_RACE, KIND_GROUP_GLOBAL_RACE, KIND_LOCAL_RACE,
    KIND_READ_OOB, KIND_UNINIT, KIND_WRITE_OOB, RECORD_WORDS,
};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Records a launch can keep; more findings are counted, not kept.
pub const CAPACITY: u32 = 4096;

/// Largest shadow (each of the two) the engine allocates, in bytes; past it, that shadow's
/// checks are off for the launch and the report says so.
const SHADOW_LIMIT: u64 = 1 << 29;

/// The switches for the device code, from the families asked for.
pub fn flags(families: &[Family]) -> u32 {
    let wants = |f: Family| families.is_empty() || families.contains(&f);
    let mut f = FLAG_BOUNDS;
    if wants(Family::Races) {
        f |= FLAG_GLOBAL_RACES | FLAG_LOCAL_RACES;
    }
    if wants(Family::Uninit) {
        f |= FLAG_UNINIT;
    }
    f
}

/// What a native worker tells its parent (one JSON line on stdout).
#[derive(Debug, Serialize, Deserialize)]
pub struct NativeReply {
    /// `ok`, `skipped`, `unsupported` (the pass or the build refused: fall back to Oclgrind)
    /// or `error`.
    pub outcome: String,
    /// The reason for anything but `ok`.
    pub message: String,
    /// Diagnostics from the records, one per record.
    pub diagnostics: Vec<Diagnostic>,
    /// What the checks do not see in this launch's kernel.
    pub unchecked: Vec<Unchecked>,
    /// Checks switched off for this launch, and why.
    pub notes: Vec<String>,
    /// Records the kernel wrote beyond the buffer's capacity (counted, not kept).
    pub dropped: u64,
    /// Device time of the instrumented kernel.
    pub kernel_ns: Option<u64>,
    /// Access sites of the kernel that are checked.
    pub checked_sites: usize,
    /// Device time of the uninstrumented kernel on the same inputs (`--baseline`).
    pub baseline_kernel_ns: Option<u64>,
}

impl NativeReply {
    /// No result (a worker killed at its deadline).
    pub fn empty() -> NativeReply {
        NativeReply::failed("error", String::new())
    }

    pub fn failed(outcome: &str, message: String) -> NativeReply {
        NativeReply {
            outcome: outcome.into(),
            message,
            diagnostics: vec![],
            unchecked: vec![],
            notes: vec![],
            dropped: 0,
            kernel_ns: None,
            checked_sites: 0,
            baseline_kernel_ns: None,
        }
    }
}

/// `cltrap check-worker DIR ID --engine native`: one launch, instrumented, on `device`; with
/// `baseline`, first once uninstrumented too (to measure what the instrumentation costs).
pub fn worker_main(dir: &Path, id: u64, flags: u32, device: &DeviceSelector, baseline: bool) -> u8 {
    let reply =
        worker(dir, id, flags, device, baseline).unwrap_or_else(|(o, m)| NativeReply::failed(o, m));
    super::print_reply(&reply)
}

fn worker(
    dir: &Path,
    id: u64,
    flags: u32,
    device: &DeviceSelector,
    baseline: bool,
) -> Result<NativeReply, (&'static str, String)> {
    let capture = Capture::open_keeping_damaged(dir).map_err(|e| ("error", e.to_string()))?;
    // The launch first: a capture without it is that error, whatever the device.
    capture.launch(id).map_err(|e| ("error", e.to_string()))?;
    // This child checks one launch and ends: the capture lives as long as it.
    let capture: &'static Capture = Box::leak(Box::new(capture));
    NativeEngine::open(device)?.check(capture, id, flags, baseline)
}

/// The deriver in `slot` over `capture`, made anew when the slot served another capture.
fn deriver_of<'s>(
    slot: &'s mut Option<(&'static Capture, Deriver<'static>)>,
    capture: &'static Capture,
) -> &'s mut Deriver<'static> {
    if !slot
        .as_ref()
        .is_some_and(|(c, _)| std::ptr::eq(*c, capture))
    {
        *slot = None;
    }
    &mut slot
        .get_or_insert_with(|| (capture, Deriver::new(capture)))
        .1
}

/// Why the native engine did not check a launch: `skipped`, `unsupported` or `error`, and
/// the message (what `NativeReply::failed` turns into a reply).
pub type EngineFailure = (&'static str, String);

fn fail(e: crate::executor::ExecError) -> EngineFailure {
    (if e.is_skip() { "skipped" } else { "error" }, e.to_string())
}

/// The native engine kept between launches: the device's session and each program's
/// instrumented build. A `check-worker` child makes one for its one launch; a campaign
/// worker of `cltrap check` keeps one for all the launches it is handed, so the driver is
/// initialised and each program built once per worker, not once per launch.
pub struct NativeEngine {
    session: Session,
    cache: VariantCache<SanitizeMap>,
    /// Re-creates inputs the capture keeps only as digests, on this session: kept from one
    /// launch to the next (with the capture it serves), so a worker handed launches in order
    /// re-executes each producer once, not the whole chain back to a stored content per launch
    /// (a 510-launch capture past its derive threshold took 50 s to check on 2 cores, against
    /// 5 s stored whole).
    deriver: Option<(&'static Capture, Deriver<'static>)>,
}

impl NativeEngine {
    /// Opens `device`.
    pub fn open(device: &DeviceSelector) -> Result<NativeEngine, EngineFailure> {
        let session = Session::open(device).map_err(fail)?;
        // Without a private cache folder (see `super::private`) the pass runs every time.
        let cache =
            VariantCache::with_disk(
                super::private::native_cache_dir()
                    .ok()
                    .map(|dir| DiskCache {
                        dir,
                        pass: "sanitize",
                    }),
            );
        Ok(NativeEngine {
            session,
            cache,
            deriver: None,
        })
    }

    /// The inputs of `record` that `capture` keeps only as digests, re-created on this
    /// engine's device by re-executing the launches that left them (none when it has none).
    pub fn derived(
        &mut self,
        capture: &'static Capture,
        record: &cltrap_capture::LaunchRecord,
    ) -> Result<Vec<(u32, std::sync::Arc<Vec<u8>>)>, String> {
        let d = deriver_of(&mut self.deriver, capture);
        let mut got: Vec<_> = d
            .derived(&self.session, record)
            .map_err(|e| e.to_string())?
            .into_iter()
            .collect();
        got.sort_by_key(|(arg, _)| *arg);
        Ok(got)
    }

    /// Checks launch `id` of `capture` with the checks `flags` asks for (and, with
    /// `baseline`, times it uninstrumented too).
    pub fn check(
        &mut self,
        capture: &'static Capture,
        id: u64,
        mut flags: u32,
        baseline: bool,
    ) -> Result<NativeReply, EngineFailure> {
        let record = capture.launch(id).map_err(|e| ("error", e.to_string()))?;
        // Inputs kept only as digests past the disk budget are re-created on this device.
        let input = deriver_of(&mut self.deriver, capture)
            .input(&self.session, record)
            .map_err(fail)?;
        let session = &self.session;
        let baseline_kernel_ns = if baseline {
            let program = capture
                .program(&record.program)
                .map_err(|e| ("error", e.to_string()))?;
            let built = session
                .build(capture, &program, &crate::executor::BuildOptions::default())
                .map_err(fail)?;
            // The second run's time: a device that compiles a kernel at its first enqueue
            // (PoCL) counts that compile in the first one.
            session.run(&built, &input, &[]).map_err(fail)?;
            session.run(&built, &input, &[]).map_err(fail)?.kernel_ns
        } else {
            None
        };
        let (variant, _) = self
            .cache
            .get(session, capture, &record.program, |src, options| {
                let model = cltrap_kernel::parse_program(src, options)?;
                let s = cltrap_kernel::sanitize::sanitize(&model)?;
                Ok((s.source, s.map))
            })
            // The launch itself is replayable (its input was restored above): whatever stops the
            // instrumented variant (not a source program, the pass, the device's compiler) is
            // something Oclgrind may still do.
            .map_err(|f| ("unsupported", f.full.clone()))?;
        let map = &variant.pass;
        let kernel = map
            .kernels
            .iter()
            .find(|k| k.name == input.kernel)
            .ok_or_else(|| {
                (
                    "unsupported",
                    format!("kernel {} is not in the instrumented program", input.kernel),
                )
            })?;
        let mut notes = Vec::new();
        if let Some(why) = &kernel.no_local_shadow {
            if flags & (FLAG_LOCAL_RACES | FLAG_UNINIT) != 0 {
                notes.push(format!(
                    "__local races and uninitialised reads are not checked: {why}"
                ));
            }
            flags &= !(FLAG_LOCAL_RACES | FLAG_UNINIT);
        }
        if flags & FLAG_UNINIT != 0 {
            for w in &kernel.unseen_writes {
                notes.push(format!(
                "uninitialised reads of `{}` are not checked: its write at line {} is not instrumented",
                w.name, w.line
            ));
            }
        }
        let layout = Layout::of(kernel, &input, &mut flags, &mut notes);
        let mut rep = vec![0u32; (HEADER_WORDS + CAPACITY * RECORD_WORDS) as usize];
        rep[1] = CAPACITY;
        rep[2] = flags;
        let extras = vec![
            word_buffer(&rep),
            InputArg::Buffer {
                mem: None,
                flags: opencl_sys::CL_MEM_READ_ONLY,
                bytes: layout
                    .extents
                    .iter()
                    .flat_map(|w| w.to_le_bytes())
                    .collect(),
            },
            zeros(layout.global_words),
            zeros(layout.local_words),
        ];
        if baseline {
            // Timed like the baseline: the second run (each starts from the same zeroed shadows).
            session.run(&variant.built, &input, &extras).map_err(fail)?;
        }
        let out = session.run(&variant.built, &input, &extras).map_err(fail)?;
        let rep = out
            .outputs
            .get(input.args.len())
            .and_then(|o| o.as_deref())
            .map(words)
            .ok_or(("error", "the report buffer did not come back".to_string()))?;
        let written = rep.first().copied().unwrap_or(0);
        let kept = written.min(CAPACITY);
        let source = &variant.original;
        let mut diagnostics = Vec::new();
        let mut unnamed = 0usize;
        for i in 0..kept {
            let at = (HEADER_WORDS + i * RECORD_WORDS) as usize;
            let Some(r) = rep.get(at..at + RECORD_WORDS as usize) else {
                break;
            };
            if let Some(d) = diagnostic(r, map, kernel, &input, &layout, source) {
                // A race is reported with both of its accesses or not at all: a record whose
                // other access was not yet published in the shadow (two groups updating one
                // entry at once) is counted, never shown as a race with one side.
                if d.kind == Kind::DataRace && d.second.is_none() {
                    unnamed += 1;
                    continue;
                }
                diagnostics.push(d);
            }
        }
        if unnamed > 0 {
            notes.push(format!(
            "{unnamed} race record(s) whose other access the shadow had not recorded were not reported"
        ));
        }
        let unchecked = map
            .unchecked
            .iter()
            .filter(|u| u.function == kernel.name || kernel.helpers.contains(&u.function))
            .cloned()
            .collect();
        Ok(NativeReply {
            outcome: "ok".into(),
            message: String::new(),
            diagnostics,
            unchecked,
            notes,
            dropped: (written - kept) as u64,
            kernel_ns: out.kernel_ns,
            // Its own sites and those of the instrumented helpers it reaches.
            checked_sites: map
                .sites
                .iter()
                .filter(|s| s.kernel == kernel.name || kernel.helpers.contains(&s.kernel))
                .count(),
            baseline_kernel_ns,
        })
    }
}

fn zeros(words: u64) -> InputArg {
    InputArg::Buffer {
        mem: None,
        flags: opencl_sys::CL_MEM_READ_WRITE,
        bytes: vec![0u8; (words.max(1) * 4) as usize],
    }
}

/// Sizes of the objects and where their shadows are.
struct Layout {
    /// The extents argument.
    extents: Vec<u64>,
    /// Bytes of each object (arguments, then statics).
    sizes: Vec<u64>,
    global_words: u64,
    local_words: u64,
}

impl Layout {
    fn of(
        kernel: &SanitizedKernel,
        input: &LaunchInput,
        flags: &mut u32,
        notes: &mut Vec<String>,
    ) -> Layout {
        let n = kernel.args as usize;
        let mut extents = vec![0u64; kernel.extents_len()];
        let mut sizes = Vec::new();
        let (mut global, mut local) = (0u64, 0u64);
        for (i, a) in input.args.iter().enumerate().take(n) {
            let (size, is_local) = match a {
                InputArg::Buffer { bytes, .. } => (bytes.len() as u64, false),
                InputArg::SubBuffer { size, .. } => (*size, false),
                InputArg::Local(b) => (*b, true),
                _ => (0, false),
            };
            sizes.push(size);
            extents[2 * i] = size;
            // One shadow entry per granule of the object (see `SanitizedKernel::granules`).
            let words = size.div_ceil(kernel.granule_bytes(i));
            if is_local {
                extents[2 * i + 1] = local;
                local += words * LOCAL_SHADOW_WORDS;
            } else if size > 0 {
                extents[2 * i + 1] = global;
                global += words * GLOBAL_SHADOW_WORDS;
            }
        }
        for (j, (_, bytes)) in kernel.statics.iter().enumerate() {
            sizes.push(bytes.unwrap_or(0));
            if let Some(b) = bytes {
                extents[2 * (n + j)] = *b;
                extents[2 * (n + j) + 1] = local;
                local += b.div_ceil(kernel.granule_bytes(n + j)) * LOCAL_SHADOW_WORDS;
            }
        }
        extents[kernel.stride_index()] = local;
        // Without a local size the device picks it: assume groups of one work-item.
        let groups: u64 = match &input.local_size {
            Some(l) => input
                .global_size
                .iter()
                .zip(l)
                .map(|(g, l)| g.div_ceil((*l).max(1)))
                .product(),
            None => input.global_size.iter().product(),
        };
        // The interval state holds local ids of 13 bits: larger groups are not race-checked.
        let group_items: u64 = input.local_size.iter().flatten().product();
        if group_items > MAX_GROUP_ITEMS && *flags & (FLAG_LOCAL_RACES | FLAG_GLOBAL_RACES) != 0 {
            notes.push(format!(
                "races are not checked: work-groups of {group_items} work-items are more than the race shadow can tell apart ({MAX_GROUP_ITEMS})"
            ));
            *flags &= !(FLAG_LOCAL_RACES | FLAG_GLOBAL_RACES);
        }
        let mut local_words = local.saturating_mul(groups);
        if local_words * 4 > SHADOW_LIMIT && *flags & (FLAG_LOCAL_RACES | FLAG_UNINIT) != 0 {
            notes.push(format!(
                "__local races and uninitialised reads are not checked: their shadow would take {} MiB",
                (local_words * 4) >> 20
            ));
            *flags &= !(FLAG_LOCAL_RACES | FLAG_UNINIT);
        }
        if *flags & (FLAG_LOCAL_RACES | FLAG_UNINIT) == 0 {
            local_words = 0;
            extents[kernel.stride_index()] = 0;
        }
        let mut global_words = global;
        if global_words * 4 > SHADOW_LIMIT && *flags & FLAG_GLOBAL_RACES != 0 {
            notes.push(format!(
                "__global races are not checked: their shadow would take {} MiB",
                (global_words * 4) >> 20
            ));
            *flags &= !FLAG_GLOBAL_RACES;
        }
        if *flags & FLAG_GLOBAL_RACES == 0 {
            global_words = 0;
            for i in 0..n {
                extents[2 * i + 1] = 0;
            }
        }
        Layout {
            extents,
            sizes,
            global_words,
            local_words,
        }
    }
}

/// One record as a diagnostic (`None` for a record that names no known site).
fn diagnostic(
    r: &[u32],
    map: &SanitizeMap,
    kernel: &SanitizedKernel,
    input: &LaunchInput,
    layout: &Layout,
    source: &str,
) -> Option<Diagnostic> {
    let site = map.sites.get(r[1] as usize)?;
    let obj = r[3] as usize;
    let offset = (r[4] as u64) | ((r[5] as u64) << 32);
    let global = [r[6] as u64, r[7] as u64, r[8] as u64];
    let group = [r[9] as u64, r[10] as u64, r[11] as u64];
    let local_size = input.local_size.clone();
    let local_of = |g: &[u64; 3], w: &[u64; 3]| {
        local_size.as_ref().map(|l| {
            let mut v = [0u64; 3];
            for d in 0..3 {
                let off = input
                    .global_offset
                    .as_ref()
                    .and_then(|o| o.get(d).copied())
                    .unwrap_or(0);
                let ls = l.get(d).copied().unwrap_or(1);
                v[d] = g[d].wrapping_sub(off).wrapping_sub(w[d] * ls);
            }
            v
        })
    };
    let code = |line: u32| {
        source
            .lines()
            .nth(line.saturating_sub(1) as usize)
            .unwrap_or("")
            .to_string()
    };
    let first = Access {
        line: site.line,
        column: site.column,
        code: code(site.line),
        global: Some(global),
        local: local_of(&global, &group),
        group: Some(group),
    };
    let other_site = r[2].checked_sub(1).and_then(|s| map.sites.get(s as usize));
    let object = if obj < kernel.args as usize {
        // A site in a helper names the helper's parameter; the object is the kernel's argument.
        kernel
            .arg_names
            .get(obj)
            .filter(|n| !n.is_empty())
            .cloned()
            .unwrap_or_else(|| site.object.clone())
    } else {
        kernel
            .statics
            .get(obj - kernel.args as usize)
            .map(|s| s.0.clone())
            .unwrap_or_else(|| site.object.clone())
    };
    let size = r[13];
    let target = Target {
        space: site.space.clone(),
        address: offset,
        size: Some(size),
        arg_index: (obj < kernel.args as usize).then_some(obj),
        arg_name: Some(object.clone()),
        offset,
        arg_size: layout.sizes.get(obj).copied(),
    };
    let mode = r[14];
    let verb = |m: u32| if m & 2 != 0 { "write" } else { "read" };
    let (kind, message, second) = match r[0] {
        KIND_READ_OOB | KIND_WRITE_OOB => {
            let kind = if r[0] == KIND_READ_OOB {
                Kind::InvalidRead
            } else {
                Kind::InvalidWrite
            };
            let what = if r[0] == KIND_READ_OOB { "read" } else { "write" };
            (
                kind,
                format!(
                    "Invalid {what} of size {size} at byte offset {} of `{object}` ({} bytes, {} memory)",
                    offset as i64,
                    layout.sizes.get(obj).copied().unwrap_or(0),
                    site.space
                ),
                None,
            )
        }
        KIND_LOCAL_RACE | KIND_GLOBAL_RACE | KIND_GROUP_GLOBAL_RACE => {
            let other_mode = if mode & 32 != 0 { 2 } else { 1 };
            let second = other_site.map(|s| {
                let (local, grp) = if r[0] != KIND_GLOBAL_RACE {
                    let lid = r[12].checked_sub(1).map(|l| {
                        let l = l as u64;
                        let ls = input.local_size.clone().unwrap_or_default();
                        let x = ls.first().copied().unwrap_or(1).max(1);
                        let y = ls.get(1).copied().unwrap_or(1).max(1);
                        [l % x, (l / x) % y, l / (x * y)]
                    });
                    (lid, Some(group))
                } else {
                    let g = r[12].checked_sub(1).filter(|g| *g != u32::MAX - 1).map(|g| {
                        let g = g as u64;
                        let counts: Vec<u64> = match &input.local_size {
                            Some(l) => input
                                .global_size
                                .iter()
                                .zip(l)
                                .map(|(a, b)| a.div_ceil((*b).max(1)))
                                .collect(),
                            None => input.global_size.clone(),
                        };
                        let x = counts.first().copied().unwrap_or(1).max(1);
                        let y = counts.get(1).copied().unwrap_or(1).max(1);
                        [g % x, (g / x) % y, g / (x * y)]
                    });
                    (None, g)
                };
                Access {
                    line: s.line,
                    column: s.column,
                    code: code(s.line),
                    global: None,
                    local,
                    group: grp,
                }
            });
            (
                Kind::DataRace,
                format!(
                    "{} data race ({}-{}) at byte offset {offset} of `{object}` ({} memory)",
                    if r[0] != KIND_GLOBAL_RACE {
                        "Work-group"
                    } else {
                        "Inter-work-group"
                    },
                    verb(other_mode),
                    verb(mode),
                    site.space
                ),
                second,
            )
        }
        // A write the pass did not instrument may have stored what this read reads.
        KIND_UNINIT if kernel.unseen_writes.iter().any(|w| w.object as usize == obj) => {
            return None
        }
        KIND_UNINIT => (
            Kind::Uninitialized,
            format!("Uninitialized read of size {size} at byte offset {offset} of `{object}` (local memory)"),
            None,
        ),
        _ => return None,
    };
    // An access written in a macro body is reported at the macro's use, naming the macro.
    let message = match &site.note {
        Some(note) => format!("{message}; {note}"),
        None => message,
    };
    Some(Diagnostic {
        kind,
        message,
        detail: site.note.iter().cloned().collect(),
        kernel: kernel.name.clone(),
        first: Some(first),
        second,
        target: Some(target),
        by: "native".into(),
    })
}
