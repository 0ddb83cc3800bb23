//! Large contents put together in memory by the worker threads ([`crate::workers`]): fresh
//! memory that is zero without being written ([`zeroed`]), filled from a file
//! ([`read_exact_at`]) or from pieces ([`concat_into`]) by several threads at once.
//!
//! Why: reading a 2 GB spooled content into a vector zeroed first, with one `pread`, touches
//! every page twice on one thread (the zeroing faults in 512 Ki pages, the copy out of the
//! page cache runs on one core). Compacting the spool of Debian's clpeak `--global-bandwidth`
//! (4.2 GB, contents of 2 GiB) that way on a 16-core H200 host spent 30% of its CPU time on
//! its main thread, most of it there, while the workers waited. Here a page is first touched
//! by the thread that copies into it, and the copies run side by side.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

/// Bytes one thread copies at a time.
const PIECE: usize = 8 << 20;

/// Allocations at least this large are checked against the memory the machine has free.
const CHECKED: usize = 1 << 30;

/// Whether `len` bytes fit in the memory this process may still use: what `/proc/meminfo`
/// calls `MemAvailable` plus `SwapFree`, and no more than its cgroup (v2) leaves it below
/// `memory.max` (true where neither can be read, and for anything under [`CHECKED`]).
/// Why: a capture's sizes are bounded (64 GiB), not by this machine's memory, and a sparse
/// file of a few kilobytes on disk may claim gigabytes of zeros: allocated lazily, they
/// would be faulted in as they are filled until the kernel's OOM killer ends the process
/// (or another one), instead of one clear error. Each allocation is checked alone.
pub fn fits_in_memory(len: usize) -> bool {
    len < CHECKED || has_room(len as u64)
}

/// Whether `len` more bytes fit in the memory this process may still use now (as
/// [`fits_in_memory`], for an allocation of any size; reads `/proc/meminfo`). Why: a caller
/// that makes many allocations under [`fits_in_memory`]'s threshold, each filled at once
/// (an export copying every content of a launch), checks each so the sum cannot run the
/// machine out of memory.
pub fn has_room(len: u64) -> bool {
    let mut room: Option<u64> = None;
    if let Ok(info) = std::fs::read_to_string("/proc/meminfo") {
        if let Some(available) = meminfo_field(&info, "MemAvailable:") {
            room = Some(available.saturating_add(meminfo_field(&info, "SwapFree:").unwrap_or(0)));
        }
    }
    if let (Some(max), Some(current)) = (cgroup("memory.max"), cgroup("memory.current")) {
        let left = max.saturating_sub(current);
        room = Some(room.map_or(left, |r| r.min(left)));
    }
    room.is_none_or(|r| len <= r)
}

/// The machine's memory in bytes (`MemTotal`), or its cgroup's (v2) `memory.max` where lower;
/// None where neither can be read. Why: a bound on what a reader keeps of untrusted input
/// ([`crate::reader`]'s spool index) that grows with the machine, not a fixed guess.
pub fn memory_total() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| meminfo_field(&info, "MemTotal:"));
    match (total, cgroup("memory.max")) {
        (Some(t), Some(m)) => Some(t.min(m)),
        (t, m) => t.or(m),
    }
}

/// A field of `/proc/meminfo`'s text in bytes.
fn meminfo_field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb.saturating_mul(1024))
}

/// A number in this process's cgroup (v2) folder (`max` and the like are None).
fn cgroup(name: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/sys/fs/cgroup/{name}"))
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
}

/// This process's resident memory in bytes (`/proc/self/statm`), None where it cannot be read.
/// Why: what a parse of untrusted input costs in memory is measured, not guessed from sizes.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages.saturating_mul(u64::try_from(page).ok().filter(|p| *p > 0)?))
}

