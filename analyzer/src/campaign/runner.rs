//! The runner: a campaign's units in worker processes, on every pinned device, with a
//! deadline per unit, a fresh worker after a crash or a hang, one progress bar, Ctrl-C that
//! keeps what finished, and the journal written as units finish.
//!
//! Units are handed out dynamically ([`super::queue`]: from one shared queue, or from one run
//! of neighbouring units per slot that an idle slot halves), so a worker that finishes early
//! takes more and devices of different speeds stay busy. Each worker slot is a
//! thread that owns at most one live worker process at a time; the main thread owns the
//! [`Campaign`], the journal and the bar.
//!
//! A slot sends its worker the next unit before the answer to the current one (so the worker
//! never waits for a round trip). A worker lost with a unit (crash, hang) takes only that
//! unit with it: the unit sent ahead goes to the next worker. A worker that *retires* (its
//! unit's `done` says `retire`, [`Campaign::spent`]: the unit faulted the device or wrote
//! outside its memory) keeps its unit's result and ends by itself; the slot closes it, counts
//! it in [`Stats::retired`], and sends the unit sent ahead to a fresh worker, not charged as
//! lost. So a unit's result never depends on what ran before it in the same process, which
//! the number of workers decides. From a slot's first lost or retired worker on, it keeps a
//! warmed spare for the next replacement.

use super::devices::{self, Pinned};
use super::journal::{self, Header, Writer};
use super::protocol::{Event, FromWorker, ToWorker};
use super::queue::Queue;
use super::{args, Campaign, CampaignArgs, Finished, Lost, Unit, UnitContext};
use crate::executor::DeviceSelector;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Fails when `dir`, or a folder between `home`'s parent and it, or its journal or stats
/// file, is a symbolic link. Why: a campaign folder may come with a capture (`campaigns/`),
/// and a link planted there would make the campaign write, or delete, elsewhere.
pub(crate) fn refuse_links(home: &Path, dir: &Path) -> Result<(), String> {
    let mut paths: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|p| Some(*p) != home.parent())
        .map(Path::to_path_buf)
        .collect();
    paths.push(dir.join(journal::FILE));
    paths.push(dir.join(STATS_FILE));
    for p in paths {
        if cltrap_capture::safe_open::is_link(&p) {
            return Err(format!(
                "{} is a symbolic link: a capture's campaign folder must be its own (or give --campaign-dir)",
                p.display()
            ));
        }
    }
    Ok(())
}

/// The folder of unit `id` below a campaign's `units_dir` (fuzz's and solve's per-kernel
/// folders), refused when it or a folder above it up to the campaigns folder is a link.
pub(crate) fn unit_folder(units_dir: &Path, id: &str) -> Result<PathBuf, String> {
    let udir = units_dir.join(id);
    refuse_links(units_dir.parent().unwrap_or(units_dir), &udir)?;
    Ok(udir)
}

/// How long a worker may take to end after its last unit.
const EXIT_GRACE: Duration = Duration::from_secs(30);

/// Exit status of a campaign stopped by Ctrl-C (as a shell reports SIGINT).
pub const INTERRUPTED: u8 = 130;

