//! The capture controls, defined once (CLIntercept's `controls.h` pattern).
//!
//! [`CONTROLS`] is the single table. The shim reads the `CLTRAP_*` environment variables
//! from it, `cltrap run` derives its flags from it (and turns them into those variables for
//! the application), and `cltrap controls --markdown` prints the controls table of the guide (docs/src/controls.md) from it.

use std::collections::HashMap;
use std::path::PathBuf;

/// One control: its environment variable, `cltrap run` flag, default and help text.
#[derive(Debug, Clone, Copy)]
pub struct Control {
    /// Environment variable the shim reads.
    pub env: &'static str,
    /// Long flag of `cltrap run` (without `--`).
    pub flag: &'static str,
    /// Value placeholder shown in help.
    pub value_name: &'static str,
    /// Default when unset (empty = none).
    pub default: &'static str,
    /// One-line description.
    pub help: &'static str,
}

impl Control {
    /// Whether this control is an on/off switch (its `value_name` is empty): `--flag` alone
    /// means `on`, `--flag=off` turns it off, and the flag never consumes the next word
    /// (which may be the application).
    pub fn is_switch(&self) -> bool {
        self.value_name.is_empty()
    }
}

/// Every capture control. Order is the order of `cltrap run --help` and the guide's controls table.
pub const CONTROLS: &[Control] = &[
    Control {
        env: "CLTRAP_DIR",
        flag: "out",
        value_name: "DIR",
        default: "./cltrap-out",
        help: "Capture directory (created; an existing capture is appended to).",
    },
    Control {
        env: "CLTRAP_CAPTURE",
        flag: "capture",
        value_name: "on|off",
        default: "on",
        help: "`off` loads the shim as a pure pass-through (for measuring its overhead).",
    },
    Control {
        env: "CLTRAP_KERNELS",
        flag: "kernels",
        value_name: "GLOBS",
        default: "*",
        help: "Comma-separated kernel-name globs to capture (`*` and `?` wildcards).",
    },
    Control {
        env: "CLTRAP_LAUNCHES",
        flag: "launches",
        value_name: "A..B",
        default: "",
        help: "Capture only enqueues A..B (0-based, B exclusive; either side may be empty) of the whole run.",
    },
    Control {
        env: "CLTRAP_PER_KERNEL",
        flag: "per-kernel",
        value_name: "N",
        default: "",
        help: "Capture at most the first N launches of each kernel name.",
    },
    Control {
        env: "CLTRAP_BUFFERS",
        flag: "buffers",
        value_name: "full|hash|none",
        default: "full",
        help: "Buffer contents before/after each launch: stored (deduplicated), digests only, or not read.",
    },
    Control {
        env: "CLTRAP_DEVICE_DIGEST",
        flag: "device-digest",
        value_name: "auto|on|host|off",
        default: "auto",
        help: "Digest buffer contents where they are instead of reading them back: on a GPU, a small kernel in the application's queue digests them on the device and only the digest (plus contents not stored yet in `full` mode) is read back; on a CPU device, a native kernel hashes them in place in host memory and copies only contents the launch stores and the capture does not hold yet. `auto`: buffers of 64 KiB or more, in place on CPU devices and on the device elsewhere; `on`: every buffer on every device with the device kernel; `host`: every buffer in place on CPU devices, read back elsewhere; `off`: always read contents back.",
    },
    Control {
        env: "CLTRAP_PREPARE",
        flag: "prepare",
        value_name: "ahead|at-launch",
        default: "ahead",
        help: "When the device-side digest machinery of a context and device (the digest kernel, its first run, the pinned memory its partials and, in `full` mode, the contents read back go to) is made. `ahead`: as soon as the application has a queue on the device and a buffer the capture will digest there, in that call (its set-up pays what its first launches would have); the first launches then pay nothing for it. `at-launch`: by the first launch that needs it.",
    },
    Control {
        env: "CLTRAP_AT_FINISH",
        flag: "at-finish",
        value_name: "write|hand",
        default: "write",
        help: "What the application's `clFinish` does with the launches it finished. `write`: writes their records before returning, so a capture is complete up to the last `clFinish` even if the process is then killed. `hand`: hands them to the capture's writer thread, which writes them at its next turn (within about a millisecond while it keeps up with the application); `clFinish` returns sooner, but a process that ends without exiting normally (killed, or `_exit`) right after a `clFinish` may lose that `clFinish`'s launches, and the disk budget sees launches only once written (see the guide's capture format page, docs/src/capture-format.md).",
    },
    Control {
        env: "CLTRAP_MAX_MB",
        flag: "max-mb",
        value_name: "MB|auto",
        default: "auto",
        help: "Disk budget for stored contents (spooled bytes and compressed chunks); past `--derive-after-mb` (at most half of it) a launch stores only the inputs that the previous launch did not leave (the others are re-created at replay by re-executing it, with a stored checkpoint every 64 to 1024 launches, spaced so that storing checkpoints costs at most a fifth of the run) and digests of its outputs, so every launch stays replayable; past all of it, launches whose inputs all derive from earlier ones and one launch per kernel (said once on stderr; `cltrap list` marks derived `(d)` and blocked `(!)` launches). `auto`: a quarter of the free space of the capture's filesystem, between 256 MB and 64 GB (4096 when the free space is not known).",
    },
    Control {
        env: "CLTRAP_DERIVE_AFTER_MB",
        flag: "derive-after-mb",
        value_name: "MB|auto",
        default: "auto",
        help: "Contents kept (compressed chunks, and spooled contents at their whole size even where the spool holds only what changed) up to which every content is stored; past it (or past half of `--max-mb`, whichever comes first) inputs that the previous launch left are derived, i.e. re-created at replay by re-executing that launch. Larger: faster replays of long chains, more launches replayable on other devices, bigger captures and slower ones. `auto`: paced by the run, 256 MB and 128 MB per second after the first launch, so storing keeps up with the application, at most a sixty-fourth of the free space of the capture's filesystem, between 512 MB and 8 GB (512 when the free space is not known).",
    },
    Control {
        env: "CLTRAP_DERIVE_PACE",
        flag: "derive-pace",
        value_name: "MB,MB/s",
        default: "256,128",
        help: "How the `auto` derive threshold grows with the run: every content is stored up to the first number (MB), and up to the second (MB) more per second after the first launch, at most `--derive-after-mb`'s `auto` value. Smaller: a short run that rewrites large buffers slows down less, and more of its launches derive their inputs. Ignored when `--derive-after-mb` is a number.",
    },
    Control {
        env: "CLTRAP_SPOOL_MAX_MB",
        flag: "spool-max-mb",
        value_name: "MB|auto",
        default: "auto",
        help: "In buffer mode `full` the application appends new contents raw to the capture's spool and a `cltrap` process compacts them (chunks, compression); while one does (`cltrap run`), an application whose spool holds more than this waits for compaction (`CLTRAP_STATS` says how long: `spool.wait_ns`). `auto`: an eighth of the free space of the capture's filesystem, between 64 MB and 8 GB (1024 when the free space is not known). 0: no bound.",
    },
    Control {
        env: "CLTRAP_SPOOL_LANES",
        flag: "spool-lanes",
        value_name: "N|auto",
        default: "auto",
        help: "In buffer mode `full`, threads of the application's process that copy large new contents (1 MB and more) into the spool, several at once into separate files (a content of 2 MB and more in parts on all of them at once), while the capture's writer goes on with the next launches; a launch's record is written once its contents are. `auto`: a quarter of the machine's cores, between 1 and 4. 0: the writer copies them itself.",
    },
    Control {
        env: "CLTRAP_STATS",
        flag: "stats",
        value_name: "FILE",
        default: "",
        help: "When the application exits, write the capture's counters (contents read back over the bus, device-side digests, snapshots read back) and where its time went (nanoseconds and calls per phase: planning, enqueues, landing, appending) to FILE as JSON.",
    },
    Control {
        env: "CLTRAP_COVERAGE",
        flag: "coverage",
        value_name: "",
        default: "off",
        help: "Swap coverage-instrumented kernels into the running application; `cltrap run` writes the report (terminal, JSON, LCOV, HTML in DIR/coverage) when it exits.",
    },
    Control {
        env: "CLTRAP_PERMUTE",
        flag: "permute",
        value_name: "SEED",
        default: "",
        help: "Run the application's kernels with work-group ids permuted (a schedule per launch, from SEED and the launch number; 0 = the identity, the baseline): results that change reveal inter-group races.",
    },
    Control {
        env: "CLTRAP_SHARE",
        flag: "share",
        value_name: "",
        default: "off",
        help: "Make the capture's new files and folders readable by other users (`0644`/`0755`, less what the umask takes). Off: `0600`/`0700`, since a capture holds the application's data. Either way the shim refuses a capture folder that belongs to another user.",
    },
    Control {
        env: "CLTRAP_REFUSE_BINARIES",
        flag: "refuse-binaries",
        value_name: "",
        default: "off",
        help: "Make every `clCreateProgramWithBinary` fail with `CL_INVALID_BINARY`, so an application that caches compiled kernels on disk builds them from source and the capture holds sources the analyses can read. Risk: an application with no fallback to source (or with binaries only) fails where it would have run.",
    },
    Control {
        env: "CLTRAP_DECLARED_ONLY",
        flag: "declared-only",
        value_name: "",
        default: "off",
        help: "Trust only declarations for what a kernel cannot change: every buffer argument not declared `__constant` or `const` is read after each launch too. By default the shim also scans the program's OpenCL C text and reads a `__global` pointer the kernel provably never writes through only before each launch (`CLTRAP_STATS`: `unwritten_by_source`); the scan answers \"may write\" at every doubt, and this turns it off should it ever be wrong about a program (a replay of the launch that wrote such a buffer would mismatch).",
    },
    Control {
        env: "CLTRAP_TEST_DIGEST_BUILD",
        flag: "test-digest-build",
        value_name: "ok|fail",
        default: "ok",
        help: "Test only: `fail` adds an `#error` line to the device-digest program, so its build fails on the real driver and launches take the read path (the fallback the tests check).",
    },
];