/// `len` zero bytes, allocated without being written (large allocations come from fresh
/// pages, which are zero; the thread that first writes a page faults it in), or None when
/// they cannot be allocated or do not fit in the memory available ([`fits_in_memory`]).
pub fn zeroed(len: usize) -> Option<Vec<u8>> {
    if len == 0 {
        return Some(Vec::new());
    }
    if !fits_in_memory(len) {
        return None;
    }
    let layout = std::alloc::Layout::array::<u8>(len).ok()?;
    // SAFETY: `layout` has a non-zero size (checked above).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return None;
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of `len` bytes of
    // alignment 1, and all `len` bytes are initialised (zero).
    Some(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// Reads exactly `into.len()` bytes of `file` from `offset` into `into`, in pieces of
/// [`PIECE`] bytes on several threads when there are several pieces. An error is the first
/// piece's that failed (`UnexpectedEof` where the file ends before).
pub fn read_exact_at(file: &File, into: &mut [u8], offset: u64) -> std::io::Result<()> {
    if into.len() <= PIECE {
        return file.read_exact_at(into, offset);
    }
    let pieces: Vec<Mutex<&mut [u8]>> = into.chunks_mut(PIECE).map(Mutex::new).collect();
    crate::workers::for_each(pieces.len(), true, |i| {
        let mut piece = pieces[i].lock().unwrap_or_else(|p| p.into_inner());
        file.read_exact_at(&mut piece, offset + (i * PIECE) as u64)
    })
    .map(|_| ())
}

/// Copies `parts` one after another into `into`, whose length is the sum of theirs (false,
/// nothing copied, where it is not), in groups of about [`PIECE`] bytes on several threads.
pub fn concat_into(into: &mut [u8], parts: &[&[u8]]) -> bool {
    let total = parts.iter().try_fold(0usize, |s, p| s.checked_add(p.len()));
    if total != Some(into.len()) {
        return false;
    }
    // Consecutive parts grouped until a group holds PIECE bytes; each group's place split off.
    let mut groups: Vec<(std::ops::Range<usize>, Mutex<&mut [u8]>)> = Vec::new();
    let mut rest = into;
    let (mut first, mut bytes) = (0, 0);
    for (i, p) in parts.iter().enumerate() {
        bytes += p.len();
        if bytes >= PIECE || i + 1 == parts.len() {
            let (place, after) = std::mem::take(&mut rest).split_at_mut(bytes);
            groups.push((first..i + 1, Mutex::new(place)));
            rest = after;
            (first, bytes) = (i + 1, 0);
        }
    }
    crate::workers::map_each(groups.len(), groups.len() > 1, |g| {
        let (range, place) = &groups[g];
        let mut place = place.lock().unwrap_or_else(|p| p.into_inner());
        let mut at = 0;
        for p in &parts[range.clone()] {
            place[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
    });
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 4093) as u8).collect()
    }

    #[test]
    fn an_allocation_larger_than_the_memory_available_is_refused() {
        // More than any machine running the tests has free: refused before it is made (a
        // lazy allocation would be granted, then faulted in until the OOM killer).
        assert!(!fits_in_memory(usize::MAX / 2));
        assert!(fits_in_memory(1 << 20));
        // A gigabyte more than the machine has, memory and swap together: an allocator that
        // overcommits may grant it (nothing is touched here), the check does not.
        let info = std::fs::read_to_string("/proc/meminfo").unwrap();
        let kb = |name: &str| -> usize {
            info.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap()
        };
        let all = (kb("MemTotal:") + kb("SwapTotal:")) * 1024;
        assert!(zeroed(all + (1 << 30)).is_none());
    }

    #[test]
    fn zeroed_memory_is_zero_and_of_its_length() {
        for len in [0, 1, 4096, 3 * PIECE + 5] {
            let v = zeroed(len).unwrap();
            assert_eq!(v.len(), len);
            assert!(v.iter().all(|&b| b == 0));
        }
        assert!(zeroed(usize::MAX).is_none());
    }

    #[test]
    fn a_read_in_pieces_is_the_file_and_a_short_file_is_an_unexpected_end() {
        let bytes = pattern(3 * PIECE + 12_345);
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&bytes).unwrap();
        for (offset, len) in [(0, bytes.len()), (77, 2 * PIECE + 1), (5, 100)] {
            let mut into = zeroed(len).unwrap();
            read_exact_at(&f, &mut into, offset as u64).unwrap();
            assert!(
                into == bytes[offset..offset + len],
                "at {offset}, {len} bytes"
            );
        }
        let mut past = zeroed(2 * PIECE + 1).unwrap();
        let e = read_exact_at(&f, &mut past, PIECE as u64 + 12_345).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn parts_are_copied_in_order_and_a_wrong_total_copies_nothing() {
        let bytes = pattern(2 * PIECE + 999);
        let cuts = [0, 10, PIECE - 3, PIECE + 77, 2 * PIECE, bytes.len()];
        let parts: Vec<&[u8]> = cuts.windows(2).map(|w| &bytes[w[0]..w[1]]).collect();
        let mut into = zeroed(bytes.len()).unwrap();
        assert!(concat_into(&mut into, &parts));
        assert!(into == bytes);
        let mut short = zeroed(bytes.len() - 1).unwrap();
        assert!(!concat_into(&mut short, &parts));
        assert!(short.iter().all(|&b| b == 0));
    }
}
