//! Reduced executions: fuzzing a large captured launch on a few of its work-groups.
//!
//! A captured launch of a real application (an image filter over a frame, a neural-network
//! layer) has a million work-items and megabytes of buffers; running all of it for every
//! mutation gives a handful of executions per second. Here a campaign runs instead:
//!
//! - **a subset of the work-groups** ([`Reduction`]): the corner groups of the group grid (the
//!   first and the last group, and the other corners: image borders, the last row) plus
//!   [`RANDOM_GROUPS`] groups drawn from the campaign seed, launched as one row of groups of
//!   the real local size. The program is rewritten by
//!   [`cltrap_kernel::permute::subset_groups`], so each of them computes what it computes in
//!   the whole launch (same group ids, global ids, group counts and global sizes);
//! - **without re-uploading**: the launch's memory objects stay in the worker
//!   ([`crate::executor::Resident`]); each run names, per buffer, a content *version* the
//!   worker already holds plus the bytes the mutations changed ([`Lineage`]).
//!
//! Coverage measured on the subset drives the campaign. A subset runs a part of the real
//! launch, so what it covers the whole launch covers too; every case kept this way is then
//! run on the whole launch before it is written ([`super::campaign::Campaign::confirm`]),
//! and that run's coverage and outputs are what the suite records.
//!
//! One build serves both: `permute::full_table` makes the same program run the whole launch.
//! The campaign mutates a kept case in place and undoes it (`mutate::mutate_tracked`), so a
//! reduced execution copies no buffer; a buffer the kernel reads and writes is copied back
//! from its pristine version on the device before every run.

use super::mutate::Rng;
use crate::executor::{
    Content, Define, ImageUse, InputArg, LaunchInput, MemState, Patch, ResidentLayout, ResidentRun,
    SlotLayout, ValueArg,
};
use cltrap_kernel::interface::{ArgKind, KernelInterface, Role};
use std::collections::HashMap;

/// Launches with at least this many work-items are reduced by default. Below it a whole
/// launch of a simple kernel runs on the PoCL CPU in about the time of a reduced run plus
/// its bookkeeping (a few hundred microseconds), and exact full coverage is worth more.
pub const MIN_WORK_ITEMS: u64 = 65_536;
/// Groups drawn at random (from the campaign seed) besides the corner groups.
pub const RANDOM_GROUPS: usize = 4;
/// Versions of one argument's contents a worker keeps at most.
pub const KEPT_VERSIONS: usize = 8;
/// Contents of at least this many bytes go to a worker through a file, not its pipe.
const FILE_CONTENT: usize = 64 << 10;
/// A case whose patches cover more than this share of a buffer (or more than
/// [`MAX_PATCHES`] ranges) gets a version of its own instead.
const PATCH_SHARE: usize = 8;
const MAX_PATCHES: usize = 64;

/// The work-groups a reduced execution runs, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Reduction {
    /// The real launch's global size.
    pub real_global: Vec<u64>,
    /// Work-group size (the launch's, or chosen when the launch left it to the driver).
    pub local: Vec<u64>,
    /// Whether `local` was chosen here (the application passed NULL).
    pub chosen_local: bool,
    /// Work-groups of the real launch per dimension.
    pub real_groups: [u64; 3],
    /// Logical groups run (linear ids), in physical order: corners first.
    pub groups: Vec<u64>,
    /// How many of `groups` are corners.
    pub corners: usize,
    /// The reduced launch's global size: `groups.len()` groups along dimension 0.
    pub global: Vec<u64>,
    /// The subset table passed as the program's extra argument.
    pub table: Vec<u32>,
}

fn largest_divisor_up_to(n: u64, cap: u64) -> u64 {
    (1..=cap.min(n).max(1))
        .rev()
        .find(|d| n.is_multiple_of(*d))
        .unwrap_or(1)
}