/// How much of each buffer the capture keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferMode {
    /// Contents stored as blobs: launches can be replayed.
    Full,
    /// Digests only: outputs can be compared with a replay, inputs cannot be restored.
    Hash,
    /// Nothing read: no synchronisation added to the application at all.
    None,
}

impl BufferMode {
    /// The control's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            BufferMode::Full => "full",
            BufferMode::Hash => "hash",
            BufferMode::None => "none",
        }
    }
}

/// Where the capture computes buffer digests (`CLTRAP_DEVICE_DIGEST`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceDigest {
    /// For buffers at least the shim's threshold in size: on the device on non-CPU devices, in
    /// place on CPU devices.
    Auto,
    /// On every device, for every buffer (what the tests use on PoCL's CPU device).
    On,
    /// In place, for every buffer, on devices that compute in host memory and run native
    /// kernels (a CPU device); read back elsewhere (what the tests use for that path).
    Host,
    /// Never: contents are always read back.
    Off,
}

/// What the application's `clFinish` does with the launches it finished
/// (`CLTRAP_AT_FINISH`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtFinish {
    /// Writes their records itself before returning: complete up to the last `clFinish`,
    /// `SIGKILL` included.
    Write,
    /// Hands them to the writer thread as complete and returns: cheaper per `clFinish`, but
    /// the launches of a `clFinish` right before the process is killed may be lost.
    Hand,
}

