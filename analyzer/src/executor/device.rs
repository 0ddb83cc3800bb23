//! Choosing and opening a device.

use super::cl::{info_string, Context, Queue};
use super::{cl_err, ExecError};
use opencl_sys::{
    cl_device_id, cl_platform_id, CL_DEVICE_NAME, CL_DEVICE_TYPE_ALL, CL_DEVICE_VERSION,
    CL_DRIVER_VERSION, CL_PLATFORM_NAME, CL_QUEUE_PROFILING_ENABLE,
};

/// Which platform and device to use: each by index (`0`) or case-insensitive name substring
/// (`pocl`, `nvidia`). `None` = the first platform that has a device, its first device.
/// Also the `--platform`/`--device` options of every command that opens a device.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct DeviceSelector {
    /// Platform index or name substring; `None` = any platform with a device.
    #[arg(long, help = "Platform by index or case-insensitive name substring")]
    pub platform: Option<String>,
    /// Device index or name substring within the platform; `None` = its first device.
    #[arg(long, help = "Device by index or case-insensitive name substring")]
    pub device: Option<String>,
}

/// Facts about the opened device, for reports.
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    /// Platform name (`CL_PLATFORM_NAME`).
    pub platform: String,
    /// Device name (`CL_DEVICE_NAME`).
    pub name: String,
    /// OpenCL version the device reports (`CL_DEVICE_VERSION`).
    pub version: String,
    /// Driver version (`CL_DRIVER_VERSION`).
    pub driver_version: String,
}

/// An open device: context and a profiling queue. Programs built in a session run in it.
pub struct Session {
    pub(crate) device: cl_device_id,
    // Field order matters: the staging area is unmapped (on the queue) before the queue is
    // released, the queue before the context.
    /// Pinned memory for the reads of a trip on a GPU ([`Session::staging`]).
    staging: std::cell::OnceCell<Option<super::staging::Staging>>,
    /// Stage reads on a CPU device too (`CLTRAP_TEST_STAGING=on`: tests of the staging path
    /// on PoCL).
    pub(super) stage_on_cpu: bool,
    pub(crate) queue: Queue,
    pub(crate) context: Context,
    info: DeviceInfo,
    /// Sub-buffer origin alignment in bytes, for guard zones (queried once here, not per run).
    pub(crate) sub_buffer_align: usize,
    /// A CPU device ([`Session::runs_in_this_process`]).
    cpu: bool,
    /// Build a capture's binary and IL programs on a CPU device too ([`cpu_code`]).
    ///
    /// [`cpu_code`]: super::cpu_code
    trust_binaries: bool,
    /// Times the host has waited for the device ([`Session::device_waits`]).
    waits: std::cell::Cell<u64>,
    /// Where this session's runs spent their host time ([`Session::run_split`]).
    split: std::cell::Cell<RunSplit>,
}

/// Where the runs of a [`Session`] spent their host time, summed, in nanoseconds. Why: a
/// replay far slower than its kernels (`replay --timing`) must say whether the driver's
/// object creation, the enqueues or the round trips to the device cost it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunSplit {
    /// Getting the kernel object (and its argument count).
    pub kernel_ns: u64,
    /// Creating (and uploading) the memory objects not bound from the device.
    pub objects_ns: u64,
    /// Setting the arguments, enqueuing the kernel, its reads and what rides with them.
    pub enqueue_ns: u64,
    /// Waiting for the device to finish them.
    pub wait_ns: u64,
}

impl RunSplit {
    /// The sums of `self` since `earlier`.
    pub fn since(&self, earlier: &RunSplit) -> RunSplit {
        RunSplit {
            kernel_ns: self.kernel_ns.saturating_sub(earlier.kernel_ns),
            objects_ns: self.objects_ns.saturating_sub(earlier.objects_ns),
            enqueue_ns: self.enqueue_ns.saturating_sub(earlier.enqueue_ns),
            wait_ns: self.wait_ns.saturating_sub(earlier.wait_ns),
        }
    }

    /// Adds `other`'s sums to these.
    pub fn add(&mut self, other: &RunSplit) {
        self.kernel_ns += other.kernel_ns;
        self.objects_ns += other.objects_ns;
        self.enqueue_ns += other.enqueue_ns;
        self.wait_ns += other.wait_ns;
    }
}

fn matches(sel: &str, index: usize, name: &str) -> bool {
    match sel.trim().parse::<usize>() {
        Ok(i) => i == index,
        Err(_) => name.to_lowercase().contains(&sel.trim().to_lowercase()),
    }
}

