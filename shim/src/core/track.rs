//! What the shim remembers about the application's objects between calls: how each program
//! was made, each kernel's current arguments, an id per memory object, and pending user events.
//!
//! Every table has its own lock, held only to copy data in or out, never across a driver call.
//! Object handles are keys; entries go when the application released the object for good
//! ([`super::lifetime`]), and a handle reused by the driver is overwritten by the creation hook
//! that returned it.

use crate::handles::{HandleMap, HandleSet};
use cltrap_capture::{Hash, Site};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Locks a table, ignoring poisoning (a panic elsewhere must not stop the application).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// How a program was created, with the bytes kept until a launch needs them in the capture.
#[derive(Debug, Clone)]
pub enum Origin {
    Source(Vec<Vec<u8>>),
    Binary(Vec<Vec<u8>>),
    Il(Vec<u8>),
    BuiltIn(String),
    Linked(Vec<Compiled>),
}

/// One input of `clLinkProgram`, as it was compiled.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub origin: Arc<Origin>,
    pub compile_options: String,
    pub headers: Vec<(String, Vec<u8>)>,
    pub includes: Option<Arc<Scanned>>,
}

/// The files a program included when it was built (`cltrap_capture::includes::scan`).
#[derive(Debug, Clone)]
pub struct Scanned {
    /// The working directory at build time.
    pub cwd: String,
    pub files: Vec<cltrap_capture::includes::Found>,
}

/// Everything known about one program object.
#[derive(Debug, Clone)]
pub struct Program {
    pub origin: Arc<Origin>,
    /// Options of clBuildProgram / clLinkProgram exactly as the application gave them.
    pub options: String,
    /// Options of clCompileProgram and the headers it got (for programs later linked).
    pub compile_options: String,
    pub headers: Vec<(String, Vec<u8>)>,
    /// The files the last successful build or compile included.
    pub includes: Option<Arc<Scanned>>,
    /// Whether the driver got options other than the application's (`-cl-kernel-arg-info`).
    pub options_extended: bool,
    /// The last clBuildProgram failed: `options` are what it was asked, not what the
    /// program's executable (an earlier build's, if any) was built with.
    pub last_build_failed: bool,
    pub devices: Vec<String>,
    pub site: Option<Site>,
    /// The stored ProgramRecord blob, once a launch needed it.
    pub record: Option<Hash>,
    /// Per kernel name, what [`super::unwritten`] found (scanned once per program, not once
    /// per kernel object: some applications create a kernel object per launch).
    pub unwritten: Vec<(String, Arc<Vec<bool>>)>,
}

impl Program {
    /// A freshly created program.
    pub fn new(origin: Origin, devices: Vec<String>, site: Option<Site>) -> Program {
        Program {
            origin: Arc::new(origin),
            options: String::new(),
            compile_options: String::new(),
            headers: Vec::new(),
            includes: None,
            options_extended: false,
            last_build_failed: false,
            devices,
            site,
            record: None,
            unwritten: Vec::new(),
        }
    }
}

/// A kernel argument as last set by the application.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgValue {
    /// clSetKernelArg with a value: its bytes.
    Bytes(Vec<u8>),
    /// clSetKernelArg with a NULL value: a `__local` size.
    Local(usize),
    /// clSetKernelArgSVMPointer.
    Svm(usize),
}

/// Everything known about one kernel object.
#[derive(Debug, Clone, Default)]
pub struct Kernel {
    pub program: usize,
    /// Shared: every recorded launch takes the name (a reference count, not a copy).
    pub name: cltrap_capture::Text,
    /// Shared, copied on write by `clSetKernelArg` only while a launch being planned holds
    /// them: a launch takes them without copying every value.
    pub args: Arc<Vec<Option<ArgValue>>>,
    /// clGetKernelArgInfo results, queried at the first recorded launch (None inside: the
    /// driver has no argument info).
    pub info: Option<Option<Arc<Vec<cltrap_capture::ArgInfo>>>>,
    /// CL_KERNEL_NUM_ARGS, once asked.
    pub num_args: Option<u32>,
    /// Per argument: a `__global` pointer the kernel's source never writes through
    /// ([`super::unwritten`]), worked out at the first recorded launch.
    pub unwritten: Option<Arc<Vec<bool>>>,
}

