//! Coverage counters of live launches: read back without blocking the application, written
//! to `$CLTRAP_DIR/coverage.jsonl` once each read completed, the rest waited for at exit.
//!
//! One line per launch: `{"key", "kernel", "global", "local", "counters", "words", "pid"}`
//! where `key` names `instrument/<key>.json` (the map) and `counters` is the blob (in the
//! capture's blob store, `blobs/`) holding the little-endian u32 counter buffer, so identical
//! vectors — a kernel launched a thousand times the same way — are stored once.

use crate::core::{info_value, lock, queue_facts};
use crate::Next;
use cltrap_capture::BlobStore;
use once_cell::sync::Lazy;
use opencl_sys::*;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// What a counter read-back belongs to.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Instrument key of the program.
    pub key: String,
    /// Kernel name.
    pub kernel: String,
    /// Global size.
    pub global: Vec<u64>,
    /// Local size as launched (None = NULL).
    pub local: Option<Vec<u64>>,
}

struct Pending {
    event: usize,
    data: Box<[u32]>,
    launch: Launch,
}

// The buffers are only written by the driver's read (finished before we look at them again).
unsafe impl Send for Pending {}

static PENDING: Lazy<Mutex<Vec<Pending>>> = Lazy::new(|| Mutex::new(Vec::new()));
/// The `Next` table the reads were enqueued through (a door's static table), for the exit hook.
static NEXT: AtomicUsize = AtomicUsize::new(0);
static AT_EXIT: AtomicBool = AtomicBool::new(false);
static OUT: Lazy<Mutex<Option<Sink>>> = Lazy::new(|| Mutex::new(None));

struct Sink {
    blobs: BlobStore,
    file: std::fs::File,
}

/// Enqueues a non-blocking read of `buffer` (`words` u32s) after `after` (the kernel's
/// event), to be written out when it completes. `false` if the read could not be enqueued.
///
/// `next` must be one of the doors' tables (both are statics that live as long as the
/// process): the exit hook uses it to wait for reads still pending.
pub fn read_back(
    next: &Next,
    queue: cl_command_queue,
    buffer: cl_mem,
    words: usize,
    after: cl_event,
    launch: Launch,
) -> bool {
    let Some(read) = next.clEnqueueReadBuffer else {
        return false;
    };
    let mut data = vec![0u32; words].into_boxed_slice();
    let mut ev: cl_event = std::ptr::null_mut();
    // Without the kernel's event (the application asked for none), an out-of-order queue needs
    // a barrier for the read to come after the kernel; an in-order queue orders it anyway.
    let mut barrier: cl_event = std::ptr::null_mut();
    let after = if after.is_null() && out_of_order(next, queue) {
        match next.clEnqueueBarrierWithWaitList {
            // SAFETY: a barrier on the application's queue, its event ours.
            Some(b) if unsafe { b(queue, 0, std::ptr::null(), &mut barrier) } == CL_SUCCESS => {
                barrier
            }
            _ => return false,
        }
    } else {
        after
    };
    let wait = [after];
    let (n, list) = if after.is_null() {
        (0, std::ptr::null())
    } else {
        (1, wait.as_ptr())
    };
    // SAFETY: `data` lives in PENDING until the read completed (waited for at exit at the
    // latest); the buffer holds `words` u32s.
    let r = unsafe {
        read(
            queue,
            buffer,
            CL_FALSE,
            0,
            words * 4,
            data.as_mut_ptr().cast(),
            n,
            list,
            &mut ev,
        )
    };
    if !barrier.is_null() {
        if let Some(release) = next.clReleaseEvent {
            // SAFETY: our own event, released once (the read keeps what it waits for).
            unsafe { release(barrier) };
        }
    }
    if r != CL_SUCCESS || ev.is_null() {
        return false;
    }
    NEXT.store(next as *const Next as usize, Ordering::Relaxed);
    if !AT_EXIT.swap(true, Ordering::Relaxed) {
        // Registered after the driver initialised, so it runs before the driver's own exit
        // handlers, while the reads can still complete.
        // SAFETY: registering a plain extern "C" function.
        unsafe { libc::atexit(at_exit) };
    }
    lock(&PENDING).push(Pending {
        event: ev as usize,
        data,
        launch,
    });
    true
}