/// The settings of one capture, parsed from the controls.
#[derive(Debug, Clone)]
pub struct Settings {
    pub dir: PathBuf,
    pub capture: bool,
    pub kernels: Vec<String>,
    pub launches: (u64, u64),
    pub per_kernel: Option<u64>,
    pub buffers: BufferMode,
    pub max_bytes: u64,
    /// `CLTRAP_SPOOL_MAX_MB`: bytes the spool may hold before the application waits for a
    /// running compactor (0: no bound).
    pub spool_max_bytes: u64,
    /// `CLTRAP_SPOOL_LANES`: threads that write large spooled contents (None: `auto`).
    pub spool_lanes: Option<usize>,
    /// Free bytes of the capture's filesystem, when a budget control was `auto` and they
    /// were known (what [`Settings::budget_line`] says the defaults came from).
    pub free_bytes: Option<u64>,
    /// `CLTRAP_DERIVE_AFTER_MB`: stored bytes past which inputs are derived where they can be
    /// (or past half of [`Settings::max_bytes`], whichever is less). Under `auto`, the most
    /// the paced threshold ([`Settings::derive_threshold`]) grows to.
    pub derive_after_bytes: u64,
    /// `CLTRAP_DERIVE_AFTER_MB` is `auto`: the threshold grows with the run
    /// ([`Settings::derive_threshold`]).
    pub derive_paced: bool,
    /// `CLTRAP_DERIVE_PACE`: the paced threshold's floor (bytes) and growth (bytes per
    /// second of the run).
    pub derive_pace: (u64, u64),
    /// `CLTRAP_DEVICE_DIGEST`: digests computed on the device.
    pub device_digest: DeviceDigest,
    /// `CLTRAP_AT_FINISH`: who writes the launches an application's `clFinish` finished.
    pub at_finish: AtFinish,
    /// `CLTRAP_PREPARE=ahead`: the device-digest machinery is made before the first launch
    /// that needs it (when the application has a queue and a buffer digested there).
    pub prepare_ahead: bool,
    /// `CLTRAP_TEST_DIGEST_BUILD=fail`: the device-digest program is made not to build, so
    /// the tests can check the read-back fallback on a driver where it builds.
    pub test_digest_build_fails: bool,
    /// `CLTRAP_STATS`: where the shim writes its counters at exit.
    pub stats: Option<PathBuf>,
    /// `CLTRAP_COVERAGE`: swap coverage-instrumented kernels into the application.
    pub coverage: bool,
    /// `CLTRAP_PERMUTE`: swap schedule-permuted kernels in, with this seed.
    pub permute: Option<u64>,
    /// `CLTRAP_SHARE`: the capture's files readable by others (else only by this user).
    pub share: bool,
    /// `CLTRAP_REFUSE_BINARIES`: `clCreateProgramWithBinary` fails with `CL_INVALID_BINARY`.
    pub refuse_binaries: bool,
    /// `CLTRAP_DECLARED_ONLY`: only declarations say what a kernel cannot change (no scan of
    /// its source).
    pub declared_only: bool,
}