/// Runs `c` as the campaign flags say: as a worker (`--unit-worker`), or as the parent of its
/// workers. `device` is the command's own `--platform`/`--device` selection.
pub fn drive(
    c: &mut dyn Campaign,
    flags: &CampaignArgs,
    device: &DeviceSelector,
    out: &mut dyn Write,
) -> Result<u8, String> {
    if flags.unit_worker {
        return serve(c, device);
    }
    if flags.workers_per_device == 0 {
        return Err("--workers-per-device must be at least 1".into());
    }
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let stripped = args::strip(&argv);
    let fingerprint = args::fingerprint(&stripped);
    let dir = flags.campaign_dir.clone().unwrap_or_else(|| {
        let d = c.home().join(format!("{}-{fingerprint}", c.command()));
        match flags.shard {
            Some(s) => d.join(format!("shard-{}-of-{}", s.index, s.count)),
            None => d,
        }
    });
    // The default folder is inside the capture, which is untrusted: no link on the way may
    // lead the journal out of it.
    if flags.campaign_dir.is_none() {
        refuse_links(&c.home(), &dir)?;
    }
    // A journal this user's cltrap did not write is refused before any work: the units
    // (mutate's test cases) are not computed only to be refused after.
    if flags.resume {
        if let Err(e @ journal::JournalError::Foreign(_)) = journal::read(&dir) {
            return Err(foreign(&e));
        }
    }
    let earlier = if flags.resume {
        vec![dir.clone()]
    } else {
        Vec::new()
    };
    c.folders(&dir, &earlier);
    INTERRUPT.store(false, Ordering::SeqCst);
    let units = match c.units() {
        Ok(u) => u,
        // Units that come from a campaign of their own (mutate's test cases), which Ctrl-C
        // stopped: this run ends as an interrupted one, having said why.
        Err(e) if INTERRUPT.load(Ordering::SeqCst) => {
            eprintln!("cltrap: {e}");
            return Ok(INTERRUPTED);
        }
        Err(e) => return Err(e),
    };
    let phase = c.phase().map(|p| format!("{p}: ")).unwrap_or_default();
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?;
    let header = Header {
        cltrap_campaign: 1,
        args: stripped.clone(),
        cwd,
        fingerprint: fingerprint.clone(),
        shard: flags.shard,
        units: units.len(),
    };
    let mut done: BTreeMap<String, Finished> = BTreeMap::new();
    if flags.resume {
        match journal::read(&dir) {
            Ok(j) => {
                if j.header.fingerprint != fingerprint
                    || j.header.shard != flags.shard
                    || j.header.cwd != header.cwd
                    || j.header.units != header.units
                {
                    return Err(format!(
                        "--resume: the campaign in {} was run as `cltrap {}`{} in {} over {} unit(s), not as this command",
                        dir.display(),
                        j.header.shown_args(),
                        j.header.shard.map(|s| format!(" --shard {s}")).unwrap_or_default(),
                        crate::list::escape_controls(&j.header.cwd.display().to_string()),
                        j.header.units
                    ));
                }
                if j.refused > 0 {
                    eprintln!(
                        "cltrap: --resume: {} result line(s) of the journal in {} carry no seal of your journal key and are not used; their units run again",
                        j.refused,
                        dir.display()
                    );
                }
                done = j.finished;
            }
            Err(e @ journal::JournalError::Foreign(_)) => return Err(foreign(&e)),
            Err(journal::JournalError::Missing(_)) => {
                eprintln!(
                    "cltrap: --resume: {} has no journal yet; running every unit",
                    dir.display()
                )
            }
            Err(e) => return Err(format!("--resume: {e}")),
        }
    }
    // Units of this run, in order; those finished before are kept as they were.
    let mine: Vec<(usize, Unit)> = units
        .iter()
        .cloned()
        .enumerate()
        .filter(|(p, _)| flags.shard.is_none_or(|s| s.owns(*p)))
        .collect();
    done.retain(|id, _| mine.iter().any(|(_, u)| &u.id == id));
    // Units that results finished before make pointless are not run again either.
    let dropped = super::superseded_by(c, mine.iter().map(|(_, u)| u), &done);
    let todo: VecDeque<(usize, Unit)> = mine
        .iter()
        .filter(|(_, u)| !done.contains_key(&u.id) && !dropped.contains(&u.id))
        .cloned()
        .collect();
    let mut writer = match Writer::open(&dir, &header, flags.resume) {
        Ok(w) => Some(w),
        Err(e) if flags.resume || flags.shard.is_some() || flags.campaign_dir.is_some() => {
            return Err(format!(
                "cannot write the campaign journal in {}: {e}",
                dir.display()
            ))
        }
        Err(e) => {
            eprintln!(
                "cltrap: cannot keep a campaign journal in {} ({e}); --resume will not be possible",
                dir.display()
            );
            None
        }
    };
    if flags.resume && !done.is_empty() {
        eprintln!(
            "cltrap: --resume: {} of {} unit(s) finished before; running the other {}",
            done.len(),
            mine.len(),
            todo.len()
        );
    }
    let pins: Vec<Option<Pinned>> = match devices::resolve(flags.devices.as_deref(), device) {
        Ok(p) => p.into_iter().map(Some).collect(),
        // Without --devices, a device that cannot be listed here is the workers' to report.
        Err(_) if flags.devices.is_none() => vec![None],
        Err(e) => return Err(e),
    };
    if flags.devices.is_some() {
        let names: Vec<&str> = pins.iter().flatten().map(|p| p.name.as_str()).collect();
        eprintln!(
            "cltrap: {phase}{} worker(s) on {} device(s): {}",
            pins.len() * flags.workers_per_device,
            pins.len(),
            names.join(", ")
        );
    }
    let run = Run {
        exe: std::env::current_exe().map_err(|e| format!("cannot find cltrap itself: {e}"))?,
        args: stripped,
        deadline: c.deadline(),
    };
    let (interrupted, stats) = run_units(
        c,
        &run,
        todo,
        &pins,
        flags.workers_per_device,
        &mut done,
        &mut writer,
    )?;
    if stats.units > 0 {
        if let Some(w) = &writer {
            if let Some(d) = w.path().parent() {
                // A new file renamed over the old one: never written through a link that a
                // hostile campaign folder put there.
                let _ = crate::campaign::journal::replace_file(
                    &d.join(STATS_FILE),
                    serde_json::to_string_pretty(&stats)
                        .unwrap_or_default()
                        .as_bytes(),
                );
            }
        }
        if flags.devices.is_some() {
            eprintln!("cltrap: {phase}{}", stats.line());
        }
    }
    let results: Vec<(Unit, Finished)> = mine
        .into_iter()
        .filter_map(|(_, u)| done.remove(&u.id).map(|f| (u, f)))
        .collect();
    if let Some(s) = flags.shard {
        let kept = writer
            .as_ref()
            .map(|w| w.path().to_path_buf())
            .unwrap_or(dir);
        eprintln!(
            "cltrap: shard {s}: {} unit(s) of {} finished into {}; `cltrap merge OUT SHARD_DIRS...` writes the report",
            results.len(),
            units.len(),
            kept.display()
        );
        return Ok(if interrupted { INTERRUPTED } else { 0 });
    }
    let code = c.report(&results, !interrupted, out)?;
    if interrupted {
        eprintln!(
            "cltrap: interrupted: {} of {} unit(s) finished (the report above covers them); the same command with --resume runs the rest",
            results.len(),
            units.len()
        );
        return Ok(INTERRUPTED);
    }
    Ok(code)
}