impl Reduction {
    /// The reduction of launches shaped like `input` for campaign seed `seed`, or why
    /// there is none.
    pub fn plan(input: &LaunchInput, seed: u64) -> Result<Reduction, String> {
        let dim = (input.work_dim as usize).clamp(1, 3);
        let global: Vec<u64> = input.global_size.iter().take(dim).copied().collect();
        if global.len() < dim || global.contains(&0) {
            return Err("the launch has an empty dimension".into());
        }
        let items: u64 = global.iter().product();
        if items < MIN_WORK_ITEMS {
            return Err(format!(
                "{items} work-items (launches of {MIN_WORK_ITEMS} or more are reduced)"
            ));
        }
        let (local, chosen_local) = match &input.local_size {
            Some(l) => {
                let l: Vec<u64> = l.iter().take(dim).copied().collect();
                if l.len() < dim || l.contains(&0) {
                    return Err("the launch's local size is malformed".into());
                }
                if global.iter().zip(&l).any(|(g, l)| !g.is_multiple_of(*l)) {
                    return Err(
                        "its work-groups are not all the same size (non-uniform NDRange)".into(),
                    );
                }
                (l, false)
            }
            None => {
                let caps: &[u64] = match dim {
                    1 => &[64],
                    2 => &[16, 16],
                    _ => &[8, 8, 4],
                };
                let l = global
                    .iter()
                    .zip(caps)
                    .map(|(g, c)| largest_divisor_up_to(*g, *c))
                    .collect();
                (l, true)
            }
        };
        let n = cltrap_kernel::permute::group_counts(&global, &local);
        let total = n[0] * n[1] * n[2];
        let mut groups: Vec<u64> = Vec::new();
        for corner in 0..(1u64 << dim) {
            let mut g = [0u64; 3];
            for d in 0..dim {
                if corner & (1 << d) != 0 {
                    g[d] = n[d] - 1;
                }
            }
            let linear = g[0] + n[0] * (g[1] + n[1] * g[2]);
            if !groups.contains(&linear) {
                groups.push(linear);
            }
        }
        let corners = groups.len();
        let mut rng = Rng::new(seed ^ 0x5B5E_7C0F_F1EE_D5E7);
        let want = (corners + RANDOM_GROUPS).min(total as usize);
        while groups.len() < want {
            let g = rng.below(total);
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        if groups.len() as u64 * 2 > total {
            return Err(format!(
                "it has only {total} work-groups (a subset of {} would be most of them)",
                groups.len()
            ));
        }
        let mut g3 = [1u64; 3];
        g3[..dim].copy_from_slice(&global);
        let table = cltrap_kernel::permute::subset_table(n, g3, &groups)
            .ok_or("its sizes do not fit the 32-bit subset table")?;
        let mut reduced = local.clone();
        reduced[0] *= groups.len() as u64;
        Ok(Reduction {
            real_global: global,
            local,
            chosen_local,
            real_groups: n,
            groups,
            corners,
            global: reduced,
            table,
        })
    }

    /// Whether `input` has the geometry this reduction was made for.
    pub fn fits(&self, input: &LaunchInput) -> bool {
        let dim = self.real_global.len();
        input.work_dim as usize == dim
            && input.global_size.get(..dim) == Some(&self.real_global[..])
            && match &input.local_size {
                Some(l) => !self.chosen_local && l.get(..dim) == Some(&self.local[..]),
                None => self.chosen_local,
            }
    }

    /// Work-items the reduced launch runs.
    pub fn work_items(&self) -> u64 {
        self.global.iter().product()
    }

    /// One line for the user: which groups run.
    pub fn describe(&self) -> String {
        let total: u64 = self.real_groups.iter().product();
        let items: u64 = self.real_global.iter().product();
        let sizes = |v: &[u64]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join("x")
        };
        let list: Vec<String> = self.groups.iter().map(u64::to_string).collect();
        format!(
            "reduced executions: {} of {total} work-groups of {}{} ({} of {items} work-items: \
             the {} corner groups and {} drawn from the seed; linear ids {}); every kept case \
             is confirmed on the whole launch (--full-launches runs every group)",
            self.groups.len(),
            sizes(&self.local),
            if self.chosen_local {
                " work-items, chosen by cltrap (the launch left it to the driver)"
            } else {
                " work-items"
            },
            self.work_items(),
            self.corners,
            self.groups.len() - self.corners,
            list.join(" ")
        )
    }
}