impl Settings {
    /// Parses settings from the process environment.
    pub fn from_env() -> Result<Settings, String> {
        let mut values = HashMap::new();
        for c in CONTROLS {
            if let Ok(v) = std::env::var(c.env) {
                values.insert(c.env, v);
            }
        }
        Settings::from_values(&values)
    }

    /// Parses settings from `env name → value`; absent names take their default.
    /// The error names the variable and the value that could not be understood.
    pub fn from_values(values: &HashMap<&str, String>) -> Result<Settings, String> {
        let get = |env: &str| -> String {
            values.get(env).cloned().unwrap_or_else(|| {
                CONTROLS
                    .iter()
                    .find(|c| c.env == env)
                    .map(|c| c.default)
                    .unwrap_or("")
                    .to_string()
            })
        };
        let bad =
            |env: &str, v: &str, want: &str| format!("{env}={v:?} is not valid: expected {want}");

        let capture = match get("CLTRAP_CAPTURE").as_str() {
            "on" | "1" | "true" | "" => true,
            "off" | "0" | "false" => false,
            v => return Err(bad("CLTRAP_CAPTURE", v, "on or off")),
        };
        let kernels: Vec<String> = get("CLTRAP_KERNELS")
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        let launches_s = get("CLTRAP_LAUNCHES");
        let launches = if launches_s.trim().is_empty() {
            (0, u64::MAX)
        } else {
            let (a, b) = launches_s
                .split_once("..")
                .ok_or_else(|| bad("CLTRAP_LAUNCHES", &launches_s, "A..B"))?;
            let a = if a.trim().is_empty() {
                0
            } else {
                a.trim()
                    .parse()
                    .map_err(|_| bad("CLTRAP_LAUNCHES", &launches_s, "A..B"))?
            };
            let b = if b.trim().is_empty() {
                u64::MAX
            } else {
                b.trim()
                    .parse()
                    .map_err(|_| bad("CLTRAP_LAUNCHES", &launches_s, "A..B"))?
            };
            (a, b)
        };
        let per_kernel_s = get("CLTRAP_PER_KERNEL");
        let per_kernel = if per_kernel_s.trim().is_empty() {
            None
        } else {
            Some(
                per_kernel_s
                    .trim()
                    .parse()
                    .map_err(|_| bad("CLTRAP_PER_KERNEL", &per_kernel_s, "a number"))?,
            )
        };
        let buffers = match get("CLTRAP_BUFFERS").as_str() {
            "full" | "" => BufferMode::Full,
            "hash" => BufferMode::Hash,
            "none" => BufferMode::None,
            v => return Err(bad("CLTRAP_BUFFERS", v, "full, hash or none")),
        };
        let device_digest = match get("CLTRAP_DEVICE_DIGEST").trim() {
            "auto" | "" => DeviceDigest::Auto,
            "on" | "1" | "true" => DeviceDigest::On,
            "off" | "0" | "false" => DeviceDigest::Off,
            "host" => DeviceDigest::Host,
            v => return Err(bad("CLTRAP_DEVICE_DIGEST", v, "auto, on, host or off")),
        };
        let at_finish = match get("CLTRAP_AT_FINISH").trim() {
            "write" | "" => AtFinish::Write,
            "hand" => AtFinish::Hand,
            v => return Err(bad("CLTRAP_AT_FINISH", v, "write or hand")),
        };
        let prepare_ahead = match get("CLTRAP_PREPARE").trim() {
            "ahead" | "" => true,
            "at-launch" => false,
            v => return Err(bad("CLTRAP_PREPARE", v, "ahead or at-launch")),
        };
        let test_digest_build_fails = match get("CLTRAP_TEST_DIGEST_BUILD").trim() {
            "ok" | "" => false,
            "fail" => true,
            v => return Err(bad("CLTRAP_TEST_DIGEST_BUILD", v, "ok or fail")),
        };
        let dir = PathBuf::from(get("CLTRAP_DIR"));
        let auto = |v: &str| matches!(v.trim(), "" | "auto");
        let mb = |env: &str| -> Result<Option<u64>, String> {
            let v = get(env);
            if auto(&v) {
                return Ok(None);
            }
            v.trim()
                .parse()
                .map(Some)
                .map_err(|_| bad(env, &v, "a number of megabytes or auto"))
        };
        let (max_mb, derive_mb, spool_mb) = (
            mb("CLTRAP_MAX_MB")?,
            mb("CLTRAP_DERIVE_AFTER_MB")?,
            mb("CLTRAP_SPOOL_MAX_MB")?,
        );
        let free_bytes = if max_mb.is_none() || derive_mb.is_none() || spool_mb.is_none() {
            crate::spool::free_bytes(&dir)
        } else {
            None
        };
        let budget = auto_budget(free_bytes);
        let max_bytes = max_mb.map_or(budget.0, |m| m.saturating_mul(1 << 20));
        let derive_after_bytes = derive_mb.map_or(budget.1, |m| m.saturating_mul(1 << 20));
        let spool_max_bytes = spool_mb.map_or(budget.2, |m| m.saturating_mul(1 << 20));
        let pace_s = get("CLTRAP_DERIVE_PACE");
        let derive_pace = match pace_s.trim() {
            "" => (PACE_FLOOR, PACE_BYTES_PER_S),
            v => v
                .split_once(',')
                .and_then(|(a, b)| {
                    Some((a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?))
                })
                .map(|(a, b)| (a.saturating_mul(1 << 20), b.saturating_mul(1 << 20)))
                .ok_or_else(|| {
                    bad(
                        "CLTRAP_DERIVE_PACE",
                        &pace_s,
                        "two numbers of megabytes, as in 256,128",
                    )
                })?,
        };
        let lanes_s = get("CLTRAP_SPOOL_LANES");
        let spool_lanes = match lanes_s.trim() {
            "" | "auto" => None,
            v => Some(
                v.parse::<usize>()
                    .ok()
                    .filter(|n| *n < crate::spool::LANES)
                    .ok_or_else(|| bad("CLTRAP_SPOOL_LANES", &lanes_s, "0 to 4, or auto"))?,
            ),
        };
        let coverage = match get("CLTRAP_COVERAGE").trim() {
            "on" | "1" | "true" => true,
            "off" | "0" | "false" | "" => false,
            v => return Err(bad("CLTRAP_COVERAGE", v, "on or off")),
        };
        let permute_s = get("CLTRAP_PERMUTE");
        let permute = if permute_s.trim().is_empty() {
            None
        } else {
            Some(
                permute_s
                    .trim()
                    .parse()
                    .map_err(|_| bad("CLTRAP_PERMUTE", &permute_s, "a seed (a whole number)"))?,
            )
        };
        let switch = |env: &str| -> Result<bool, String> {
            match get(env).trim() {
                "on" | "1" | "true" => Ok(true),
                "off" | "0" | "false" | "" => Ok(false),
                v => Err(bad(env, v, "on or off")),
            }
        };
        let share = switch("CLTRAP_SHARE")?;
        let refuse_binaries = switch("CLTRAP_REFUSE_BINARIES")?;
        let declared_only = switch("CLTRAP_DECLARED_ONLY")?;
        if coverage && permute.is_some() {
            return Err("CLTRAP_COVERAGE and CLTRAP_PERMUTE cannot be combined: choose one".into());
        }
        Ok(Settings {
            coverage,
            permute,
            share,
            refuse_binaries,
            declared_only,
            dir,
            capture,
            kernels,
            launches,
            per_kernel,
            buffers,
            max_bytes,
            derive_after_bytes,
            derive_paced: derive_mb.is_none(),
            derive_pace,
            spool_max_bytes,
            spool_lanes,
            free_bytes,
            device_digest,
            at_finish,
            prepare_ahead,
            test_digest_build_fails,
            stats: Some(get("CLTRAP_STATS"))
                .filter(|s| !s.trim().is_empty())
                .map(PathBuf::from),
        })
    }

