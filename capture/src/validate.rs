//! The limits an untrusted capture's records must keep, checked once where a record is read.
//!
//! Why: a capture travels (bug reports, CI artifacts, shared folders), so nothing in it is
//! trusted. A field that becomes a path must be a digest (never `/etc/passwd`), a size that
//! becomes an allocation or an NDRange must be one a device could have run, and a string
//! that a report or a listing prints must be of sane length. Every rule is here, so the
//! reader applies the same ones to every record and every consumer (replay, cover, check,
//! export, list, show) sees only records that keep them.

use crate::model::{
    ArgRecord, Content, DeviceRecord, DigestKind, ImageRecord, Includes, LaunchRecord, Manifest,
    MemId, ProgramOrigin, ProgramRecord, Site,
};
use std::collections::HashMap;
use std::path::{Component, Path};

/// Longest kernel name (an OpenCL C identifier).
pub const MAX_KERNEL_NAME: usize = 1024;
/// Longest free-text field (argument names and types, device names, notes, paths).
pub const MAX_TEXT: usize = 4096;
/// Most arguments of one kernel.
pub const MAX_ARGS: usize = 4096;
/// Most work-items of one launch (the product of the global sizes): 2^31. Far above what
/// the captured applications launch (a 4096x4096 image is 2^24), far below what only a
/// damaged record asks for; a device runs a launch this large for minutes.
pub const MAX_WORK_ITEMS: u64 = 1 << 31;
/// Most work-items of one work-group (the product of the local sizes).
pub const MAX_GROUP_ITEMS: u64 = 1 << 20;
/// Largest buffer or image, in bytes.
pub const MAX_OBJECT_BYTES: u64 = 1 << 36;
/// Largest by-value argument, in bytes.
pub const MAX_SCALAR_BYTES: usize = 1 << 16;
/// Largest `__local` allocation, in bytes.
pub const MAX_LOCAL_BYTES: u64 = 1 << 30;
/// Largest image dimension, in pixels.
pub const MAX_IMAGE_DIM: u64 = 1 << 20;
/// Most notes, sources, devices, included files and the like in one record.
pub const MAX_ITEMS: usize = 1 << 16;
/// Longest build options string, in bytes (kept with the options' own checks).
pub use crate::options::MAX_OPTIONS;

pub use crate::hex::is_digest;

/// A digest of `algo`'s shape (blake3: 64 lower-case hex digits; dd128: 32).
fn is_digest_of(algo: DigestKind, s: &str) -> bool {
    match algo {
        DigestKind::Blake3 => is_digest(s),
        DigestKind::Dd128 => {
            s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        }
    }
}