/// Platform and device enumeration is not safe from several threads at once: PoCL 3.1
/// initialises its devices lazily and tells a racing caller it has none. Every enumeration
/// here holds this lock from the first query to the last.
static ENUMERATION: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn enumeration_lock() -> std::sync::MutexGuard<'static, ()> {
    ENUMERATION
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn platforms() -> Result<Vec<(cl_platform_id, String)>, ExecError> {
    let ids = match cl3::platform::get_platform_ids() {
        Ok(ids) => ids,
        Err(opencl_sys::CL_PLATFORM_NOT_FOUND_KHR) => return Err(ExecError::NoPlatform),
        Err(c) => return Err(cl_err("clGetPlatformIDs")(c)),
    };
    if ids.is_empty() {
        return Err(ExecError::NoPlatform);
    }
    Ok(ids
        .into_iter()
        .map(|p| {
            let name = cl3::platform::get_platform_data(p, CL_PLATFORM_NAME)
                .map(info_string)
                .unwrap_or_default();
            (p, name)
        })
        .collect())
}

fn devices(p: cl_platform_id) -> Vec<(cl_device_id, String)> {
    cl3::device::get_device_ids(p, CL_DEVICE_TYPE_ALL)
        .unwrap_or_default()
        .into_iter()
        .map(|d| (d, device_string(d, CL_DEVICE_NAME)))
        .collect()
}

fn device_string(d: cl_device_id, what: u32) -> String {
    cl3::device::get_device_data(d, what)
        .map(info_string)
        .unwrap_or_default()
}

/// Every platform with its devices, as `(platform name, [device names])`.
pub fn list_devices() -> Result<Vec<(String, Vec<String>)>, ExecError> {
    let _one_at_a_time = enumeration_lock();
    Ok(platforms()?
        .into_iter()
        .map(|(p, name)| (name, devices(p).into_iter().map(|(_, n)| n).collect()))
        .collect())
}

// SAFETY: OpenCL (1.1 and later) makes every API call thread-safe except clSetKernelArg on
// one kernel from several threads; a Session creates a fresh kernel for every run, so
// moving a Session (and the programs built in it) to another thread is sound. It is not
// `Sync`: runs on one queue are meant to be issued from one thread at a time.
unsafe impl Send for Session {}