/// The resident layout of launches shaped like `input`, or why it has none: sub-buffers and
/// memory objects passed twice would alias, which versions and patches cannot express.
pub fn layout(iface: &KernelInterface, input: &LaunchInput) -> Result<ResidentLayout, String> {
    let mut args = Vec::with_capacity(input.args.len());
    let mut seen = Vec::new();
    for (i, a) in input.args.iter().enumerate() {
        let decl = iface.args.get(i);
        if let InputArg::Buffer { mem: Some(m), .. } | InputArg::Image { mem: Some(m), .. } = a {
            if seen.contains(m) {
                return Err(format!("argument {i} is a memory object passed twice"));
            }
            seen.push(*m);
        }
        args.push(match a {
            InputArg::Scalar(_) | InputArg::Local(_) => SlotLayout::Value,
            InputArg::NullBuffer => SlotLayout::Null,
            InputArg::Buffer { flags, bytes, .. } => SlotLayout::Buffer {
                size: bytes.len() as u64,
                flags: *flags,
                // Only what the model shows never read back needs no restoring.
                restore: !matches!(
                    decl.map(|d| &d.kind),
                    Some(ArgKind::Buffer {
                        role: Role::Input | Role::Output,
                        ..
                    })
                ),
            },
            InputArg::Image { flags, image, .. } => SlotLayout::Image {
                flags: *flags,
                image: image.clone(),
                usage: match decl.map(|d| d.ty.as_str()).unwrap_or("") {
                    t if t.contains("write_only") => ImageUse::Write,
                    t if t.contains("read_write") => ImageUse::ReadWrite,
                    _ => ImageUse::Read,
                },
            },
            InputArg::Sampler {
                normalized_coords,
                addressing_mode,
                filter_mode,
            } => SlotLayout::Sampler {
                normalized_coords: *normalized_coords,
                addressing_mode: *addressing_mode,
                filter_mode: *filter_mode,
            },
            InputArg::SubBuffer { .. } => {
                return Err(format!("argument {i} is a sub-buffer"));
            }
        });
    }
    Ok(ResidentLayout {
        kernel: input.kernel.clone(),
        args,
    })
}

/// Whether `input`'s memory arguments have `layout`'s kinds and sizes.
pub fn matches(layout: &ResidentLayout, input: &LaunchInput) -> bool {
    input.kernel == layout.kernel
        && input.args.len() == layout.args.len()
        && input
            .args
            .iter()
            .zip(&layout.args)
            .all(|(a, l)| match (a, l) {
                (InputArg::Scalar(_) | InputArg::Local(_), SlotLayout::Value) => true,
                (InputArg::NullBuffer, SlotLayout::Null) => true,
                (
                    InputArg::Buffer { bytes, flags, .. },
                    SlotLayout::Buffer { size, flags: f, .. },
                ) => bytes.len() as u64 == *size && flags == f,
                (
                    InputArg::Image { image, flags, .. },
                    SlotLayout::Image {
                        image: i, flags: f, ..
                    },
                ) => image == i && flags == f,
                (InputArg::Sampler { .. }, SlotLayout::Sampler { .. }) => a_sampler_eq(a, l),
                _ => false,
            })
}

fn a_sampler_eq(a: &InputArg, l: &SlotLayout) -> bool {
    matches!(
        (a, l),
        (
            InputArg::Sampler { normalized_coords: n, addressing_mode: m, filter_mode: f },
            SlotLayout::Sampler { normalized_coords: n2, addressing_mode: m2, filter_mode: f2 },
        ) if n == n2 && m == m2 && f == f2
    )
}

/// Byte ranges (start, length; sorted, disjoint) of a buffer.
pub type Ranges = Vec<(usize, usize)>;

/// Where a case's memory contents come from: per argument, a version and the byte ranges
/// in which the case differs from it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lineage {
    /// Per argument (memory arguments only).
    pub args: Vec<Option<(u64, Ranges)>>,
}

/// Adds `[at, at + len)` to sorted disjoint `ranges`, merging what touches.
pub fn add_range(ranges: &mut Vec<(usize, usize)>, at: usize, len: usize) {
    if len == 0 {
        return;
    }
    let (mut lo, mut hi) = (at, at + len);
    let mut out = Vec::with_capacity(ranges.len() + 1);
    let mut placed = false;
    for &(s, l) in ranges.iter() {
        let e = s + l;
        if e < lo {
            out.push((s, l));
        } else if hi < s {
            if !placed {
                out.push((lo, hi - lo));
                placed = true;
            }
            out.push((s, l));
        } else {
            lo = lo.min(s);
            hi = hi.max(e);
        }
    }
    if !placed {
        out.push((lo, hi - lo));
    }
    out.sort_unstable();
    *ranges = out;
}

/// The parent side of resident executions: the layout, every content version made so far,
/// and which versions the current worker holds.
#[derive(Debug, Clone)]
pub struct Residency {
    /// The memory objects.
    pub layout: ResidentLayout,
    /// The reduction.
    pub reduction: Reduction,
    /// Contents per (argument, version).
    contents: HashMap<(usize, u64), Vec<u8>>,
    /// Versions per argument, oldest first.
    versions: HashMap<usize, Vec<u64>>,
    next_version: u64,
    /// The worker generation `held` describes.
    generation: Option<usize>,
    /// Versions the worker holds per argument, least recently used first.
    held: HashMap<usize, Vec<u64>>,
    /// Where large contents are written for workers (removed with the last clone).
    files: std::sync::Arc<ContentDir>,
}