/// The file in the campaign folder with the last run's [`Stats`].
pub const STATS_FILE: &str = "stats.json";

/// How a run of the runner went: what benchmarks read (`stats.json` in the campaign folder).
#[derive(Debug, Default, serde::Serialize)]
pub struct Stats {
    /// Units run (not counting those an earlier run finished).
    pub units: usize,
    /// Worker slots.
    pub workers: usize,
    /// Devices the slots were spread over.
    pub devices: usize,
    /// Wall time from the first unit handed out to the last result, in seconds.
    pub wall_s: f64,
    /// Sum over units of the time from handing a unit out to its result, in seconds.
    pub busy_s: f64,
    /// Share of the workers' time (`workers × wall_s`) not spent on a unit.
    pub idle_fraction: f64,
    /// Units per device, by the device's name.
    pub per_device: BTreeMap<String, usize>,
    /// Worker processes started, spares included.
    pub started: usize,
    /// Dead or retired workers replaced by a spare that was already warm.
    pub spares_used: usize,
    /// Workers that retired after a unit that left their device or memory untrusted
    /// ([`Campaign::spent`]): each one's next unit ran in a fresh worker.
    pub retired: usize,
    /// Units not run because a result made them pointless ([`Campaign::superseded`]).
    pub superseded: usize,
}

/// What the slots count for [`Stats`].
#[derive(Default)]
struct Starts {
    started: AtomicUsize,
    spares_used: AtomicUsize,
    retired: AtomicUsize,
}

impl Stats {
    /// One line for the terminal.
    pub fn line(&self) -> String {
        let retired = match self.retired {
            0 => String::new(),
            n => format!("; {n} worker(s) retired after a unit that faulted"),
        };
        let superseded = match self.superseded {
            0 => String::new(),
            n => format!("; {n} unit(s) not run, made pointless by an earlier result"),
        };
        format!(
            "campaign: {} unit(s) in {:.1} s on {} worker(s) over {} device(s); workers idle {:.0}% of the time{retired}{superseded}",
            self.units,
            self.wall_s,
            self.workers,
            self.devices,
            self.idle_fraction * 100.0
        )
    }
}

/// How workers are started.
struct Run {
    exe: PathBuf,
    args: Vec<String>,
    deadline: Duration,
}

/// What a worker slot sends the main thread.
enum Outcome {
    /// A unit's result.
    Done(Unit, Finished),
    /// A unit lost with its worker.
    Lost(Unit, Lost, String, u64),
    /// A unit no worker could be started for (why): it did not run, and the campaign stops
    /// (nothing of the unit, or of the kernel it tests, made that happen).
    Unstarted(Unit, String),
}

/// What `--resume` says of a journal this user's cltrap did not write.
fn foreign(e: &journal::JournalError) -> String {
    format!(
        "--resume: {e}; run the same command without --resume to start afresh (its journal is replaced)"
    )
}

/// How the main thread ends a campaign's slots early.
#[derive(Default)]
struct Halt {
    /// Now: units in flight are abandoned (not journaled) and their workers killed (Ctrl-C,
    /// a journal that cannot be written).
    stop: AtomicBool,
    /// Once the units handed to a worker finish: no slot takes another (a worker that cannot
    /// be started; the other slots' units in flight keep their work).
    drain: AtomicBool,
}

static INTERRUPT: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPT.store(true, Ordering::SeqCst);
}

/// SIGINT sets [`INTERRUPT`] while the campaign runs; the old disposition comes back on drop.
struct CtrlC(libc::sigaction);

impl CtrlC {
    fn install() -> CtrlC {
        INTERRUPT.store(false, Ordering::SeqCst);
        // SAFETY: a handler that only stores to an atomic is async-signal-safe; `old` is
        // filled by sigaction before it is read.
        unsafe {
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = on_sigint as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut new.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGINT, &new, &mut old);
            CtrlC(old)
        }
    }
}

impl Drop for CtrlC {
    fn drop(&mut self) {
        // SAFETY: restores the disposition saved by `install`.
        unsafe {
            libc::sigaction(libc::SIGINT, &self.0, std::ptr::null_mut());
        }
    }
}

