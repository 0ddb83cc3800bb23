//! The race checkers' device code and the barrier epochs.
//!
//! Every shadow has the granularity of the object's smallest access (one entry per byte of a
//! `char` buffer, per 2 bytes of a `short` one, per 4 bytes otherwise: the pass finds it per
//! object, `SanitizedKernel::granules`), so work-items that touch neighbouring bytes never
//! share an entry. A swizzle store `p[i].x = v` is compiled as a store of the whole vector,
//! so it covers the whole element, as Oclgrind sees it.
//!
//! `__local` memory: one shadow entry per granule per work-group (in a global buffer, a
//! region per group), holding the barrier interval it was last touched in, the work-item that
//! last wrote it and the one that read it (or "several"), updated with `atomic_cmpxchg`; a
//! write and another work-item's access in the same interval is a race. Intervals are counted
//! by a private counter every `barrier` of the kernel body increments (`__cltrap_ep`), so two
//! work-items agree on it exactly when they passed the same barriers: its low 16 bits count
//! the barriers that fence `__local` memory, its high 16 bits those that fence `__global`
//! memory, each shadow using its own (see `barriers.rs`).
//!
//! `__global` memory between work-groups: per word, the group that first wrote it and the
//! group that read it (or "several") for the whole launch; a word written by one group and
//! read or written by another is a race. Like Oclgrind, which compares only a group's first
//! load and first store of a byte with the other groups' (`RaceDetector::insert` keeps the
//! first of each), a group's later write of a word it wrote first, and its later read of a
//! word it read first, are not compared again: the race is named on the first access's line
//! whichever order the device runs the groups in. `__global` memory within a group: the same
//! per-interval state as `__local` words, kept for the group that touched the word last (a
//! word another group touches is that inter-group race, and its state starts again). Atomic
//! accesses are exempt from all three.
//! Each shadow also keeps the site (+1) of the last write and read, so both lines are named.

use super::{
    FLAG_LOCAL_RACES, FLAG_UNINIT, KIND_GLOBAL_RACE, KIND_GROUP_GLOBAL_RACE, KIND_LOCAL_RACE,
};

/// Shadow words per data word of `__global` memory: writer group, reader group, their sites;
/// then the group that last touched it, its interval state, and that group's sites.
pub const GLOBAL_SHADOW_WORDS: u64 = 8;
/// Shadow words per data word of `__local` memory: state, write site, read site.
pub const LOCAL_SHADOW_WORDS: u64 = 3;

/// The largest work-group whose local ids the interval state can hold (13 bits, one value
/// for "several readers"); larger groups are not race-checked within the group.
pub const MAX_GROUP_ITEMS: u64 = 0x1FFE;

