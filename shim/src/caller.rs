//! The return address of the application's call into a door, so the launch site of a launch
//! costs a cache look-up instead of a stack unwind.
//!
//! Why: unwinding from inside the shim to the application's frame (`crate::site`, DWARF CFI,
//! eight to ten frames) was the largest single cost of a recorded launch on the application's
//! thread (about 15 000 instructions of 47 000 in a PoCL launch storm). The launch entry
//! points (`clEnqueueNDRangeKernel`, `clEnqueueTask`) of both doors are therefore entered
//! through a small trampoline ([`launch_entry!`], x86-64 only) that notes the return address
//! of its caller before jumping to the door's function, which makes it the thread's
//! *current caller* for the duration of the call ([`Scope`]). The outermost door entry on the
//! stack wins (with both doors open the export is entered first, from the application; the
//! layer after it, from the loader). [`crate::site::capture`] uses the current caller when
//! that address is an application frame, which is exactly the frame the unwind would stop at
//! (the first frame outside cltrap and the OpenCL loader), and unwinds otherwise (a call that
//! came through the loader into the layer, another architecture, a launch made from a
//! callback the shim runs itself).

use std::cell::Cell;

thread_local! {
    /// Set by a trampoline right before it jumps to its door's function, which takes it.
    static PENDING: Cell<usize> = const { Cell::new(0) };
    /// The return address of the outermost door entry of the call in progress (0: none).
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

/// Called by the trampolines (from assembly) with their caller's return address.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) extern "C" fn note(return_address: usize) {
    let _ = PENDING.try_with(|p| p.set(return_address));
}

/// The current caller while a door's launch entry point runs: entered first thing in the
/// function a trampoline jumps to, left when it returns.
pub(crate) struct Scope {
    restore: Option<usize>,
}

impl Scope {
    /// Takes the address the trampoline just noted; an outer entry's address stays current.
    pub(crate) fn enter() -> Scope {
        let noted = PENDING.try_with(|p| p.replace(0)).unwrap_or(0);
        let restore = CURRENT
            .try_with(|c| {
                let outer = c.get();
                if outer == 0 {
                    c.set(noted);
                }
                outer
            })
            .ok();
        Scope { restore }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if let Some(r) = self.restore {
            let _ = CURRENT.try_with(|c| c.set(r));
        }
    }
}

/// The return address of the application's call in progress into a launch entry point
/// (None: not inside one, or not known on this architecture).
pub(crate) fn current() -> Option<usize> {
    CURRENT.try_with(Cell::get).ok().filter(|a| *a != 0)
}

/// Defines the door function `$name` (parameters all integers or pointers: no vector
/// registers are saved) as a trampoline that notes its caller's return address
/// ([`note`]) and jumps to `$body`, an `extern "C"` function of the same signature that must
/// enter a [`Scope`] first. Elsewhere than x86-64 it is a plain call of `$body`.
macro_rules! launch_entry {
    ($(#[$attr:meta])* $vis:vis $name:ident => $body:path, ($($p:ident : $t:ty),*) -> $r:ty) => {
        #[cfg(target_arch = "x86_64")]
        $(#[$attr])*
        #[unsafe(naked)]
        $vis unsafe extern "C" fn $name($($p: $t),*) -> $r {
            // System V: at entry [rsp] is the return address; the six integer argument
            // registers are saved around the call of `note` (which keeps the stack 16-byte
            // aligned) and the stack arguments stay where they are for the jump.
            core::arch::naked_asm!(
                "push rdi",
                "push rsi",
                "push rdx",
                "push rcx",
                "push r8",
                "push r9",
                "mov rdi, [rsp + 48]",
                "sub rsp, 8",
                "call {note}",
                "add rsp, 8",
                "pop r9",
                "pop r8",
                "pop rcx",
                "pop rdx",
                "pop rsi",
                "pop rdi",
                "jmp {body}",
                note = sym $crate::caller::note,
                body = sym $body,
            )
        }
        #[cfg(not(target_arch = "x86_64"))]
        $(#[$attr])*
        $vis unsafe extern "C" fn $name($($p: $t),*) -> $r {
            $body($($p),*)
        }
    };
}
pub(crate) use launch_entry;
