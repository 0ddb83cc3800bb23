//! What a CPU device may be handed from a capture.
//!
//! Why: a CPU device (PoCL, Intel's CPU runtime) runs a kernel as native code inside the
//! process that enqueues it, so a capture's program replayed there runs in `cltrap`'s own
//! process. A program binary from a capture is native code (PoCL's holds the kernels' `.so`
//! files, which it writes under names the binary gives and loads); SPIR-V may carry inline
//! assembly; OpenCL C may hold `__asm__` (PoCL compiles and runs a `syscall`). So on a CPU
//! device a binary or IL program is built only when the user trusts the capture's origin
//! ([`TRUST_BINARIES`]), and every OpenCL C text is compiled with the assembly keywords
//! defined away ([`NO_ASM_OPTIONS`]: a keyword pasted together by a macro expands too). On a
//! GPU neither applies: its kernels run on the device, and inline PTX is ordinary there
//! (hashcat). A text that defines or undefines those keywords is refused on every device
//! (`headers::confine`, which checks texts without knowing the device; in a branch the
//! build skips the refusal is skipped too).

/// The variable that lets binary and IL programs of a capture run on a CPU device.
pub const TRUST_BINARIES: &str = "CLTRAP_TRUST_BINARIES";

/// Build options that make each spelling of the assembly keyword
/// ([`crate::headers::ASM_WORDS`], the words no text may redefine) an undeclared identifier
/// whose name says why the build failed.
pub(super) static NO_ASM_OPTIONS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    crate::headers::ASM_WORDS
        .iter()
        .map(|w| format!("-D{w}=cltrap_refuses_inline_assembly_on_a_cpu_device"))
        .collect::<Vec<_>>()
        .join(" ")
});

/// Whether the environment trusts a capture's binaries on a CPU device (`1`, `yes`, `on`,
/// `true`).
pub(super) fn binaries_trusted_by_env() -> bool {
    std::env::var(TRUST_BINARIES).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "yes" | "on" | "true"
        )
    })
}

/// Why a binary or IL program (`what`) is not run on a CPU device.
pub(super) fn untrusted(what: &str) -> super::ExecError {
    super::ExecError::NotReplayable(format!(
        "its program is {what}, which a CPU device runs as native code in cltrap's own process; \
         replay it on a GPU, or set {TRUST_BINARIES}=1 if you trust where the capture comes from"
    ))
}