/// OpenCL C of both shadows. `__cltrap_interval` is the one per-interval state update (32-bit
/// word: written bit, raced bit, 4-bit barrier interval, writer and reader local id + 1 in 13
/// bits each, 0x1FFF = several readers), shared by `__local` words and by `__global` words
/// within a group. Like Oclgrind, it reports one race per word and interval, between the
/// interval's first write (or read) of the word and the access that conflicts with it.
pub(crate) fn prelude() -> String {
    format!(
        "\
__CLTRAP_SFN uint __cltrap_interval(volatile __global uint* s, uint e, uint me, uint mode, uint* other, uint* omode) {{ uint old = *s, res = 0u; for (uint tries = 0u; tries < 1000000u; tries++) {{ uint written = old >> 31, raced = (old >> 30) & 1u, oe = (old >> 26) & 0xFu, wtr = (old >> 13) & 0x1FFFu, rdr = old & 0x1FFFu; if (oe != e) {{ wtr = 0u; rdr = 0u; raced = 0u; }} res = ((mode & 1u) && !written) ? 2u : 0u; if ((mode & 2u) && wtr == 0u) res |= 4u; if ((mode & 1u) && rdr == 0u) res |= 8u; if (!raced && wtr != 0u && wtr != me) {{ res |= 1u; *other = wtr; *omode = 32u; }} else if (!raced && (mode & 2u) && rdr != 0u && rdr != me) {{ res |= 1u; *other = rdr == 0x1FFFu ? 0u : rdr; *omode = 16u; }} uint nw = (mode & 2u) ? me : wtr; uint nr = (mode & 1u) ? ((rdr == 0u || rdr == me) ? me : 0x1FFFu) : rdr; uint next = ((written | ((mode & 2u) ? 1u : 0u)) << 31) | ((raced | (res & 1u)) << 30) | (e << 26) | (nw << 13) | nr; if (next == old) break; uint got = atomic_cmpxchg(s, old, next); if (got == old) break; old = got; }} return res; }}
__CLTRAP_SLOW void __cltrap_global_shadow(__global uint* sh, ulong off, uint size, uint gs, uint site, uint obj, uint mode, uint ep, __global uint* r) {{ uint g = __cltrap_group_linear() + 1u, me = __cltrap_local_linear() + 1u, e = (ep >> 16) & 0xFu; for (ulong w = off >> gs; w <= (off + size - 1u) >> gs; w++) {{ volatile __global uint* s = sh + {GLOBAL_SHADOW_WORDS}u * w; if (mode & 1u) {{ uint wr = s[0], rd = s[1]; if (wr != 0u && wr != g && rd != g) __cltrap_report(r, {KIND_GLOBAL_RACE}u, site, s[2], obj, (long)(w << gs), wr, size, 1u | 32u); if (rd != g && rd != 0xFFFFFFFFu) {{ uint old = atomic_cmpxchg(s + 1, 0u, g); if (old == 0u) s[3] = site + 1u; else if (old != g) atomic_xchg(s + 1, 0xFFFFFFFFu); }} }} if (mode & 2u) {{ uint old = atomic_cmpxchg(s, 0u, g); if (old == 0u) s[2] = site + 1u; else if (old != g) __cltrap_report(r, {KIND_GLOBAL_RACE}u, site, s[2], obj, (long)(w << gs), old, size, 2u | 32u); uint rd = s[1]; if (old != g && rd != 0u && rd != g) __cltrap_report(r, {KIND_GLOBAL_RACE}u, site, s[3], obj, (long)(w << gs), rd, size, 2u | 16u); }} if (s[4] != g) {{ atomic_xchg(s + 4, g); atomic_xchg(s + 5, 0u); }} uint wsite = s[6], rsite = s[7], other = 0u, omode = 0u; uint res = __cltrap_interval(s + 5, e, me, mode, &other, &omode); if (res & 4u) s[6] = site + 1u; if (res & 8u) s[7] = site + 1u; if (res & 1u) __cltrap_report(r, {KIND_GROUP_GLOBAL_RACE}u, site, omode == 32u ? wsite : rsite, obj, (long)(w << gs), other, size, (mode & 3u) | omode); }} }}
__CLTRAP_SLOW void __cltrap_local_shadow(__global uint* sh, ulong off, uint size, uint gs, uint site, uint obj, uint mode, uint ep, __global uint* r) {{ uint me = __cltrap_local_linear() + 1u, e = ep & 0xFu; uint races = r[2] & {FLAG_LOCAL_RACES}u, uninit = r[2] & {FLAG_UNINIT}u; for (ulong w = off >> gs; w <= (off + size - 1u) >> gs; w++) {{ volatile __global uint* s = sh + {LOCAL_SHADOW_WORDS}u * w; uint wsite = s[1], rsite = s[2], other = 0u, omode = 0u; uint res = __cltrap_interval(s, e, me, mode, &other, &omode); if (res & 4u) s[1] = site + 1u; if (res & 8u) s[2] = site + 1u; if ((res & 1u) && races) __cltrap_report(r, {KIND_LOCAL_RACE}u, site, omode == 32u ? wsite : rsite, obj, (long)(w << gs), other, size, (mode & 3u) | omode); if ((res & 2u) && uninit) __cltrap_uninit(r, site, obj, (long)(w << gs), size); }} }}
"
    )
}

/// Names of the barrier built-ins that end an interval.
pub const BARRIERS: &[&str] = &["barrier", "work_group_barrier"];
