//! `libcltrap.so`: sits between an unmodified application and its OpenCL driver and records
//! every kernel launch into a cltrap capture (see the `cltrap-capture` crate).
//!
//! # Two doors, one core
//!
//! 1. **LD_PRELOAD** (`exports`): the library exports every entry point the Linux ICD loader
//!    exports. Each forwards to the next definition (`dlsym(RTLD_NEXT)`, or `libOpenCL.so.1`
//!    when the application loads its loader privately, as pyopencl does).
//! 2. **Loader layer** (`layer`): `clGetLayerInfo` / `clInitLayer` for `OPENCL_LAYERS`
//!    (ocl-icd ≥ 2.3, the Khronos loader). The loader hands us its next dispatch table and
//!    calls our table instead. This is the only way to see applications that `dlopen` the
//!    loader and look functions up by handle (hashcat, OpenCV, ...). When the library is
//!    preloaded, the loader's `getenv("OPENCL_LAYERS")` answers with its own path in front
//!    (`register`; the environment itself is not changed), so such applications are caught
//!    without any setup.
//!
//! Both doors call the same interception core (`core`), whose functions take the "next"
//! dispatch table of the door they came through; no recording code exists twice.
//!
//! # Exactly once
//!
//! Every API call is recorded exactly once whichever door it came through (`door`):
//! once our layer serves the loader the exports forward to, exports are a plain jump and the
//! layer records; before that (or with a loader without layer support, or an application
//! linking a vendor library directly) the exports record, and a thread-local scope keeps the
//! layer from recording a call that an export further up the same stack already records.
//!
//! # Transparency
//!
//! The application's call is forwarded exactly once, with its own arguments (exceptions:
//! ` -cl-kernel-arg-info` is appended to build options while capturing, retried without it if
//! the driver refuses, and hidden again from the application's `clGetKernelArgInfo`, which
//! then answers `CL_KERNEL_ARG_INFO_NOT_AVAILABLE` as the driver would, and from
//! `CL_PROGRAM_BUILD_OPTIONS`; `CL_*_REFERENCE_COUNT` leaves out the references the shim holds;
//! with `CLTRAP_REFUSE_BINARIES`, `clCreateProgramWithBinary` answers `CL_INVALID_BINARY`; on out-of-order
//! queues a recorded kernel also waits for the shim's own pre-reads), outside any panic guard; all recording work runs inside
//! `catch_unwind` and never changes return codes, events or blocking behaviour. Capture I/O
//! failures are reported once on stderr (`cltrap: ...`) and recording stops. With
//! `CLTRAP_CAPTURE=off` the exports are a relaxed atomic load and an indirect call, and no
//! layer is registered. In processes that never call OpenCL the library does nothing: it
//! answers the loader's `getenv("OPENCL_LAYERS")` with its own path in front (`register`),
//! and the environment children inherit is left as it was.
//!
//! # Using it
//!
//! ```text
//! cargo build --release -p cltrap-shim          # target/release/libcltrap.so
//! LD_PRELOAD=$PWD/target/release/libcltrap.so CLTRAP_DIR=cap ./app     # both doors
//! OPENCL_LAYERS=$PWD/target/release/libcltrap.so CLTRAP_DIR=cap ./app  # layer only
//! ```
//!
//! `cltrap run` sets these up. The controls are the `CLTRAP_*` variables of
//! `cltrap_capture::CONTROLS` (directory, on/off, kernel globs, launch window, per-kernel
//! count, buffer mode `full|hash|none`, disk budget); bad values are said once on stderr and
//! capture stays off. The capture directory is created at the first recorded launch only.
//!
//! # What a launch record holds, and how it is taken
//!
//! Per `clEnqueueNDRangeKernel` / `clEnqueueTask` that returned `CL_SUCCESS` and passed the
//! filters (`seq` counts every enqueue): kernel name; the program record (sources, binaries, IL
//! or built-in names; `clCompileProgram` + `clLinkProgram` inputs with their options and
//! headers; the application's build options; device names; where it was created; every file
//! the program `#include`s, found as the driver found it at build time), written once per
//! program; the geometry (NULL offset/local size stay `None`); every argument as
//! `clGetKernelArgInfo` describes it (scalars as raw bytes in hex, `__local` sizes, samplers,
//! buffers with flags, size, sub-buffer parent and origin, images with format and
//! dimensions, SVM pointers marked not replayable), falling back to "a value equal to a
//! `cl_mem` we saw created is that memory object" when the driver has no argument info;
//! device, queue properties, thread and the launch site.
//!
//! Buffer contents (`full`: stored, deduplicated; `hash`: digests only) are read *inside the
//! application's queue*, never by blocking it: non-blocking reads of every buffer/image
//! argument are enqueued right before the kernel (with the launch's own wait list) and right
//! after it (through a temporary device buffer when host access is forbidden); on
//! out-of-order queues the kernel also waits for the pre-reads and a barrier after the
//! post-reads keeps later commands from overwriting what is still being read. Objects the
//! kernel cannot change (`__constant`, pointers to `const`, `read_only` images) are read once.
//! The writer thread (`cltrap-writer`) learns of finished launches by polling in-order queues
//! and from completion callbacks on out-of-order ones; it hashes/stores the bytes and appends
//! the records; launch ids follow the order of the
//! enqueues. A launch gated by an unset user event is recorded once the gate opens. Host
//! memory for reads in flight is capped at 512 MiB (over it, a launch waits for older ones,
//! never while a user event is unset, or is recorded without contents). After the
//! application's `clFinish` the launches it finished are written on the application's thread
//! before it returns (no hand-over to the writer); blocking reads and `clWaitForEvents` hand
//! completed launches to the writer at once (`core::sync`). At exit the shim waits
//! (as long as launches keep completing, up to 5 s of no progress) for launches in flight.
//! In `none` mode nothing is read.
//!
//! # Limits
//!
//! * Extension entry points obtained through `clGetExtensionFunctionAddress*` go through the
//!   shim when they are hooked core names or the aliases `clCreateProgramWithILKHR` and
//!   `clSetKernelArgSVMPointerARM`; other extension functions (e.g. `cl_khr_command_buffer`'s
//!   `clCommandNDRangeKernelKHR`) bypass it, and what they launch is not recorded.
//! * Object tables are pruned when the application releases an object for good (`core::lifetime`);
//!   objects made through entry points the shim does not hook (pipes, GL/EGL interop) are
//!   never counted, so their entries stay until their handle is reused.
//! * Capture reads run in the application's queue, so a post-read can race with a command the
//!   application enqueues on *another* queue after waiting for the kernel's event (the kernel
//!   event is the application's and cannot be delayed). In-order single-queue use, and
//!   out-of-order queues (protected by the barrier), are exact.
//! * A process forked after its first recorded launch has no writer thread: the child's
//!   launches are not recorded.
//! * A kernel that writes through a pointer to `const` (undefined behaviour) is recorded as not
//!   changing that buffer; replay then reports the difference.
//! * `launch_site.offset` is the return address in the module (what `addr2line -e module`
//!   takes; it normally names the line of the call).
//!
//! What this crate is not for: analysing or replaying captures (that is the analyzer), or
//! loading libclang (never inside the application).

mod api;
mod caller;
mod core;
mod door;
mod exports;
mod extension;
mod handles;
mod layer;
mod preload;
mod register;
mod say;
mod sink;
mod site;
mod state;
mod swap;

/// The dispatch table shape both doors use for "the next definitions".
pub(crate) type Next = opencl_sys::cl_icd::cl_icd_dispatch;