impl Session {
    /// Opens the selected device with a fresh context and a profiling, in-order queue.
    pub fn open(sel: &DeviceSelector) -> Result<Session, ExecError> {
        let _one_at_a_time = enumeration_lock();
        let all = platforms()?;
        let listing = |v: &[(usize, String)]| {
            v.iter()
                .map(|(i, n)| format!("{i}: {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let named: Vec<(usize, String)> = all
            .iter()
            .enumerate()
            .map(|(i, (_, n))| (i, n.clone()))
            .collect();
        let candidates: Vec<&(cl_platform_id, String)> = match &sel.platform {
            Some(want) => {
                let v: Vec<_> = all
                    .iter()
                    .enumerate()
                    .filter(|(i, (_, n))| matches(want, *i, n))
                    .map(|(_, p)| p)
                    .collect();
                if v.is_empty() {
                    return Err(ExecError::NoSuchPlatform {
                        want: want.clone(),
                        available: listing(&named),
                    });
                }
                v
            }
            None => all.iter().collect(),
        };
        let mut chosen = None;
        for (p, pname) in &candidates {
            let devs = devices(*p);
            let pick = match &sel.device {
                Some(want) => devs
                    .iter()
                    .enumerate()
                    .find(|(i, (_, n))| matches(want, *i, n))
                    .map(|(_, d)| d.clone()),
                None => devs.first().cloned(),
            };
            match pick {
                Some(d) => {
                    chosen = Some((*p, pname.clone(), d));
                    break;
                }
                None if sel.platform.is_some() => {
                    let dn: Vec<(usize, String)> = devs
                        .iter()
                        .enumerate()
                        .map(|(i, (_, n))| (i, n.clone()))
                        .collect();
                    return Err(ExecError::NoSuchDevice {
                        want: sel.device.clone().unwrap_or_default(),
                        platform: pname.clone(),
                        available: if dn.is_empty() {
                            "none".into()
                        } else {
                            listing(&dn)
                        },
                    });
                }
                None => {}
            }
        }
        let (_platform, pname, (device, dname)) = match chosen {
            Some(c) => c,
            None => {
                return Err(match &sel.device {
                    Some(want) => ExecError::NoSuchDevice {
                        want: want.clone(),
                        platform: "any platform".into(),
                        available: all
                            .iter()
                            .flat_map(|(p, _)| devices(*p).into_iter().map(|(_, n)| n))
                            .collect::<Vec<_>>()
                            .join(", "),
                    },
                    None => ExecError::NoPlatform,
                })
            }
        };
        let context = Context(
            cl3::context::create_context(&[device], std::ptr::null(), None, std::ptr::null_mut())
                .map_err(cl_err(format!("creating a context on {dname}")))?,
        );
        // SAFETY: `device` belongs to `context`, which was created for exactly that device.
        #[allow(deprecated)]
        let queue = Queue(
            unsafe {
                cl3::command_queue::create_command_queue(
                    context.raw(),
                    device,
                    CL_QUEUE_PROFILING_ENABLE,
                )
            }
            .map_err(cl_err(format!("creating a queue on {dname}")))?,
        );
        let info = DeviceInfo {
            platform: pname,
            name: dname,
            version: device_string(device, CL_DEVICE_VERSION),
            driver_version: device_string(device, CL_DRIVER_VERSION),
        };
        // A device whose type cannot be read counts as a CPU device (the cautious answer).
        let cpu = cl3::device::get_device_info(device, opencl_sys::CL_DEVICE_TYPE)
            .map_or(true, |t| t.to_ulong() & opencl_sys::CL_DEVICE_TYPE_CPU != 0);
        crate::heap::session_opened(cpu);
        Ok(Session {
            device,
            staging: std::cell::OnceCell::new(),
            stage_on_cpu: std::env::var("CLTRAP_TEST_STAGING").is_ok_and(|v| v.trim() == "on"),
            queue,
            context,
            info,
            cpu,
            trust_binaries: super::cpu_code::binaries_trusted_by_env(),
            sub_buffer_align: super::guard::sub_buffer_align(device),
            waits: std::cell::Cell::new(0),
            split: std::cell::Cell::new(RunSplit::default()),
        })
    }

    /// How many times this session's host thread has blocked until the device finished
    /// something (a wait for events, a blocking read, a queue drained). Why: on a GPU each
    /// wait is a round trip (a submission, a wake-up) that costs more than a small kernel, so
    /// `replay --timing` reports how many a replay made per launch.
    pub fn device_waits(&self) -> u64 {
        self.waits.get()
    }

    /// The pinned staging area for the reads of a trip, made at the first call; None on a CPU
    /// device or where the driver refuses it ([`super::staging`]).
    pub(super) fn staging(&self) -> Option<&super::staging::Staging> {
        if self.cpu && !self.stage_on_cpu {
            return None;
        }
        self.staging
            .get_or_init(|| super::staging::Staging::open(self.context.raw(), self.queue.raw()))
            .as_ref()
    }

    /// Where this session's runs spent their host time so far ([`RunSplit`]).
    pub fn run_split(&self) -> RunSplit {
        self.split.get()
    }

    /// Adds `f`'s change to this session's [`RunSplit`].
    pub(crate) fn note_split(&self, f: impl FnOnce(&mut RunSplit)) {
        let mut s = self.split.get();
        f(&mut s);
        self.split.set(s);
    }

    /// Runs `f` and says how many times the host waited for the device meanwhile
    /// ([`Session::device_waits`]).
    pub fn waited<T>(&self, f: impl FnOnce() -> T) -> (T, u64) {
        let before = self.device_waits();
        let out = f();
        (out, self.device_waits().saturating_sub(before))
    }

    /// Counts one wait of the host for the device ([`Session::device_waits`]).
    pub(crate) fn note_wait(&self) {
        self.waits.set(self.waits.get() + 1);
    }

    /// The opened device.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Whether the device is a CPU (PoCL): its kernels run inside this process, so a kernel
    /// that writes out of bounds can reach this process's own memory. A GPU's cannot.
    pub fn runs_in_this_process(&self) -> bool {
        self.cpu
    }

    /// Lets (or stops) this session build a capture's binary and IL programs on a CPU device,
    /// which runs them as native code in this process. Why a switch: only the user knows
    /// whether a capture comes from a source they trust; the CLI sets it from
    /// `CLTRAP_TRUST_BINARIES`, which [`Session::open`] reads.
    pub fn trust_binaries(&mut self, trusted: bool) {
        self.trust_binaries = trusted;
    }

    /// Extra build options for an OpenCL C text from a capture on this device.
    pub(super) fn guard_options(&self) -> &'static str {
        if self.cpu {
            super::cpu_code::NO_ASM_OPTIONS.as_str()
        } else {
            ""
        }
    }

    /// Refuses a binary or IL program (`what`) on a CPU device unless trusted.
    pub(super) fn may_run_binary(&self, what: &str) -> Result<(), ExecError> {
        if self.cpu && !self.trust_binaries {
            Err(super::cpu_code::untrusted(what))
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_match_by_index_or_name_substring() {
        assert!(matches("0", 0, "Portable Computing Language"));
        assert!(!matches("1", 0, "Portable Computing Language"));
        assert!(matches("portable", 3, "Portable Computing Language"));
        assert!(matches(" NVIDIA ", 1, "NVIDIA CUDA"));
        assert!(!matches("intel", 0, "NVIDIA CUDA"));
    }
}