/// Runs `todo` over the worker slots; records each result in `done` and the journal. Returns
/// whether Ctrl-C stopped it.
fn run_units(
    c: &mut dyn Campaign,
    run: &Run,
    todo: VecDeque<(usize, Unit)>,
    pins: &[Option<Pinned>],
    per_device: usize,
    done: &mut BTreeMap<String, Finished>,
    writer: &mut Option<Writer>,
) -> Result<(bool, Stats), String> {
    if todo.is_empty() {
        return Ok((false, Stats::default()));
    }
    let total = todo.len();
    let slots = (pins.len() * per_device).min(total).max(1);
    let mut stats = Stats {
        workers: slots,
        devices: pins.len().min(slots),
        ..Stats::default()
    };
    let began = Instant::now();
    let queue = Arc::new(Mutex::new(if c.contiguous() {
        Queue::contiguous(todo, slots)
    } else {
        Queue::shared(todo)
    }));
    let (tx, rx) = channel::<Outcome>();
    let halt = Arc::new(Halt::default());
    let stop = &halt.stop;
    // Units without a final result: slots wait for a retried unit while it is not zero.
    let pending = Arc::new(AtomicUsize::new(total));
    let starts = Arc::new(Starts::default());
    let mut retried: HashSet<String> = HashSet::new();
    let _ctrl_c = CtrlC::install();
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(total as u64),
        indicatif::ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} units  {per_sec}  ETA {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_prefix(c.command());
    let mut handles = Vec::new();
    for slot in 0..slots {
        let pin = pins[slot % pins.len()].clone();
        let queue = queue.clone();
        let tx = tx.clone();
        let halt = halt.clone();
        let pending = pending.clone();
        let starts = starts.clone();
        let run = Run {
            exe: run.exe.clone(),
            args: run.args.clone(),
            deadline: run.deadline,
        };
        handles.push(std::thread::spawn(move || {
            slot_loop(&run, slot, pin, &queue, &tx, &halt, &pending, &starts)
        }));
    }
    drop(tx);
    let mut finished = 0;
    // Units this run will not hand out: [`Campaign::superseded`] by a result.
    let mut total = total;
    let mut failure: Option<String> = None;
    while finished < total {
        if INTERRUPT.load(Ordering::SeqCst) {
            stop.store(true, Ordering::SeqCst);
        }
        let outcome = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(o) => o,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let (unit, f) = match outcome {
            Outcome::Done(unit, f) => (unit, f),
            Outcome::Unstarted(unit, why) => {
                // Not journaled: `--resume` runs it.
                let next = match &writer {
                    Some(_) => "the units finished are in the campaign journal, and the same command with --resume goes on",
                    None => "no campaign journal keeps the units finished",
                };
                failure.get_or_insert(format!("{why}, for unit {}; {next}", unit.id));
                // The units other slots run now finish and are journaled; none starts after.
                halt.drain.store(true, Ordering::SeqCst);
                continue;
            }
            Outcome::Lost(unit, why, device, millis) => {
                if !retried.contains(&unit.id) {
                    if let Some(again) = c.retry(&unit, &why) {
                        retried.insert(unit.id.clone());
                        if let Ok(mut q) = queue.lock() {
                            q.again((0, again));
                        }
                        continue;
                    }
                }
                let result = c.lost(&unit, &why);
                let f = Finished {
                    unit: unit.id.clone(),
                    device,
                    millis,
                    result,
                };
                (unit, f)
            }
        };
        if let Some(line) = c.progress_line(&unit, &f) {
            bar.println(line);
        }
        if let Some(w) = writer.as_mut() {
            if let Err(e) = w.append(&f) {
                failure.get_or_insert(format!(
                    "cannot append to the campaign journal {}: {e}",
                    w.path().display()
                ));
                stop.store(true, Ordering::SeqCst);
            }
        }
        pending.fetch_sub(1, Ordering::SeqCst);
        stats.units += 1;
        stats.busy_s += f.millis as f64 / 1000.0;
        *stats.per_device.entry(f.device.clone()).or_default() += 1;
        let pointless = c.superseded(&unit, &f.result);
        done.insert(unit.id.clone(), f);
        finished += 1;
        bar.inc(1);
        if !pointless.is_empty() {
            let dropped = drop_queued(&queue, &pointless);
            if dropped > 0 {
                total -= dropped;
                pending.fetch_sub(dropped, Ordering::SeqCst);
                stats.superseded += dropped;
                bar.set_length(total as u64);
            }
        }
    }
    // Slots end by themselves when the queue is empty; `stop` is for Ctrl-C and failures.
    if finished < total {
        stop.store(true, Ordering::SeqCst);
    }
    for h in handles {
        let _ = h.join();
    }
    bar.finish_and_clear();
    if let Some(f) = failure {
        return Err(f);
    }
    stats.wall_s = began.elapsed().as_secs_f64();
    stats.started = starts.started.load(Ordering::SeqCst);
    stats.spares_used = starts.spares_used.load(Ordering::SeqCst);
    stats.retired = starts.retired.load(Ordering::SeqCst);
    let capacity = stats.wall_s * slots as f64;
    stats.idle_fraction = if capacity > 0.0 {
        (1.0 - stats.busy_s / capacity).clamp(0.0, 1.0)
    } else {
        0.0
    };
    Ok((INTERRUPT.load(Ordering::SeqCst), stats))
}

/// Takes the units named in `ids` out of the queue (those not handed out yet); returns how
/// many it took.
fn drop_queued(queue: &Mutex<Queue>, ids: &[String]) -> usize {
    let Ok(mut q) = queue.lock() else { return 0 };
    q.drop_where(|u| ids.contains(&u.id))
}

/// A live worker process.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    events: Receiver<Option<FromWorker>>,
}