    /// Contents stored past which inputs are derived, `run` after the capture's first launch
    /// that plans its contents. A number given: that number. `auto`: the pace's floor
    /// ([`PACE_FLOOR`] unless `CLTRAP_DERIVE_PACE` says otherwise) plus its growth
    /// ([`PACE_BYTES_PER_S`]) per second of the run, at most [`Settings::derive_after_bytes`].
    /// Why paced: storing a content costs its copy into the spool and its compaction, about
    /// a second per GB on an H200 host; an FDTD of 0.4 s that stored its first 1 GB ran 3.2×
    /// its native time, 1.8× with 256 MB. A short run stores what it can afford and derives
    /// the rest; a long one stores up to the free-space share, with more stored launches
    /// (replayable alone and on other devices) the longer it runs.
    pub fn derive_threshold(&self, run: std::time::Duration) -> u64 {
        if !self.derive_paced {
            return self.derive_after_bytes;
        }
        let (floor, growth) = self.derive_pace;
        let paced = floor as f64 + growth as f64 * run.as_secs_f64();
        (paced.min(u64::MAX as f64) as u64).min(self.derive_after_bytes)
    }

    /// Whether the derive threshold in force grows with the run: `auto`, and half the disk
    /// budget leaves it room to grow past the pace's floor.
    pub fn derive_grows(&self) -> bool {
        self.derive_paced && self.derive_after_bytes.min(self.max_bytes / 2) > self.derive_pace.0
    }