/// Whether `queue` may run commands out of order (also when the driver did not say).
fn out_of_order(next: &Next, queue: cl_command_queue) -> bool {
    let facts = queue_facts(next, queue);
    facts.device == 0 || facts.properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE != 0
}

/// Writes out every read that has completed (cheap when none is pending).
pub fn poll(next: &Next) {
    let done: Vec<Pending> = {
        let mut pending = lock(&PENDING);
        if pending.is_empty() {
            return;
        }
        let Some(info) = next.clGetEventInfo else {
            return;
        };
        let mut done = Vec::new();
        let mut i = 0;
        while i < pending.len() {
            // SAFETY: standard info query on our own read event.
            let status = info_value::<cl_int>(|s, p, r| unsafe {
                info(
                    pending[i].event as cl_event,
                    CL_EVENT_COMMAND_EXECUTION_STATUS,
                    s,
                    p,
                    r,
                )
            });
            if status.is_none_or(|s| s == CL_COMPLETE || s < 0) {
                done.push(pending.swap_remove(i));
            } else {
                i += 1;
            }
        }
        done
    };
    for p in done {
        finish(next, p);
    }
}

extern "C" fn at_exit() {
    let _ = crate::door::quietly(flush);
}

/// Waits for every pending read and writes it out.
fn flush() {
    let ptr = NEXT.load(Ordering::Relaxed);
    if ptr == 0 {
        return;
    }
    // SAFETY: set in `read_back` from a door's table, which lives as long as the process.
    let next: &Next = unsafe { &*(ptr as *const Next) };
    let all: Vec<Pending> = std::mem::take(&mut *lock(&PENDING));
    for p in all {
        if let Some(wait) = next.clWaitForEvents {
            let ev = [p.event as cl_event];
            // SAFETY: our own live event.
            unsafe { wait(1, ev.as_ptr()) };
        }
        finish(next, p);
    }
}

fn finish(next: &Next, p: Pending) {
    let ev = p.event as cl_event;
    let status = next.clGetEventInfo.and_then(|info| {
        // SAFETY: standard info query on our own read event.
        info_value::<cl_int>(|s, q, r| unsafe {
            info(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, s, q, r)
        })
    });
    if let Some(release) = next.clReleaseEvent {
        // SAFETY: our own event, released once.
        unsafe { release(ev) };
    }
    if status != Some(CL_COMPLETE) {
        super::shadow::say_once(&format!(
            "coverage counters of kernel {} could not be read back (status {status:?}); that launch is not counted",
            p.launch.kernel
        ));
        return;
    }
    if let Err(e) = write(&p) {
        super::shadow::say_once(&format!("cannot write coverage results: {e}"));
    }
}

fn write(p: &Pending) -> Result<(), String> {
    let mut out = lock(&OUT);
    if out.is_none() {
        use cltrap_capture::writer_fs::{ensure_capture_dir, open_regular, Open};
        let settings = crate::state::settings().ok_or("capture settings are gone")?;
        let dir = settings.dir.clone();
        let access = crate::sink::access(settings);
        ensure_capture_dir(&dir, access).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join("coverage.jsonl");
        let file = open_regular(&path, Open::Append, access)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        *out = Some(Sink {
            blobs: BlobStore::with_access(&dir, access),
            file,
        });
    }
    let sink = out.as_mut().ok_or("no sink")?;
    let bytes: Vec<u8> = p.data.iter().flat_map(|w| w.to_le_bytes()).collect();
    let hash = sink.blobs.put(&bytes).map_err(|e| e.to_string())?;
    let line = serde_json::json!({
        "key": p.launch.key,
        "kernel": p.launch.kernel,
        "global": p.launch.global,
        "local": p.launch.local,
        "counters": hash,
        "words": p.data.len(),
        "pid": std::process::id(),
    });
    let mut text = line.to_string();
    text.push('\n');
    // One write of a whole line on an O_APPEND file: lines of concurrent processes never mix.
    sink.file
        .write_all(text.as_bytes())
        .map_err(|e| e.to_string())
}