impl Worker {
    fn start(run: &Run, pin: &Option<Pinned>) -> Result<Worker, String> {
        let mut cmd = Command::new(&run.exe);
        cmd.args(&run.args)
            .arg("--unit-worker")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // Its own process group: a hung worker is killed with the children it started,
            // and Ctrl-C reaches the runner, which stops the workers itself.
            .process_group(0);
        // A runner killed outright (SIGKILL, or SIGTERM: no handler stops the workers) takes
        // its workers with it: one compiling or running a kernel for minutes does not read
        // the closed stdin that would end it. The signal follows the thread that started the
        // worker, a slot's thread, which outlives its workers (it closes them before ending).
        crate::orphan::end_with_parent(&mut cmd, libc::SIGKILL);
        if let Some(p) = pin {
            cmd.env(devices::ENV, p.env());
            cmd.env(devices::NAME_ENV, &p.name);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start a worker ({}): {e}", run.exe.display()))?;
        let stdin = child.stdin.take().ok_or("the worker has no stdin")?;
        let stdout = child.stdout.take().ok_or("the worker has no stdout")?;
        let (tx, events) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                match FromWorker::parse(&line) {
                    Some(m) => {
                        if tx.send(Some(m)).is_err() {
                            break;
                        }
                    }
                    None => eprintln!("{line}"),
                }
            }
            let _ = tx.send(None);
        });
        Ok(Worker {
            child,
            stdin,
            events,
        })
    }

    /// Sends `msg` on the worker's stdin.
    fn send(&mut self, msg: &ToWorker) -> std::io::Result<()> {
        let mut line = serde_json::to_string(msg).map_err(std::io::Error::other)?;
        line.push('\n');
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.flush()
    }

    /// A worker started and told to get ready for units like `like` (a spare).
    fn warmed(run: &Run, pin: &Option<Pinned>, like: &Unit) -> Option<Worker> {
        let mut w = Worker::start(run, pin).ok()?;
        match w.send(&ToWorker::Warm(like.clone())) {
            Ok(()) => Some(w),
            Err(_) => {
                w.kill();
                None
            }
        }
    }

    /// Ends the worker: closing stdin ends it between units (it cleans up: temporary
    /// folders, the device); one still running a unit after Ctrl-C, or slow to end, is
    /// stopped.
    fn close(self, stop: &AtomicBool) {
        let Worker {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let ending = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if stop.load(Ordering::SeqCst) || ending.elapsed() > EXIT_GRACE => {
                    // SAFETY: as in `Worker::kill`.
                    unsafe {
                        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
                    }
                    let _ = child.wait();
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }

    /// Kills the worker and the processes of its group.
    fn kill(mut self) -> String {
        // SAFETY: signals the worker's own process group (it was started as its leader).
        unsafe {
            libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL);
        }
        let _ = self.child.kill();
        match self.child.wait() {
            Ok(s) => describe(s),
            Err(e) => e.to_string(),
        }
    }
}

fn describe(s: std::process::ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (_, Some(sig)) => format!("killed by signal {sig}"),
        (Some(c), _) => format!("exited with status {c}"),
        _ => "ended".into(),
    }
}