struct MemEntry {
    id: u64,
    facts: Option<MemFacts>,
}

/// What never changes about a memory object: queried at its first recorded use only.
#[derive(Debug, Clone)]
pub struct MemFacts {
    pub kind: u32,
    pub flags: u64,
    pub size: usize,
    /// Parent buffer and origin, for sub-buffers.
    pub parent: Option<(usize, usize)>,
    /// For images: the record, the region to read and its packed size.
    pub image: Option<(cltrap_capture::ImageRecord, [usize; 3], usize)>,
}

/// The shim's memory of the application's objects.
#[derive(Default)]
pub struct Tables {
    pub programs: Mutex<HandleMap<usize, Program>>,
    pub kernels: Mutex<HandleMap<usize, Kernel>>,
    mems: Mutex<HandleMap<usize, MemEntry>>,
    /// Memory objects the application created and then released for good, until the driver
    /// hands the handle out again: the shim must never ask the driver about one (the handle
    /// may point at freed memory; PoCL crashes on it), only forward the application's call,
    /// whose answer (`CL_INVALID_MEM_OBJECT`) is the driver's.
    released_mems: Mutex<HandleSet<usize>>,
    user_events: Mutex<HandleSet<usize>>,
    pub devices: Mutex<HandleMap<usize, cltrap_capture::DeviceRecord>>,
    pub per_kernel: Mutex<HashMap<String, u64>>,
    next_mem: AtomicU64,
}

impl Tables {
    /// A new memory object: it gets a fresh id (even if the driver reused an old handle).
    pub fn mem_created(&self, mem: usize) {
        let id = self.next_mem.fetch_add(1, Ordering::Relaxed);
        lock(&self.mems).insert(mem, MemEntry { id, facts: None });
        lock(&self.released_mems).remove(&mem);
    }

    /// Whether `mem` is a memory object the application released for good (see
    /// `released_mems`): nothing of ours may touch it.
    pub fn mem_released(&self, mem: usize) -> bool {
        lock(&self.released_mems).contains(&mem)
    }

    /// The capture-wide id of a memory object (assigned now if it was never seen created).
    pub fn mem_id(&self, mem: usize) -> u64 {
        let mut m = lock(&self.mems);
        m.entry(mem)
            .or_insert_with(|| MemEntry {
                id: self.next_mem.fetch_add(1, Ordering::Relaxed),
                facts: None,
            })
            .id
    }

    /// The immutable facts of a memory object, once queried.
    pub fn mem_facts(&self, mem: usize) -> Option<MemFacts> {
        lock(&self.mems).get(&mem).and_then(|e| e.facts.clone())
    }

    /// Remembers the facts of a memory object (they never change during its life).
    pub fn set_mem_facts(&self, mem: usize, facts: MemFacts) {
        let id = self.mem_id(mem);
        lock(&self.mems).insert(
            mem,
            MemEntry {
                id,
                facts: Some(facts),
            },
        );
    }

    /// Whether `mem` is a memory object the application created (argument-info fallback).
    pub fn is_mem(&self, mem: usize) -> bool {
        lock(&self.mems).contains_key(&mem)
    }

    /// Forgets everything kept under `handle` (a program, kernel or memory object the
    /// application released for good; see [`super::lifetime`]).
    pub fn forget(&self, handle: usize) {
        lock(&self.programs).remove(&handle);
        lock(&self.kernels).remove(&handle);
        if lock(&self.mems).remove(&handle).is_some() {
            lock(&self.released_mems).insert(handle);
        }
    }

    /// A user event was created: until it is set, the shim must not block on the queue.
    pub fn user_event_created(&self, ev: usize) {
        lock(&self.user_events).insert(ev);
    }

    /// A user event was set.
    pub fn user_event_set(&self, ev: usize) {
        lock(&self.user_events).remove(&ev);
    }

    /// Whether any user event is still unset (waiting could then deadlock the application).
    pub fn user_events_pending(&self) -> bool {
        !lock(&self.user_events).is_empty()
    }
}

/// The process-wide tables.
pub fn tables() -> &'static Tables {
    static T: once_cell::sync::Lazy<Tables> = once_cell::sync::Lazy::new(Tables::default);
    &T
}