    /// How the derive threshold is chosen, in words (the budget line and the shim's notice).
    pub fn derive_words(&self) -> String {
        let ceiling = self.derive_after_bytes.min(self.max_bytes / 2);
        if self.derive_grows() {
            format!(
                "{} and {} per second of the run after its first launch, at most {}",
                size_words(self.derive_pace.0),
                size_words(self.derive_pace.1),
                size_words(ceiling)
            )
        } else if ceiling < self.derive_after_bytes {
            format!("{} (half of the disk budget)", size_words(ceiling))
        } else {
            size_words(ceiling)
        }
    }

    /// One line saying the disk budget and spool bound this capture uses, and where their
    /// defaults came from: what `cltrap run` (and the shim, with `CLTRAP_STATS`) says at the
    /// start of a capture.
    pub fn budget_line(&self) -> String {
        let from = match self.free_bytes {
            Some(free) => format!(
                " (defaults from the {} MB free on the capture's filesystem)",
                free >> 20
            ),
            None => String::new(),
        };
        format!(
            "capture budget: every content stored up to {}, contents at most {} MB, spool at most {} MB{from}",
            self.derive_words(),
            self.max_bytes >> 20,
            self.spool_max_bytes >> 20,
        )
    }

    /// Whether launch number `seq` of kernel `name` is inside the window and name filter.
    /// (The per-kernel count is the caller's, which knows how many it kept.)
    pub fn wants(&self, seq: u64, name: &str) -> bool {
        seq >= self.launches.0
            && seq < self.launches.1
            && (self.kernels.is_empty() || self.kernels.iter().any(|g| glob_match(g, name)))
    }
}

/// `bytes` in words: whole MB, or KB below 1 MB (so a tiny budget never reads "0 MB").
fn size_words(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MB", bytes >> 20)
    } else {
        format!("{} KB", bytes.div_ceil(1 << 10))
    }
}

/// Contents every capture under `CLTRAP_DERIVE_AFTER_MB=auto` stores before deriving
/// (`CLTRAP_DERIVE_PACE` overrides it).
pub const PACE_FLOOR: u64 = 256 << 20;

/// What the `auto` derive threshold grows by per second of the run (see
/// [`Settings::derive_threshold`]; `CLTRAP_DERIVE_PACE` overrides it): about an eighth of
/// the rate (about 1 GB/s) at which the H200 host copied contents into the spool and
/// compacted them beside the application, so storing adds a small share to a run's time.
pub const PACE_BYTES_PER_S: u64 = 128 << 20;

/// The `auto` budget (max, derive-after, spool bound; bytes) for a filesystem with `free`
/// bytes free: a quarter of it at most (between 256 MB and 64 GB), derive after a
/// sixty-fourth of it (between 512 MB and 8 GB: long chains of launches replay faster the
/// more is stored, but every spooled byte is compacted again), a spool of an eighth of it
/// (between 64 MB and 8 GB). Why from the free space: a fixed 4 GB / 512 MB is too little on
/// a large disk (long chains of derived contents, slow replays) and too much on a small one.
/// Unknown free space: 4 GB, 512 MB and a 1 GB spool.
pub fn auto_budget(free: Option<u64>) -> (u64, u64, u64) {
    const MB: u64 = 1 << 20;
    match free {
        Some(free) => {
            let max = (free / 4).clamp(256 * MB, 64 << 30);
            (
                max,
                (free / 64).clamp(512 * MB, 8 << 30),
                (free / 8).clamp(64 * MB, 8 << 30),
            )
        }
        None => (4096 * MB, 512 * MB, 1024 * MB),
    }
}