/// One worker slot: takes units from the queue until it is empty or the campaign stops
/// ([`Halt::stop`]: at once; [`Halt::drain`]: once the units handed to its worker finish).
///
/// Once a worker of the slot has died (a crash, a hang: mutants that loop forever kill
/// theirs one after the other) or retired (its `done` said `retire`: mutants that fault the
/// device retire theirs one after the other), the slot keeps a spare: started and warmed up
/// ([`ToWorker::Warm`]) while the units run, so the next replacement has its device open and
/// its inputs read instead of paying for them inside a unit.
#[allow(clippy::too_many_arguments)]
fn slot_loop(
    run: &Run,
    slot: usize,
    pin: Option<Pinned>,
    queue: &Mutex<Queue>,
    tx: &Sender<Outcome>,
    halt: &Halt,
    pending: &AtomicUsize,
    starts: &Starts,
) {
    let stop = &halt.stop;
    let device = pin.as_ref().map(|p| p.name.clone()).unwrap_or_default();
    let mut worker: Option<Worker> = None;
    let mut spare: Option<Worker> = None;
    let mut lost_one = false;
    // Workers started so far (spares included): which one a unit sent ahead went to.
    let mut started_workers = 0u64;
    // The unit sent to the worker behind the one it runs, so it starts it without waiting
    // for this thread to hear of the last result and answer (a round trip of the runner's
    // threads per unit, most of a campaign of short units); with the worker it was sent to.
    let mut ahead: Option<(Unit, u64)> = None;
    loop {
        // Draining: a unit sent ahead to the worker still runs (it was handed over).
        let draining = halt.drain.load(Ordering::SeqCst);
        if stop.load(Ordering::SeqCst) || (draining && ahead.is_none()) {
            break;
        }
        // A unit sent ahead to a worker since lost is sent again, to the next one.
        let (unit, sent) = match ahead.take() {
            Some((unit, to)) => (unit, worker.is_some() && to == started_workers),
            None => {
                let next = queue.lock().ok().and_then(|mut q| q.pop(slot));
                let Some((_, unit)) = next else {
                    // Another slot's unit may still come back to be tried again.
                    if pending.load(Ordering::SeqCst) == 0 {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                (unit, false)
            }
        };
        let started = Instant::now();
        let lost = |why: Lost| {
            Outcome::Lost(
                unit.clone(),
                why,
                device.clone(),
                started.elapsed().as_millis() as u64,
            )
        };
        if worker.is_none() {
            // A spare that ended while it waited (killed, or its warm-up crashed) is not
            // given the unit: that unit would be blamed for the spare's death.
            let live = spare.take().and_then(|mut w| match w.child.try_wait() {
                Ok(None) => Some(w),
                _ => {
                    w.kill();
                    None
                }
            });
            let next = match live {
                Some(w) => {
                    starts.spares_used.fetch_add(1, Ordering::SeqCst);
                    Ok(w)
                }
                None => Worker::start(run, &pin).inspect(|_| {
                    starts.started.fetch_add(1, Ordering::SeqCst);
                }),
            };
            match next {
                Ok(w) => {
                    worker = Some(w);
                    started_workers += 1;
                }
                Err(e) => {
                    // No worker ran it: no verdict on it; this slot ends.
                    let _ = tx.send(Outcome::Unstarted(unit.clone(), e));
                    break;
                }
            }
            // Draining: no unit follows this one, so no spare is warmed for it.
            if lost_one && !halt.drain.load(Ordering::SeqCst) {
                spare = Worker::warmed(run, &pin, &unit);
                if spare.is_some() {
                    starts.started.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
        let Some(w) = worker.as_mut() else { continue };
        if !sent && w.send(&ToWorker::Run(unit.clone())).is_err() {
            let why = worker.take().map(Worker::kill).unwrap_or_default();
            lost_one = true;
            let _ = tx.send(lost(Lost::Crashed(why)));
            continue;
        }
        // The next unit goes behind this one now; a worker that cannot take it is found
        // out by this unit's wait (it is sent again to the next worker).
        let next = if halt.drain.load(Ordering::SeqCst) {
            None
        } else {
            queue.lock().ok().and_then(|mut q| q.pop(slot))
        };
        if let Some((_, next)) = next {
            let to = if w.send(&ToWorker::Run(next.clone())).is_ok() {
                started_workers
            } else {
                0
            };
            ahead = Some((next, to));
        }
        let mut last = Instant::now();
        // The worker answered with `retire`: it ends by itself, its unit's result stands.
        let mut retiring = false;
        let outcome = loop {
            if stop.load(Ordering::SeqCst) {
                break None;
            }
            let left = run.deadline.saturating_sub(last.elapsed());
            if left.is_zero() {
                let _ = worker.take().map(Worker::kill);
                break Some(lost(Lost::TimedOut(run.deadline)));
            }
            let w = match worker.as_mut() {
                Some(w) => w,
                None => break None,
            };
            match w.events.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(Some(m)) if m.id == unit.id => match m.event {
                    Event::Alive => last = Instant::now(),
                    Event::Done {
                        result,
                        device,
                        retire,
                    } => {
                        retiring = retire;
                        break Some(Outcome::Done(
                            unit.clone(),
                            Finished {
                                unit: unit.id.clone(),
                                device,
                                millis: started.elapsed().as_millis() as u64,
                                result,
                            },
                        ));
                    }
                    Event::Failed { reason, retire } => {
                        retiring = retire;
                        break Some(lost(Lost::Failed(reason)));
                    }
                },
                Ok(Some(_)) => {}
                Err(RecvTimeoutError::Timeout) => {}
                Ok(None) | Err(RecvTimeoutError::Disconnected) => {
                    let why = worker.take().map(Worker::kill).unwrap_or_default();
                    break Some(lost(Lost::Crashed(why)));
                }
            }
        };
        // A retiring worker is closed like one at the campaign's end (it is already ending:
        // no kill, its clean-up runs); the unit sent ahead to it goes to the next worker.
        let retired = if retiring { worker.take() } else { None };
        lost_one |= worker.is_none();
        let told = outcome.is_some_and(|o| tx.send(o).is_ok());
        if let Some(w) = retired {
            starts.retired.fetch_add(1, Ordering::SeqCst);
            w.close(stop);
        }
        if !told {
            break;
        }
    }
    // Together: a spare still warming up ends only after its warm-up, which must not add
    // to the worker's own ending.
    std::thread::scope(|s| {
        for w in [worker, spare].into_iter().flatten() {
            s.spawn(move || w.close(stop));
        }
    });
}

/// A worker: serves units from stdin until it closes, or until a unit with a result leaves
/// it spent ([`Campaign::spent`]): that unit's `done` says `retire` and the worker ends, the
/// unit sent ahead to it unread (the runner sends it to the next worker). A unit that failed
/// outright (`Err`) retires its worker only after a device fault ([`crate::executor::fault`]);
/// otherwise the runner goes on waiting on this one for the unit sent ahead. The worker's stdout carries only the protocol: whatever else this
/// process writes to fd 1 (a kernel's `printf`) goes to stderr.
fn serve(c: &mut dyn Campaign, base: &DeviceSelector) -> Result<u8, String> {
    // SAFETY: dup/dup2 on the process's own standard descriptors.
    let proto_fd = unsafe {
        let fd = libc::dup(1);
        if fd < 0 || libc::dup2(2, 1) < 0 {
            return Err("the worker cannot set up its output".into());
        }
        fd
    };
    // SAFETY: `proto_fd` is a fresh descriptor owned by this File from here on.
    let proto =
        Mutex::new(unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(proto_fd) });
    let say = |line: String| {
        if let Ok(mut f) = proto.lock() {
            let _ = f.write_all(line.as_bytes());
        }
    };
    let device = devices::pinned_here().unwrap_or_else(|| base.clone());
    let name = std::env::var(devices::NAME_ENV).unwrap_or_default();
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let unit = match serde_json::from_str::<ToWorker>(&line) {
            Ok(ToWorker::Run(unit)) => unit,
            Ok(ToWorker::Warm(like)) => {
                let cx = UnitContext {
                    device: &device,
                    alive: &|| {},
                };
                c.warm_up(&like, &cx);
                continue;
            }
            Err(_) => continue,
        };
        let id = unit.id.clone();
        let alive = || say(FromWorker::line(&id, Event::Alive));
        let cx = UnitContext {
            device: &device,
            alive: &alive,
        };
        let (event, retire) = match c.run_unit(&unit, &cx) {
            Ok(result) => {
                // A device fault in this process (any analysis's) spends it as well.
                let retire = c.spent() || crate::executor::fault::seen();
                let done = Event::Done {
                    result,
                    device: name.clone(),
                    retire,
                };
                (done, retire)
            }
            // Failed after a device fault: the worker ends too (the process is as broken as
            // after a unit with a result).
            Err(reason) => {
                let retire = crate::executor::fault::seen();
                (Event::Failed { reason, retire }, retire)
            }
        };
        say(FromWorker::line(&id, event));
        if retire {
            break;
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker (a shell script speaking the protocol) that answers unit `a` only once the
    /// next unit's line has reached it, and dies on unit `b`; every answer carries its pid.
    const WORKER: &str = r#"
pending=""
while :; do
    if [ -n "$pending" ]; then line=$pending; pending=""; else read -r line || exit 0; fi
    id=$(printf '%s' "$line" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
    case "$id" in
        a) read -r pending || exit 0 ;;
        b) exit 3 ;;
    esac
    printf '{"cltrap_unit":"unit","id":"%s","event":"done","result":{"pid":%s},"device":""}\n' "$id" "$$"
done
"#;

    /// Runs one slot over units with these ids (in order, no payloads) whose workers are the
    /// shell script `worker`: what the slot sent the main thread, and its counts.
    fn run_slot(worker: &str, ids: &[&str]) -> (Vec<Outcome>, Starts) {
        run_slot_of("/bin/sh", worker, ids)
    }

    /// [`run_slot`] with workers started from program `exe`.
    fn run_slot_of(exe: &str, worker: &str, ids: &[&str]) -> (Vec<Outcome>, Starts) {
        let run = Run {
            exe: exe.into(),
            args: vec!["-c".into(), worker.into()],
            // Only reached when a worker waits for a line never sent.
            deadline: Duration::from_secs(20),
        };
        let units = ids.iter().enumerate().map(|(i, id)| {
            let unit = Unit {
                id: id.to_string(),
                payload: serde_json::Value::Null,
            };
            (i, unit)
        });
        let queue = Mutex::new(Queue::shared(units.collect()));
        let (tx, rx) = channel();
        let halt = Halt::default();
        let pending = AtomicUsize::new(0);
        let starts = Starts::default();
        slot_loop(&run, 0, None, &queue, &tx, &halt, &pending, &starts);
        drop(tx);
        (rx.iter().collect(), starts)
    }

    /// Draining (another slot's worker could not start) lets the unit in flight finish with
    /// its result, and the unit already sent ahead to the worker; no other unit starts.
    #[test]
    fn a_draining_slot_finishes_its_unit_in_flight_and_takes_no_other() {
        let dir = tempfile::tempdir().expect("temp dir");
        let d = dir.path().display();
        let worker = format!(
            r#"
while read -r line; do
    id=$(printf '%s' "$line" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
    if [ "$id" = slow ]; then
        : > '{d}/started'
        while [ ! -e '{d}/go' ]; do sleep 0.01; done
    fi
    printf '{{"cltrap_unit":"unit","id":"%s","event":"done","result":{{}},"device":""}}\n' "$id"
done
"#
        );
        let run = Run {
            exe: "/bin/sh".into(),
            args: vec!["-c".into(), worker],
            deadline: Duration::from_secs(60),
        };
        let ids = ["slow", "n1", "n2", "n3"];
        let units = ids.iter().enumerate().map(|(i, id)| {
            let unit = Unit {
                id: id.to_string(),
                payload: serde_json::Value::Null,
            };
            (i, unit)
        });
        let queue = Arc::new(Mutex::new(Queue::shared(units.collect::<VecDeque<_>>())));
        let halt = Arc::new(Halt::default());
        let (tx, rx) = channel();
        let slot = {
            let (queue, halt) = (queue.clone(), halt.clone());
            std::thread::spawn(move || {
                let (pending, starts) = (AtomicUsize::new(0), Starts::default());
                slot_loop(&run, 0, None, &queue, &tx, &halt, &pending, &starts);
            })
        };
        while !dir.path().join("started").exists() {
            std::thread::sleep(Duration::from_millis(5));
        }
        halt.drain.store(true, Ordering::SeqCst);
        std::fs::write(dir.path().join("go"), b"").expect("go");
        slot.join().expect("the slot ends");
        let ran: Vec<String> = rx
            .iter()
            .map(|o| match o {
                Outcome::Done(u, _) => u.id,
                Outcome::Lost(u, why, _, _) => panic!("{} lost: {why:?}", u.id),
                Outcome::Unstarted(u, why) => panic!("{} did not start: {why}", u.id),
            })
            .collect();
        // `n1` may have been sent ahead before the drain began: it ran, as handed over.
        assert!(ran == ["slow"] || ran == ["slow", "n1"], "{ran:?}");
        let left = queue.lock().expect("queue").len();
        assert_eq!(
            left + ran.len(),
            ids.len(),
            "no unit was dropped or run past the drain"
        );
    }

    #[test]
    fn a_worker_that_cannot_start_gives_its_unit_no_verdict_and_ends_the_slot() {
        let (outcomes, starts) = run_slot_of("/nonexistent/cltrap", WORKER, &["a", "b"]);
        assert_eq!(outcomes.len(), 1);
        match &outcomes[0] {
            Outcome::Unstarted(u, why) => {
                assert_eq!(u.id, "a");
                assert!(why.contains("cannot start a worker"), "{why}");
            }
            Outcome::Lost(u, why, _, _) => panic!("{}: {why:?}", u.id),
            Outcome::Done(u, _) => panic!("{} ran", u.id),
        }
        assert_eq!(starts.started.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn the_next_unit_is_sent_ahead_and_again_to_the_next_worker_when_this_one_dies() {
        let ids = ["a", "b", "c", "d"];
        let (outcomes, _) = run_slot(WORKER, &ids);
        let got: Vec<(String, Option<u64>)> = outcomes
            .into_iter()
            .map(|o| match o {
                Outcome::Done(u, f) => (u.id, f.result["pid"].as_u64()),
                Outcome::Lost(u, why, _, _) => {
                    assert!(matches!(why, Lost::Crashed(_)), "{}: {why:?}", u.id);
                    (u.id, None)
                }
                Outcome::Unstarted(u, why) => panic!("{} did not start: {why}", u.id),
            })
            .collect();
        let order: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(order, ids, "{got:?}");
        let pid = |i: usize| got[i].1;
        // `a` was answered (its worker had `b`'s line already), `b` crashed its worker, and
        // `c`, sent ahead to that worker, ran on the next one, with `d`.
        assert!(pid(0).is_some() && pid(1).is_none(), "{got:?}");
        assert!(
            pid(2).is_some() && pid(2) == pid(3) && pid(2) != pid(0),
            "{got:?}"
        );
    }

    /// A worker that answers unit `r` with `"retire":true` once the next unit's line has
    /// reached it, and ends; every answer carries its pid. Warm-up lines get no answer.
    const RETIRING: &str = r#"
while read -r line; do
    case "$line" in '{"warm"'*) continue ;; esac
    id=$(printf '%s' "$line" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
    if [ "$id" = r ]; then
        read -r ahead || exit 0
        printf '{"cltrap_unit":"unit","id":"r","event":"done","result":{"pid":%s},"device":"","retire":true}\n' "$$"
        exit 0
    fi
    printf '{"cltrap_unit":"unit","id":"%s","event":"done","result":{"pid":%s},"device":""}\n' "$id" "$$"
done
"#;

    #[test]
    fn a_retiring_worker_keeps_its_result_and_the_unit_sent_ahead_runs_on_a_fresh_worker() {
        let ids = ["a", "r", "n", "m"];
        let (outcomes, starts) = run_slot(RETIRING, &ids);
        let got: Vec<(String, u64)> = outcomes
            .into_iter()
            .map(|o| match o {
                Outcome::Done(u, f) => (u.id, f.result["pid"].as_u64().unwrap_or(0)),
                Outcome::Lost(u, why, _, _) => panic!("{} was lost: {why}", u.id),
                Outcome::Unstarted(u, why) => panic!("{} did not start: {why}", u.id),
            })
            .collect();
        let order: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(order, ids, "{got:?}");
        let pid = |i: usize| got[i].1;
        // `a` and `r` ran on the first worker, which retired after `r` holding `n`'s line;
        // `n` ran on the next worker, with `m`.
        assert!(pid(0) != 0 && pid(0) == pid(1), "{got:?}");
        assert!(
            pid(2) != 0 && pid(2) != pid(1) && pid(2) == pid(3),
            "{got:?}"
        );
        assert_eq!(starts.retired.load(Ordering::SeqCst), 1);
        // The first worker and the one after the retirement; a spare was warmed beside the
        // second, never used.
        assert!(starts.started.load(Ordering::SeqCst) >= 2);
        assert_eq!(starts.spares_used.load(Ordering::SeqCst), 0);
    }

    /// A worker that answers unit `f` with a failure that retires it (a unit that failed
    /// after a device fault), once the next unit's line has reached it, and ends.
    const FAILING: &str = r#"
while read -r line; do
    case "$line" in '{"warm"'*) continue ;; esac
    id=$(printf '%s' "$line" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
    if [ "$id" = f ]; then
        read -r ahead || exit 0
        printf '{"cltrap_unit":"unit","id":"f","event":"failed","reason":"faulted","retire":true}\n'
        exit 0
    fi
    printf '{"cltrap_unit":"unit","id":"%s","event":"done","result":{"pid":%s},"device":""}\n' "$id" "$$"
done
"#;

    #[test]
    fn a_worker_retiring_on_a_failed_unit_loses_only_that_unit() {
        let ids = ["f", "n"];
        let (outcomes, starts) = run_slot(FAILING, &ids);
        let got: Vec<(String, bool)> = outcomes
            .into_iter()
            .map(|o| match o {
                Outcome::Done(u, _) => (u.id, true),
                Outcome::Lost(u, why, _, _) => {
                    assert!(matches!(&why, Lost::Failed(r) if r == "faulted"), "{why:?}");
                    (u.id, false)
                }
                Outcome::Unstarted(u, why) => panic!("{} did not start: {why}", u.id),
            })
            .collect();
        // `f` is its own failure; `n`, sent ahead to the retiring worker, ran on the next.
        assert_eq!(got, [("f".to_string(), false), ("n".to_string(), true)]);
        assert_eq!(starts.retired.load(Ordering::SeqCst), 1);
    }
}
