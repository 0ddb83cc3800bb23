//! The uninitialised-read checker for `__local` memory: the local shadow word's top bit says
//! "written in this launch by this work-group" (the host zeroes the shadow before each run);
//! a read of a word whose bit is clear is reported at the read's line. The bit lives in the
//! same shadow word as the race state (see `races.rs`), so one atomic update serves both.

use super::KIND_UNINIT;

/// OpenCL C of the report call.
pub(crate) fn prelude() -> String {
    format!(
        "__CLTRAP_SFN void __cltrap_uninit(__global uint* r, uint site, uint obj, long off, uint size) {{ __cltrap_report(r, {KIND_UNINIT}u, site, 0u, obj, off, 0u, size, 1u); }}\n"
    )
}