/// Whether `p` is an absolute path with no `..` component, no NUL and of sane length: a path
/// that stays below any folder it is mirrored into (`/a/b` → `MIRROR/a/b`).
pub fn is_confined_absolute(p: &str) -> bool {
    p.starts_with('/')
        && p.len() <= MAX_TEXT
        && !p.contains('\0')
        && Path::new(p)
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

/// Whether `name` is a relative path below the folder it is put in: not empty, not absolute,
/// no `..` component, no NUL, of sane length. Why: an in-memory header's name passed to
/// `clCompileProgram` becomes a file that implementations write into a temporary folder
/// (PoCL writes `TMP/NAME`, creating its folders), so `../../x` would write outside it.
pub fn is_confined_relative(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('/')
        && name.len() <= MAX_TEXT
        && !name.contains('\0')
        && Path::new(name)
            .components()
            .all(|c| matches!(c, Component::CurDir | Component::Normal(_)))
}

fn text(what: &str, s: &str) -> Result<(), String> {
    if s.len() > MAX_TEXT {
        return Err(format!(
            "{what} is {} bytes long (at most {MAX_TEXT})",
            s.len()
        ));
    }
    Ok(())
}

fn digest(what: &str, s: &str) -> Result<(), String> {
    if !is_digest(s) {
        return Err(format!(
            "{what} {:?} is not a digest (64 lower-case hex digits)",
            clip(s)
        ));
    }
    Ok(())
}

fn count(what: &str, n: usize, max: usize) -> Result<(), String> {
    if n > max {
        return Err(format!("{what}: {n} (at most {max})"));
    }
    Ok(())
}

/// At most 80 characters of `s`, for an error message about it.
fn clip(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Whether `s` is an OpenCL C identifier (what a kernel name is).
fn is_identifier(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// Checks an NDRange as `clEnqueueNDRangeKernel` would take it: 1 to 3 dimensions, a size
/// (and offset, local size when given) per dimension, no local size of 0 (a global size of 0
/// is legal since OpenCL 2.1), at most [`MAX_WORK_ITEMS`] work-items and
/// [`MAX_GROUP_ITEMS`] per group, offsets that do not wrap. (Whether a local size must divide
/// the global size depends on the OpenCL version the program was built for — 2.0 allows
/// non-uniform work-groups — so that rule is left to the driver, which refuses it cleanly.)
pub fn check_geometry(
    work_dim: u32,
    global_offset: Option<&[u64]>,
    global_size: &[u64],
    local_size: Option<&[u64]>,
) -> Result<(), String> {
    if !(1..=3).contains(&work_dim) {
        return Err(format!("work_dim is {work_dim} (OpenCL allows 1 to 3)"));
    }
    let dim = work_dim as usize;
    let same = |what: &str, n: usize| {
        if n == dim {
            Ok(())
        } else {
            Err(format!(
                "{what} has {n} dimension(s) but work_dim is {work_dim}"
            ))
        }
    };
    same("global_size", global_size.len())?;
    let mut items: u64 = 1;
    // A global size of 0 is legal since OpenCL 2.1 (the command does nothing), and the
    // shim records such launches as the application made them.
    for &g in global_size {
        items = items.saturating_mul(g);
    }
    if items > MAX_WORK_ITEMS {
        return Err(format!(
            "global size {global_size:?} is {items} work-items (at most {MAX_WORK_ITEMS})"
        ));
    }
    if let Some(offset) = global_offset {
        same("global_offset", offset.len())?;
        if offset
            .iter()
            .zip(global_size)
            .any(|(o, g)| o.checked_add(*g).is_none())
        {
            return Err(format!(
                "global offset {offset:?} plus global size {global_size:?} overflows"
            ));
        }
    }
    if let Some(local) = local_size {
        same("local_size", local.len())?;
        if local.contains(&0) {
            return Err(format!("local size {local:?} has a 0"));
        }
        let group = local.iter().fold(1u64, |a, l| a.saturating_mul(*l));
        if group > MAX_GROUP_ITEMS {
            return Err(format!(
                "local size {local:?} is {group} work-items per group (at most {MAX_GROUP_ITEMS})"
            ));
        }
    }
    Ok(())
}

fn content(what: &str, c: &Content, size: u64) -> Result<(), String> {
    match c {
        Content::Blob { hash, size: s } => {
            digest(what, hash)?;
            if *s != size {
                return Err(format!("{what} holds {s} bytes but the object has {size}"));
            }
        }
        Content::Digest {
            hash,
            size: s,
            algo,
        } => {
            if !is_digest_of(*algo, hash) {
                return Err(format!("{what} {:?} is not a digest", clip(hash)));
            }
            if *s != size {
                return Err(format!("{what} holds {s} bytes but the object has {size}"));
            }
        }
        Content::Missing { note } => text(what, note)?,
    }
    Ok(())
}

fn site(what: &str, s: &Site) -> Result<(), String> {
    text(what, &s.module)?;
    text(what, s.symbol.as_deref().unwrap_or(""))?;
    text(what, s.location.as_deref().unwrap_or(""))
}

fn device(d: &DeviceRecord) -> Result<(), String> {
    for s in [
        &d.platform,
        &d.name,
        &d.vendor,
        &d.driver_version,
        &d.version,
    ] {
        text("a device name", s)?;
    }
    Ok(())
}

/// Checks an image description: a type OpenCL has, an element of 1 to 16 bytes, dimensions
/// of at most [`MAX_IMAGE_DIM`] and contents of at most [`MAX_OBJECT_BYTES`].
fn image(im: &ImageRecord) -> Result<(), String> {
    if !(0x10F1..=0x10F6).contains(&im.image_type) {
        return Err(format!(
            "image type {:#x} is not an OpenCL image type",
            im.image_type
        ));
    }
    if !(1..=16).contains(&im.element_size) {
        return Err(format!(
            "image element size {} is not 1 to 16 bytes",
            im.element_size
        ));
    }
    for d in [im.width, im.height, im.depth, im.array_size] {
        if d > MAX_IMAGE_DIM {
            return Err(format!(
                "image dimension {d} is larger than {MAX_IMAGE_DIM}"
            ));
        }
    }
    if im.packed_size() > MAX_OBJECT_BYTES {
        return Err(format!(
            "the image is {} bytes (at most {MAX_OBJECT_BYTES})",
            im.packed_size()
        ));
    }
    Ok(())
}

impl Manifest {
    /// Checks the manifest's strings against the limits above.
    pub fn validate(&self) -> Result<(), String> {
        text("writer", &self.writer)?;
        text("buffer_mode", &self.buffer_mode)?;
        count("argv entries", self.argv.len(), MAX_ITEMS)?;
        let total: usize = self.argv.iter().map(String::len).sum();
        count("bytes of argv", total, 1 << 20)
    }
}

impl LaunchRecord {
    /// Checks the record against every limit of this module: a kernel name that is an
    /// identifier, a program that is a digest, a geometry `clEnqueueNDRangeKernel` takes
    /// ([`check_geometry`]), arguments numbered in order with sane sizes whose contents
    /// match their object's size, sub-buffers inside their parent and never their own
    /// parent, one size per memory object. Err: what is wrong, one sentence part.
    pub fn validate(&self) -> Result<(), String> {
        if self.kernel.len() > MAX_KERNEL_NAME || !is_identifier(&self.kernel) {
            return Err(format!(
                "kernel name {:?} is not an OpenCL C identifier of at most {MAX_KERNEL_NAME} bytes",
                clip(&self.kernel)
            ));
        }
        digest("program", &self.program)?;
        check_geometry(
            self.work_dim,
            self.global_offset.as_deref(),
            &self.global_size,
            self.local_size.as_deref(),
        )?;
        device(&self.device)?;
        if let Some(s) = &self.launch_site {
            site("the launch site", s)?;
        }
        count("notes", self.not_replayable.len(), 64)?;
        for n in &self.not_replayable {
            text("a note", n)?;
        }
        count("arguments", self.args.len(), MAX_ARGS)?;
        // Per memory object: its size and parent, the same wherever it appears.
        let mut objects: HashMap<MemId, (u64, Option<(MemId, u64)>)> = HashMap::new();
        for (i, a) in self.args.iter().enumerate() {
            let info = a.info();
            let what = format!("argument {i}");
            if info.index as usize != i {
                return Err(format!("{what} is numbered {}", info.index));
            }
            for s in [
                &info.name,
                &info.type_name,
                &info.address_space,
                &info.qualifiers,
            ] {
                text(&what, s)?;
            }
            match a {
                ArgRecord::Scalar { bytes, .. } => {
                    let n = crate::hex::decode(bytes).map(|b| b.len());
                    if !matches!(n, Some(1..=MAX_SCALAR_BYTES)) {
                        return Err(format!(
                            "{what}'s value is not 1 to {MAX_SCALAR_BYTES} bytes in hex"
                        ));
                    }
                }
                ArgRecord::Local { size, .. } => {
                    if !(1..=MAX_LOCAL_BYTES).contains(size) {
                        return Err(format!(
                            "{what} is a __local allocation of {size} bytes (1 to {MAX_LOCAL_BYTES})"
                        ));
                    }
                }
                ArgRecord::Buffer {
                    mem,
                    size,
                    sub_of,
                    before,
                    after,
                    ..
                } => {
                    if !(1..=MAX_OBJECT_BYTES).contains(size) {
                        return Err(format!(
                            "{what} is a buffer of {size} bytes (1 to {MAX_OBJECT_BYTES})"
                        ));
                    }
                    if let Some((parent, origin)) = sub_of {
                        if parent == mem {
                            return Err(format!("{what} is a sub-buffer of itself"));
                        }
                        if origin
                            .checked_add(*size)
                            .is_none_or(|e| e > MAX_OBJECT_BYTES)
                        {
                            return Err(format!(
                                "{what} is a sub-buffer at {origin} of {size} bytes, past any parent"
                            ));
                        }
                    }
                    content(&format!("{what}'s contents before"), before, *size)?;
                    content(&format!("{what}'s contents after"), after, *size)?;
                    if let Some(seen) = objects.insert(*mem, (*size, *sub_of)) {
                        if seen != (*size, *sub_of) {
                            return Err(format!(
                                "{what} is memory object {mem} with another size or parent than an earlier argument"
                            ));
                        }
                    }
                }
                ArgRecord::Image {
                    mem,
                    image: im,
                    before,
                    after,
                    ..
                } => {
                    image(im).map_err(|e| format!("{what}: {e}"))?;
                    let size = im.packed_size();
                    content(&format!("{what}'s contents before"), before, size)?;
                    content(&format!("{what}'s contents after"), after, size)?;
                    if let Some(seen) = objects.insert(*mem, (size, None)) {
                        if seen != (size, None) {
                            return Err(format!(
                                "{what} is memory object {mem} with another size than an earlier argument"
                            ));
                        }
                    }
                }
                ArgRecord::NullBuffer { .. }
                | ArgRecord::Sampler { .. }
                | ArgRecord::Svm { .. }
                | ArgRecord::Unset { .. } => {}
            }
        }
        // A sub-buffer lies inside its parent, when the parent is an argument too.
        for (i, a) in self.args.iter().enumerate() {
            if let ArgRecord::Buffer {
                size,
                sub_of: Some((parent, origin)),
                ..
            } = a
            {
                if let Some((parent_size, _)) = objects.get(parent) {
                    if origin.saturating_add(*size) > *parent_size {
                        return Err(format!(
                            "argument {i} is a sub-buffer at {origin} of {size} bytes of a buffer of {parent_size}"
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

fn origin(o: &ProgramOrigin) -> Result<(), String> {
    match o {
        ProgramOrigin::Source { sources } => {
            count("sources", sources.len(), MAX_ITEMS)?;
            sources.iter().try_for_each(|h| digest("a source", h))
        }
        ProgramOrigin::Binary { binaries } => {
            count("binaries", binaries.len(), MAX_ITEMS)?;
            binaries.iter().try_for_each(|h| digest("a binary", h))
        }
        ProgramOrigin::Il { il } => digest("the IL", il),
        ProgramOrigin::BuiltIn { kernel_names } => text("the built-in kernel names", kernel_names),
        ProgramOrigin::Linked { inputs } => {
            count("link inputs", inputs.len(), MAX_ITEMS)?;
            for input in inputs {
                origin(&input.origin)?;
                crate::options::check_build_options(&input.compile_options)?;
                count("in-memory headers", input.headers.len(), MAX_ITEMS)?;
                for (name, hash) in &input.headers {
                    if !is_confined_relative(name) {
                        return Err(format!(
                            "an in-memory header's name {:?} is not a relative path without `..` \
                             (a compiler would write that header outside its folder)",
                            clip(name)
                        ));
                    }
                    digest("an in-memory header", hash)?;
                }
            }
            Ok(())
        }
    }
}

fn includes(inc: &Includes) -> Result<(), String> {
    if !inc.build_dir.is_empty() && !is_confined_absolute(&inc.build_dir) {
        return Err(format!(
            "build_dir {:?} is not an absolute path without `..`",
            clip(&inc.build_dir)
        ));
    }
    count("included files", inc.files.len(), MAX_ITEMS)?;
    for f in &inc.files {
        text("an include's name", &f.name)?;
        for p in [&f.from, &f.path].into_iter().flatten() {
            if !is_confined_absolute(p) {
                return Err(format!(
                    "included file {:?} is not an absolute path without `..`",
                    clip(p)
                ));
            }
        }
        if let Some(h) = &f.content {
            digest("an included file", h)?;
        }
    }
    Ok(())
}

impl ProgramRecord {
    /// Checks the record: every blob it names is a digest, every build option is one the
    /// allow-list passes ([`crate::options::check_build_options`]), every include path and
    /// the build folder are absolute without `..` (so their mirrors stay inside the mirror
    /// folder), and counts and strings are of sane size.
    pub fn validate(&self) -> Result<(), String> {
        origin(&self.origin)?;
        crate::options::check_build_options(&self.options)?;
        count("devices", self.devices.len(), MAX_ITEMS)?;
        for d in &self.devices {
            text("a device name", d)?;
        }
        if let Some(s) = &self.build_site {
            site("the build site", s)?;
        }
        includes(&self.includes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_exactly_64_lower_case_hex_digits() {
        assert!(is_digest(&"0a".repeat(32)));
        for bad in [
            "/etc/passwd",
            "/dev/zero",
            "../../../../etc/passwd",
            &"0A".repeat(32),
            &"0a".repeat(31),
            &format!("{}/", "0a".repeat(32)),
            "",
        ] {
            assert!(!is_digest(bad), "{bad}");
        }
    }

    #[test]
    fn geometry_follows_cl_enqueue_nd_range_kernel() {
        assert!(check_geometry(1, None, &[1024], Some(&[64])).is_ok());
        assert!(check_geometry(2, Some(&[1, 2]), &[16, 16], None).is_ok());
        for (dim, off, g, l) in [
            (0u32, None, vec![4u64], None),
            (4, None, vec![1, 1, 1, 1], None),
            (2, None, vec![4], None),
            (1, None, vec![1 << 33], None),
            (3, None, vec![1 << 20, 1 << 20, 1 << 20], None),
            (1, None, vec![64], Some(vec![0])),
            (1, Some(vec![u64::MAX]), vec![2], None),
            (1, None, vec![64], Some(vec![64, 1])),
        ] {
            let r = check_geometry(dim, off.as_deref(), &g, l.as_deref());
            assert!(r.is_err(), "{dim} {off:?} {g:?} {l:?}");
        }
    }

    #[test]
    fn confined_paths_are_absolute_without_parent_components() {
        assert!(is_confined_absolute("/home/a/inc/x.h"));
        for bad in ["inc/x.h", "/home/../etc/x", "/..", "/a/b/..", "", "/a\0b"] {
            assert!(!is_confined_absolute(bad), "{bad:?}");
        }
    }

    #[test]
    fn header_names_stay_below_the_folder_they_are_written_in() {
        for good in ["x.h", "inc/x.h", "./inc/x.h", "a/./b.h", "a..b.h", "..h"] {
            assert!(is_confined_relative(good), "{good:?}");
        }
        for bad in [
            "",
            "/etc/profile",
            "../x.h",
            "inc/../../x.h",
            "a/..",
            "..",
            "a\0b",
            &"a".repeat(MAX_TEXT + 1),
        ] {
            assert!(!is_confined_relative(bad), "{bad:?}");
        }
    }
}