/// A private directory of content files, removed when dropped.
#[derive(Debug)]
struct ContentDir(std::path::PathBuf);

impl ContentDir {
    /// Made at once, exclusively and private (mode 0700): a predictable name in `/tmp` would
    /// let another user plant the files a worker reads as a kernel's inputs. Where none can
    /// be made, a path no file can be written below (contents then travel inline).
    fn new() -> ContentDir {
        match crate::check::private::temp_dir("cltrap-fuzz-") {
            Ok(d) => ContentDir(d.keep()),
            Err(_) => ContentDir(std::path::PathBuf::from("/dev/null/cltrap-fuzz")),
        }
    }
}

impl Drop for ContentDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn mem_bytes(a: &InputArg) -> Option<&[u8]> {
    match a {
        InputArg::Buffer { bytes, .. } | InputArg::Image { bytes, .. } => Some(bytes),
        _ => None,
    }
}

impl Residency {
    /// A residency for launches with `layout`, reduced by `reduction`.
    pub fn new(layout: ResidentLayout, reduction: Reduction) -> Residency {
        Residency {
            layout,
            reduction,
            contents: HashMap::new(),
            versions: HashMap::new(),
            next_version: 1,
            generation: None,
            held: HashMap::new(),
            files: std::sync::Arc::new(ContentDir::new()),
        }
    }

    /// How a worker gets version `v` of argument `arg`: large contents through a file
    /// written once (a restarted worker reads it again), small ones inline.
    fn content(&self, arg: usize, v: u64) -> Option<Content> {
        let c = self.contents.get(&(arg, v))?;
        if c.len() < FILE_CONTENT {
            return Some(Content::Inline(c.clone()));
        }
        let path = self.files.0.join(format!("{arg}-{v}"));
        if !path.exists() {
            let tmp = self.files.0.join(format!("{arg}-{v}.tmp"));
            let written = std::fs::create_dir_all(&self.files.0)
                .and_then(|_| std::fs::write(&tmp, c))
                .and_then(|_| std::fs::rename(&tmp, &path));
            if written.is_err() {
                return Some(Content::Inline(c.clone()));
            }
        }
        Some(Content::File(path))
    }

    fn version_of(&mut self, arg: usize, bytes: &[u8]) -> u64 {
        if let Some(v) = self.versions.get(&arg).and_then(|vs| {
            vs.iter()
                .find(|v| self.contents.get(&(arg, **v)).map(Vec::as_slice) == Some(bytes))
        }) {
            return *v;
        }
        let v = self.next_version;
        self.next_version += 1;
        self.contents.insert((arg, v), bytes.to_vec());
        self.versions.entry(arg).or_default().push(v);
        v
    }

    /// The lineage of a whole input (a seed or an input class): each content is a version.
    pub fn root(&mut self, input: &LaunchInput) -> Lineage {
        let mut args = Vec::with_capacity(input.args.len());
        for (i, a) in input.args.iter().enumerate() {
            args.push(mem_bytes(a).map(|b| (self.version_of(i, b), Vec::new())));
        }
        Lineage { args }
    }

    /// `parent`'s lineage plus `[at, at + len)` of argument `arg` changed (in `input`, the
    /// child). A buffer patched too much becomes a version of its own.
    pub fn child(
        &mut self,
        parent: &Lineage,
        input: &LaunchInput,
        changed: Option<(usize, usize, usize)>,
    ) -> Lineage {
        let mut l = parent.clone();
        if let Some((arg, at, len)) = changed {
            let size = input
                .args
                .get(arg)
                .and_then(mem_bytes)
                .map_or(0, <[u8]>::len);
            if let Some(Some((_, ranges))) = l.args.get_mut(arg) {
                add_range(ranges, at, len);
                let patched: usize = ranges.iter().map(|r| r.1).sum();
                if ranges.len() > MAX_PATCHES || patched * PATCH_SHARE > size {
                    if let Some(b) = input.args.get(arg).and_then(mem_bytes) {
                        let v = self.version_of(arg, b);
                        l.args[arg] = Some((v, Vec::new()));
                    }
                }
            }
        }
        l
    }

