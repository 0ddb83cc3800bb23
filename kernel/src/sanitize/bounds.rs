//! The bounds checker: every attributed access goes through `__cltrap_g/_c/_l`, which compare
//! the byte offset from the object's base with its extent, record an out-of-bounds access
//! (read or write, site, work-item, offset) and hand back a harmless address instead — a
//! scratch area in the report buffer (`__global`), a private `__local` scratch array of the
//! kernel (`__local`), or the object's first byte (`__constant`, read-only) — so the access is
//! not performed on someone else's memory and the run survives.

use super::objects::Space;
use super::{FLAG_GLOBAL_RACES, FLAG_LOCAL, KIND_READ_OOB, KIND_WRITE_OOB, SCRATCH_WORD};

/// The OpenCL C the bounds checks need (after `super::PRELUDE_COMMON`).
pub(crate) fn prelude() -> String {
    format!(
        "\
__CLTRAP_SFN void __cltrap_oob(__global uint* r, uint site, uint obj, long off, uint size, uint mode) {{ if (mode & 1u) __cltrap_report(r, {KIND_READ_OOB}u, site, 0u, obj, off, 0u, size, 1u); if (mode & 2u) __cltrap_report(r, {KIND_WRITE_OOB}u, site, 0u, obj, off, 0u, size, 2u); }}
__CLTRAP_SFN __global char* __cltrap_g(__global char* p, __global char* base, ulong ext, uint size, uint lo, uint len, uint gs, uint site, uint obj, uint mode, __global uint* r, __global uint* sh, uint ep) {{ long off = (long)(p - base); if (off < 0 || (ulong)off + size > ext) {{ __cltrap_oob(r, site, obj, off, size, mode); return (__global char*)(r + {SCRATCH_WORD}u); }} if (sh && (r[2] & {FLAG_GLOBAL_RACES}u) && mode < 4u) __cltrap_global_shadow(sh, (ulong)off + lo, len, gs, site, obj, mode, ep, r); return p; }}
__CLTRAP_SFN uint __cltrap_span_g(__global char* p, __global char* base, ulong ext, ulong size, uint site, uint obj, uint mode, __global uint* r) {{ long off = (long)(p - base); if (off < 0 || (ulong)off + size > ext) {{ if (__cltrap_local_linear() == 0u) __cltrap_oob(r, site, obj, off, (uint)size, mode); return 0u; }} return 1u; }}
__CLTRAP_SFN uint __cltrap_span_l(__local char* p, __local char* base, ulong ext, ulong size, uint site, uint obj, uint mode, __global uint* r) {{ long off = (long)(p - base); if (off < 0 || (ulong)off + size > ext) {{ if (__cltrap_local_linear() == 0u) __cltrap_oob(r, site, obj, off, (uint)size, mode); return 0u; }} return 1u; }}
__CLTRAP_SFN __constant char* __cltrap_c(__constant char* p, __constant char* base, ulong ext, uint size, uint site, uint obj, __global uint* r) {{ long off = (long)(p - base); if (off < 0 || (ulong)off + size > ext) {{ __cltrap_oob(r, site, obj, off, size, 1u); return base; }} return p; }}
__CLTRAP_SFN __local char* __cltrap_l(__local char* p, __local char* base, ulong ext, uint size, uint lo, uint len, uint gs, uint site, uint obj, uint mode, __global uint* r, __global uint* sh, uint ep, __local char* scratch) {{ long off = (long)(p - base); if (off < 0 || (ulong)off + size > ext) {{ __cltrap_oob(r, site, obj, off, size, mode); return scratch; }} if (sh && (r[2] & {FLAG_LOCAL}u) && mode < 4u) __cltrap_local_shadow(sh, (ulong)off + lo, len, gs, site, obj, mode, ep, r); return p; }}
"
    )
}

/// The test of a range of `size` bytes (an expression) from `ADDR` that a work-group copy
/// (`async_work_group_copy`) reads or writes: an expression that is 1 when the range is in
/// bounds, and 0 after reporting it (once per work-group: the copy is the group's) when not.
/// `None` for a `__constant` object, which no copy writes or reads.
pub(crate) fn range_in_bounds(
    t: &Target,
    addr: &str,
    size: &str,
    site: u32,
    mode: u32,
) -> Option<String> {
    let (q, f) = match t.space {
        Space::Global => ("__global", "__cltrap_span_g"),
        Space::Local => ("__local", "__cltrap_span_l"),
        Space::Constant => return None,
    };
    Some(format!(
        "{f}(({q} char*)({addr}), {base}, (ulong)({ext}), (ulong)({size}), {site}u, {obj}, {mode}u, __cltrap_rep)",
        base = t.base,
        ext = t.extent,
        obj = t.object
    ))
}

/// How one access reaches its object, for the checked-address call.
pub(crate) struct Target<'a> {
    pub space: Space,
    /// `SPACE char*` expression of the object's first byte.
    pub base: &'a str,
    /// Its extent in bytes (an expression).
    pub extent: &'a str,
    /// Its shadow (`__global uint*` expression, `0` for none).
    pub shadow: &'a str,
    /// Its shadow granule, as a shift (an expression: bytes per shadow entry = 1 << it).
    pub granule: &'a str,
    /// Its object id (an expression: a constant in a kernel, a parameter in a helper).
    pub object: &'a str,
    /// The barrier interval counter (an expression).
    pub epoch: &'a str,
}

/// The text placed around the address expression `ADDR` (an expression of pointer type
/// `SPACE T*`) so it becomes the checked address: `(SPACE T*)__cltrap_x((SPACE char*)(ADDR), ...)`.
pub(crate) fn checked_address(t: &Target, pointee: &str, site: u32, mode: u32) -> (String, String) {
    checked_range(t, pointee, &format!("(uint)sizeof({pointee})"), site, mode)
}

/// [`checked_address`] for an access of `size` bytes (an expression) from `ADDR`, such as the
/// `N` elements a `vstoreN` writes: bounds and shadow cover all of them.
pub(crate) fn checked_range(
    t: &Target,
    pointee: &str,
    size: &str,
    site: u32,
    mode: u32,
) -> (String, String) {
    let q = t.space.qualifier();
    let open = match t.space {
        Space::Global => "__cltrap_g",
        Space::Constant => "__cltrap_c",
        Space::Local => "__cltrap_l",
    };
    let open = format!("(({q} {pointee}*){open}(({q} char*)(");
    let common = format!(
        "), {base}, (ulong)({ext}), {size}",
        base = t.base,
        ext = t.extent,
    );
    let part = format!("0u, {size}");
    let who = format!("{site}u, {obj}", obj = t.object);
    let close = match t.space {
        Space::Global => format!(
            "{common}, {part}, {gs}, {who}, {mode}u, __cltrap_rep, {sh}, {ep}))",
            gs = t.granule,
            sh = t.shadow,
            ep = t.epoch
        ),
        Space::Constant => format!("{common}, {who}, __cltrap_rep))"),
        Space::Local => format!(
            "{common}, {part}, {gs}, {who}, {mode}u, __cltrap_rep, {sh}, {ep}, (__local char*)__cltrap_ls))",
            gs = t.granule,
            sh = t.shadow,
            ep = t.epoch
        ),
    };
    (open, close)
}