/// `*` / `?` glob matching, enough for kernel names.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// The guide's table of controls (docs/src/controls.md), generated so docs and code cannot disagree.
pub fn markdown_table() -> String {
    let mut s = String::from(
        "| env variable | `cltrap run` flag | default | meaning |\n|---|---|---|---|\n",
    );
    for c in CONTROLS {
        let default = if c.default.is_empty() {
            "(unset)"
        } else {
            c.default
        };
        let flag = if c.is_switch() {
            format!("--{}", c.flag)
        } else {
            format!("--{} {}", c.flag, c.value_name)
        };
        s.push_str(&format!(
            "| `{}` | `{}` | `{}` | {} |\n",
            cell(c.env),
            cell(&flag),
            cell(default),
            cell(c.help)
        ));
    }
    s
}

/// Escapes `|` for a Markdown table cell: GitHub splits cells at every unescaped `|`, even
/// inside code spans (`on|off`), which would shift the table's columns.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_safe_and_parse() {
        let s = Settings::from_values(&HashMap::new()).expect("defaults parse");
        assert!(s.capture);
        assert_eq!(s.buffers, BufferMode::Full);
        assert_eq!(s.launches, (0, u64::MAX));
        assert!(s.wants(12345, "anything"));
    }

    #[test]
    fn window_and_globs_filter_launches() {
        let mut v = HashMap::new();
        v.insert("CLTRAP_LAUNCHES", "2..5".to_string());
        v.insert("CLTRAP_KERNELS", "vec*,sum".to_string());
        let s = Settings::from_values(&v).expect("parses");
        assert!(!s.wants(1, "vec_add"));
        assert!(s.wants(2, "vec_add"));
        assert!(s.wants(4, "sum"));
        assert!(!s.wants(4, "summ"));
        assert!(!s.wants(5, "vec_add"));
    }

    #[test]
    fn live_instrumentation_controls_parse_and_exclude_each_other() {
        let s = Settings::from_values(&HashMap::new()).expect("defaults parse");
        assert!(!s.coverage);
        assert_eq!(s.permute, None);
        let mut v = HashMap::new();
        v.insert("CLTRAP_COVERAGE", "on".to_string());
        assert!(Settings::from_values(&v).expect("parses").coverage);
        v.insert("CLTRAP_PERMUTE", "42".to_string());
        let e = Settings::from_values(&v).unwrap_err();
        assert!(e.contains("cannot be combined"), "{e}");
        v.remove("CLTRAP_COVERAGE");
        assert_eq!(Settings::from_values(&v).expect("parses").permute, Some(42));
        v.insert("CLTRAP_PERMUTE", "x".to_string());
        assert!(Settings::from_values(&v)
            .unwrap_err()
            .contains("CLTRAP_PERMUTE"));
        let switch = CONTROLS
            .iter()
            .find(|c| c.env == "CLTRAP_COVERAGE")
            .expect("listed");
        assert!(switch.is_switch());
        assert!(markdown_table().contains("`--coverage`"));
    }

    #[test]
    fn captures_are_private_and_binaries_accepted_unless_asked() {
        let s = Settings::from_values(&HashMap::new()).expect("defaults parse");
        assert!(!s.share && !s.refuse_binaries);
        let mut v = HashMap::new();
        v.insert("CLTRAP_SHARE", "on".to_string());
        v.insert("CLTRAP_REFUSE_BINARIES", "1".to_string());
        let s = Settings::from_values(&v).expect("parses");
        assert!(s.share && s.refuse_binaries);
        v.insert("CLTRAP_SHARE", "everyone".to_string());
        let e = Settings::from_values(&v).unwrap_err();
        assert!(e.contains("CLTRAP_SHARE") && e.contains("on or off"), "{e}");
    }

    #[test]
    fn table_cells_escape_the_column_separator() {
        let table = markdown_table();
        for line in table.lines().skip(2) {
            let unescaped = line.matches('|').count() - line.matches("\\|").count();
            assert_eq!(unescaped, 5, "a row must have exactly four cells: {line}");
        }
        assert!(
            table.contains("\\|"),
            "some control lists alternatives with `|`"
        );
    }

    #[test]
    fn the_budget_defaults_come_from_the_free_space_and_numbers_override_them() {
        const MB: u64 = 1 << 20;
        // 100 GB free: 25 GB of contents, derive past 1.6 GB, a spool of 8 GB (its cap).
        let free = 100 << 30;
        assert_eq!(auto_budget(Some(free)), (free / 4, free / 64, 8 << 30));
        // 40 GB free: a spool of an eighth of it.
        assert_eq!(auto_budget(Some(40 << 30)).2, 5 << 30);
        // A small disk: the floors; an unknown one: 4 GB, 512 MB and a 1 GB spool.
        assert_eq!(auto_budget(Some(100 * MB)), (256 * MB, 512 * MB, 64 * MB));
        assert_eq!(auto_budget(None), (4096 * MB, 512 * MB, 1024 * MB));
        let s = Settings::from_values(&HashMap::new()).expect("defaults parse");
        assert!(s.max_bytes >= 256 * MB && s.spool_max_bytes >= 64 * MB);
        assert!(s.budget_line().contains("capture budget:"));
        let set: HashMap<&str, String> = [
            ("CLTRAP_MAX_MB", "8".to_string()),
            ("CLTRAP_DERIVE_AFTER_MB", "2".to_string()),
            ("CLTRAP_SPOOL_MAX_MB", "0".to_string()),
        ]
        .into_iter()
        .collect();
        let s = Settings::from_values(&set).expect("numbers parse");
        assert_eq!(
            (s.max_bytes, s.derive_after_bytes, s.spool_max_bytes),
            (8 * MB, 2 * MB, 0)
        );
        assert_eq!(
            s.free_bytes, None,
            "no default was taken from the free space"
        );
        // A number is not paced; `auto` is, up to its ceiling.
        let late = std::time::Duration::from_secs(3600);
        assert_eq!(s.derive_threshold(std::time::Duration::ZERO), 2 * MB);
        assert_eq!(s.derive_threshold(late), 2 * MB);
        let auto = Settings::from_values(&HashMap::new()).expect("defaults parse");
        assert!(auto.derive_paced);
        assert_eq!(auto.derive_threshold(std::time::Duration::ZERO), PACE_FLOOR);
        assert_eq!(
            auto.derive_threshold(std::time::Duration::from_secs(2)),
            PACE_FLOOR + 2 * PACE_BYTES_PER_S
        );
        assert_eq!(auto.derive_threshold(late), auto.derive_after_bytes);
        assert!(auto.budget_line().contains("128 MB per second"));
        let paced: HashMap<&str, String> = [("CLTRAP_DERIVE_PACE", "8, 4".to_string())]
            .into_iter()
            .collect();
        let paced = Settings::from_values(&paced).expect("parses");
        assert_eq!(
            paced.derive_threshold(std::time::Duration::from_secs(1)),
            12 * MB
        );
        assert!(paced
            .budget_line()
            .contains("up to 8 MB and 4 MB per second"));
        for bad in ["8", "8,", "x,4", "8;4"] {
            let v: HashMap<&str, String> = [("CLTRAP_DERIVE_PACE", bad.to_string())]
                .into_iter()
                .collect();
            let e = Settings::from_values(&v).unwrap_err();
            assert!(e.contains("CLTRAP_DERIVE_PACE"), "{e}");
        }
        // Half a small disk budget leaves the pace no room: the words say what binds.
        let small: HashMap<&str, String> =
            [("CLTRAP_MAX_MB", "1".to_string())].into_iter().collect();
        let small = Settings::from_values(&small).expect("parses");
        assert!(!small.derive_grows());
        assert_eq!(small.derive_words(), "512 KB (half of the disk budget)");
        assert_eq!(s.derive_words(), "2 MB");
        let bad: HashMap<&str, String> = [("CLTRAP_SPOOL_MAX_MB", "lots".to_string())]
            .into_iter()
            .collect();
        let e = Settings::from_values(&bad).unwrap_err();
        assert!(
            e.contains("CLTRAP_SPOOL_MAX_MB") && e.contains("auto"),
            "{e}"
        );
    }

    #[test]
    fn bad_values_name_the_variable() {
        let mut v = HashMap::new();
        v.insert("CLTRAP_BUFFERS", "most".to_string());
        let e = Settings::from_values(&v).unwrap_err();
        assert!(e.contains("CLTRAP_BUFFERS"), "{e}");
        let mut v = HashMap::new();
        v.insert("CLTRAP_AT_FINISH", "later".to_string());
        let e = Settings::from_values(&v).unwrap_err();
        assert!(
            e.contains("CLTRAP_AT_FINISH") && e.contains("write or hand"),
            "{e}"
        );
        v.insert("CLTRAP_AT_FINISH", "hand".to_string());
        assert_eq!(
            Settings::from_values(&v).map(|s| s.at_finish),
            Ok(AtFinish::Hand)
        );
        assert_eq!(
            Settings::from_values(&HashMap::new()).map(|s| s.at_finish),
            Ok(AtFinish::Write)
        );
    }
}