    /// The run of `input` (whose contents `lineage` describes) on the reduced launch, with
    /// `extras` (counters, then the subset table) and `read_back` bytes of counters wanted,
    /// for the worker of `generation`.
    pub fn run(
        &mut self,
        input: &LaunchInput,
        lineage: &Lineage,
        extras: Vec<Vec<u8>>,
        read_back: usize,
        generation: usize,
    ) -> ResidentRun {
        if self.generation != Some(generation) {
            self.generation = Some(generation);
            self.held.clear();
        }
        let mut values = Vec::new();
        let mut mems = Vec::new();
        let mut define = Vec::new();
        let mut evict = Vec::new();
        for (i, a) in input.args.iter().enumerate() {
            match a {
                InputArg::Scalar(b) => values.push((i, ValueArg::Scalar(b.clone()))),
                InputArg::Local(n) => values.push((i, ValueArg::Local(*n))),
                _ => {}
            }
            let (Some(bytes), Some(Some((version, ranges)))) = (mem_bytes(a), lineage.args.get(i))
            else {
                continue;
            };
            let held = self.held.entry(i).or_default();
            if let Some(at) = held.iter().position(|v| v == version) {
                let v = held.remove(at);
                held.push(v);
            } else {
                if held.len() >= KEPT_VERSIONS {
                    evict.push((i, held.remove(0)));
                }
                held.push(*version);
                if let Some(content) = self.content(i, *version) {
                    define.push(Define {
                        arg: i,
                        version: *version,
                        content,
                    });
                }
            }
            let patches = ranges
                .iter()
                .filter_map(|(at, len)| {
                    bytes.get(*at..at + len).map(|b| Patch {
                        offset: *at as u64,
                        bytes: b.to_vec(),
                    })
                })
                .collect();
            mems.push(MemState {
                arg: i,
                version: *version,
                patches,
            });
        }
        ResidentRun {
            work_dim: input.work_dim,
            global_offset: input.global_offset.clone(),
            global_size: self.reduction.global.clone(),
            local_size: Some(self.reduction.local.clone()),
            values,
            define,
            evict,
            mems,
            extras,
            read_back,
        }
    }

    /// Forgets which versions the worker holds (it was restarted or failed a run).
    pub fn forget_worker(&mut self) {
        self.generation = None;
        self.held.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(global: Vec<u64>, local: Option<Vec<u64>>) -> LaunchInput {
        LaunchInput {
            kernel: "k".into(),
            work_dim: global.len() as u32,
            global_offset: None,
            global_size: global,
            local_size: local,
            args: vec![],
            stand_ins: vec![],
        }
    }

    #[test]
    fn corners_then_seeded_groups_of_the_real_size() {
        let r = Reduction::plan(&launch(vec![1920, 1080], Some(vec![16, 8])), 1).unwrap();
        assert_eq!(r.real_groups, [120, 135, 1]);
        assert_eq!(&r.groups[..4], &[0, 119, 120 * 134, 120 * 135 - 1]);
        assert_eq!(r.groups.len(), 4 + RANDOM_GROUPS);
        assert_eq!(r.global, vec![16 * 8, 8]);
        assert_eq!(&r.table[..7], &[1, 120, 135, 1, 1920, 1080, 1]);
        assert_eq!(
            Reduction::plan(&launch(vec![1920, 1080], Some(vec![16, 8])), 1).unwrap(),
            r,
            "the same seed, the same groups"
        );
        let other = Reduction::plan(&launch(vec![1920, 1080], Some(vec![16, 8])), 2).unwrap();
        assert_ne!(other.groups, r.groups);
        // NULL local: chosen, dividing the global size.
        let c = Reduction::plan(&launch(vec![1920, 1080], None), 1).unwrap();
        assert!(c.chosen_local);
        assert_eq!(c.local, vec![16, 15]);
        assert!(Reduction::plan(&launch(vec![1000], None), 1).is_err());
        assert!(Reduction::plan(&launch(vec![1 << 20], Some(vec![1 << 19])), 1).is_err());
        assert!(Reduction::plan(&launch(vec![100_000], Some(vec![64])), 1).is_err());
    }

    #[test]
    fn ranges_merge() {
        let mut r = vec![];
        add_range(&mut r, 10, 4);
        add_range(&mut r, 0, 2);
        add_range(&mut r, 14, 2);
        add_range(&mut r, 30, 1);
        assert_eq!(r, vec![(0, 2), (10, 6), (30, 1)]);
        add_range(&mut r, 1, 29);
        assert_eq!(r, vec![(0, 31)]);
    }
}
