//! The race checkers' device code and the barrier epochs.
//!
//! `__local` memory: one shadow word per 4-byte word per work-group (in a global buffer, a
//! region per group), holding the barrier interval it was last touched in, the work-item that
//! last wrote it and the one that read it (or "several"), updated with `atomic_cmpxchg`; a
//! write and another work-item's access in the same interval is a race. Intervals are counted
//! by a private counter every `barrier` of the kernel body increments (`__cltrap_ep`), so two
//! work-items agree on it exactly when they passed the same barriers.
//!
//! `__global` memory between work-groups: per word, the group that first wrote it and the
//! group that read it (or "several") for the whole launch; a word written by one group and
//! read or written by another is a race. Atomic accesses are exempt from both.
//! Each shadow also keeps the site (+1) of the last write and read, so both lines are named.

use super::{FLAG_LOCAL_RACES, FLAG_UNINIT, KIND_GLOBAL_RACE, KIND_LOCAL_RACE};

/// Shadow words per data word of `__global` memory: writer group, reader group, sites.
pub const GLOBAL_SHADOW_WORDS: u64 = 4;
/// Shadow words per data word of `__local` memory: state, write site, read site.
pub const LOCAL_SHADOW_WORDS: u64 = 3;

/// OpenCL C of both shadows.
pub(crate) fn prelude() -> String {
    format!(
        "\
__CLTRAP_SLOW void __cltrap_global_shadow(__global uint* sh, ulong off, uint size, uint site, uint obj, uint mode, __global uint* r) {{ uint g = __cltrap_group_linear() + 1u; for (ulong w = off >> 2; w <= (off + size - 1u) >> 2; w++) {{ volatile __global uint* s = sh + {GLOBAL_SHADOW_WORDS}u * w; if (mode & 1u) {{ uint wr = s[0]; if (wr != 0u && wr != g) __cltrap_report(r, {KIND_GLOBAL_RACE}u, site, s[2], obj, (long)(w * 4u), wr, size, 1u | 32u); uint rd = s[1]; if (rd != g && rd != 0xFFFFFFFFu) {{ uint old = atomic_cmpxchg(s + 1, 0u, g); if (old == 0u) s[3] = site + 1u; else if (old != g) atomic_xchg(s + 1, 0xFFFFFFFFu); }} }} if (mode & 2u) {{ uint old = atomic_cmpxchg(s, 0u, g); if (old == 0u) s[2] = site + 1u; else if (old != g) __cltrap_report(r, {KIND_GLOBAL_RACE}u, site, s[2], obj, (long)(w * 4u), old, size, 2u | 32u); uint rd = s[1]; if (rd != 0u && rd != g) __cltrap_report(r, {KIND_GLOBAL_RACE}u, site, s[3], obj, (long)(w * 4u), rd, size, 2u | 16u); }} }} }}
__CLTRAP_SLOW void __cltrap_local_shadow(__global uint* sh, ulong off, uint size, uint site, uint obj, uint mode, uint ep, __global uint* r) {{ uint me = __cltrap_local_linear() + 1u; uint e = ep & 0x1FFu; uint races = r[2] & {FLAG_LOCAL_RACES}u; uint uninit = r[2] & {FLAG_UNINIT}u; for (ulong w = off >> 2; w <= (off + size - 1u) >> 2; w++) {{ volatile __global uint* s = sh + {LOCAL_SHADOW_WORDS}u * w; uint wsite = s[1], rsite = s[2]; uint old = s[0]; uint kind = 0u, other = 0u, osite = 0u, omode = 0u, unread = 0u; for (uint tries = 0u; tries < 1000000u; tries++) {{ uint written = old >> 31, oe = (old >> 22) & 0x1FFu, wtr = (old >> 11) & 0x7FFu, rdr = old & 0x7FFu; if (oe != e) {{ wtr = 0u; rdr = 0u; }} kind = 0u; unread = 0u; if ((mode & 1u) && wtr != 0u && wtr != me) {{ kind = 1u; other = wtr; osite = wsite; omode = 32u; }} if ((mode & 1u) && !written) unread = 1u; if ((mode & 2u) && wtr != 0u && wtr != me) {{ kind = 1u; other = wtr; osite = wsite; omode = 32u; }} else if ((mode & 2u) && rdr != 0u && rdr != me) {{ kind = 1u; other = rdr == 0x7FFu ? 0u : rdr; osite = rsite; omode = 16u; }} uint nw = (mode & 2u) ? me : wtr; uint nr = (mode & 1u) ? ((rdr == 0u || rdr == me) ? me : 0x7FFu) : rdr; uint nwritten = written | ((mode & 2u) ? 1u : 0u); uint next = (nwritten << 31) | (e << 22) | (nw << 11) | nr; if (next == old) break; uint got = atomic_cmpxchg(s, old, next); if (got == old) break; old = got; }} if (mode & 2u) s[1] = site + 1u; if (mode & 1u) s[2] = site + 1u; if (kind && races) __cltrap_report(r, {KIND_LOCAL_RACE}u, site, osite, obj, (long)(w * 4u), other, size, (mode & 3u) | omode); if (unread && uninit) __cltrap_uninit(r, site, obj, (long)(w * 4u), size); }} }}
"
    )
}

/// Names of the barrier built-ins that end an interval.
pub const BARRIERS: &[&str] = &["barrier", "work_group_barrier"];
