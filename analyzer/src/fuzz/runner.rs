//! Running one test case of the coverage-instrumented kernel: in this process (fast, but a
//! hung kernel cannot be cancelled), or in a worker process under a watchdog (a crash or a
//! hang costs the worker, not the campaign). Either way the program is compiled once per
//! worker and reused for every execution.
//!
//! This worker isolates single executions inside one kernel's campaign; the campaign runner
//! ([`crate::campaign`]) isolates whole kernel campaigns ([`super::units`]). It is not a user
//! of the runner and keeps its own protocol ([`super::wire`]) rather than
//! [`crate::campaign::protocol`]: an execution is no independent unit (which case runs next
//! depends on the coverage and corpus every earlier execution left), its answer is needed
//! at once by the same campaign, thousands of executions a second would make a journal line
//! each pure cost, and its requests are a conversation with state kept in the worker (the
//! program built once, a launch's buffers kept resident, sent again only after a restart),
//! not units handed to whichever worker is free.
//!
//! PoCL compiles a kernel for each local size lazily, inside the first execution with that
//! size, and keeps the result in its kernel cache on disk. So the first execution of a
//! kernel at a local size ([`Shape`]) in a worker gets the watchdog plus
//! [`COMPILE_ALLOWANCE`]: on a loaded machine that compile alone can outlast a short
//! watchdog, and a crash would be reported as a hang. Later executions of the shape, in this
//! worker process or one started after it (which loads the kernel from the cache), get the
//! watchdog alone; so does a shape whose first execution outlasted the allowance (it hung
//! in the kernel), so a kernel that hangs on every input costs the allowance once.

use super::error::FuzzError;
use super::wire::{Reply, Request, WireInput};
use crate::executor::{
    BuiltProgram, DeviceSelector, ExecError, GuardBreach, InputArg, LaunchInput, Resident,
    ResidentLayout, ResidentRun, Session,
};
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// How much longer than the watchdog the first execution of a [`Shape`] may take: PoCL
/// compiles the kernel for the shape inside it.
pub const COMPILE_ALLOWANCE: Duration = Duration::from_secs(30);

/// What PoCL compiles a kernel for: its name, its local size (the global size when the
/// implementation chooses the local size), and whether the global offset is zero.
type Shape = (String, Vec<u64>, bool);

fn shape(
    kernel: &str,
    global_offset: &Option<Vec<u64>>,
    global_size: &[u64],
    local_size: &Option<Vec<u64>>,
) -> Shape {
    let size = local_size.clone().unwrap_or_else(|| global_size.to_vec());
    let offset = global_offset
        .as_ref()
        .is_some_and(|o| o.iter().any(|&x| x != 0));
    (kernel.to_string(), size, offset)
}

fn input_shape(input: &LaunchInput) -> Shape {
    shape(
        &input.kernel,
        &input.global_offset,
        &input.global_size,
        &input.local_size,
    )
}

/// What one execution gave.
#[derive(Debug, Clone)]
pub enum Ran {
    /// The kernel finished: contents of every memory argument (extras included) afterwards,
    /// and its writes out of bounds (every buffer of the input runs between guard zones).
    Done(Vec<Option<Vec<u8>>>, Vec<GuardBreach>),
    /// The kernel failed or crashed the worker (the reason).
    Crashed(String),
    /// The watchdog fired.
    Hung,
}

/// Runs test cases of one instrumented program.
pub trait Runner {
    /// Runs `input` with the extra `extras` arguments (the coverage counters).
    fn run(&mut self, input: &LaunchInput, extras: &[InputArg]) -> Result<Ran, FuzzError>;
    /// Runs `input` as `run` does, but without guard zones around its buffers: the way
    /// `cltrap cover` and `cltrap replay` run a suite's launches (a read out of bounds reads
    /// whatever lies there, not a zone's fill). Its breach list is always empty.
    fn run_plain(&mut self, input: &LaunchInput, extras: &[InputArg]) -> Result<Ran, FuzzError>;
    /// Times the program was compiled (1 unless workers were restarted).
    fn compiles(&self) -> usize;
    /// Runs `run` on the launch kept between runs (made for `layout`): `Ran::Done` holds the
    /// bytes of the coverage counters read back, alone.
    fn run_resident(
        &mut self,
        layout: &ResidentLayout,
        run: &ResidentRun,
    ) -> Result<Ran, FuzzError>;
    /// Which worker the next run goes to (started now if none is live): a new value means
    /// the kept launch is gone with the previous worker, and its contents must be sent again.
    fn generation(&mut self) -> Result<usize, FuzzError>;
}

/// Runs in this process: no protection against hangs.
pub struct InProcess<'s> {
    session: &'s Session,
    built: BuiltProgram,
    resident: Option<Resident>,
    generation: usize,
}

impl<'s> InProcess<'s> {
    /// Builds `source` with `options` once.
    pub fn new(session: &'s Session, source: &str, options: &str) -> Result<Self, FuzzError> {
        let built = session.build_source(source, options)?;
        Ok(InProcess {
            session,
            built,
            resident: None,
            generation: 1,
        })
    }
}

impl Runner for InProcess<'_> {
    fn run(&mut self, input: &LaunchInput, extras: &[InputArg]) -> Result<Ran, FuzzError> {
        match self.session.run_guarded(&self.built, input, extras) {
            Ok((out, breaches)) => Ok(Ran::Done(out.outputs, breaches)),
            Err(ExecError::Execution { code }) => Ok(Ran::Crashed(code)),
            Err(e) => Err(e.into()),
        }
    }
    fn run_plain(&mut self, input: &LaunchInput, extras: &[InputArg]) -> Result<Ran, FuzzError> {
        match self.session.run(&self.built, input, extras) {
            Ok(out) => Ok(Ran::Done(out.outputs, Vec::new())),
            Err(ExecError::Execution { code }) => Ok(Ran::Crashed(code)),
            Err(e) => Err(e.into()),
        }
    }
    fn compiles(&self) -> usize {
        1
    }
    fn run_resident(
        &mut self,
        layout: &ResidentLayout,
        run: &ResidentRun,
    ) -> Result<Ran, FuzzError> {
        if self.resident.as_ref().map(Resident::layout) != Some(layout) {
            if self.resident.is_some() {
                self.generation += 1;
            }
            self.resident = Some(self.session.resident(&self.built, layout)?);
        }
        let Some(r) = self.resident.as_mut() else {
            return Err(FuzzError::Worker("no resident launch".into()));
        };
        match self.session.run_resident(r, run) {
            Ok((counters, breaches)) => Ok(Ran::Done(vec![Some(counters)], breaches)),
            Err(ExecError::Execution { code }) => Ok(Ran::Crashed(code)),
            Err(e) => Err(e.into()),
        }
    }
    fn generation(&mut self) -> Result<usize, FuzzError> {
        Ok(self.generation)
    }
}

/// Runs in a worker process (`cltrap fuzz --worker`), killed and restarted when it exceeds
/// the watchdog or dies.
pub struct Worker {
    exe: PathBuf,
    source: String,
    options: String,
    device: DeviceSelector,
    watchdog: Duration,
    live: Option<Live>,
    compiles: usize,
    /// Shapes executed in any process of this worker: PoCL compiled the kernel for them
    /// and keeps it in its cache.
    compiled: HashSet<Shape>,
}

struct Live {
    child: Child,
    stdin: ChildStdin,
    replies: Receiver<String>,
}

impl Worker {
    /// A worker running `exe` (the `cltrap` binary); started lazily, builds once per start.
    pub fn new(
        exe: PathBuf,
        source: &str,
        options: &str,
        device: &DeviceSelector,
        watchdog: Duration,
    ) -> Result<Worker, FuzzError> {
        let mut w = Worker {
            exe,
            source: source.into(),
            options: options.into(),
            device: device.clone(),
            watchdog,
            live: None,
            compiles: 0,
            compiled: HashSet::new(),
        };
        w.start()?;
        Ok(w)
    }

    fn start(&mut self) -> Result<(), FuzzError> {
        let mut cmd = Command::new(&self.exe);
        cmd.args(["fuzz", "--worker"]);
        // PoCL steps over an integer division by zero (its SIGFPE handler skips the
        // instruction, the result is whatever the register held), but only in a process where
        // no other handler was installed after it: in `cltrap cover` and `cltrap mutate`,
        // which parse with libclang (whose crash recovery takes SIGFPE over), the same launch
        // kills the process. A case is only a case if it runs there too, so the worker runs
        // without PoCL's handler: a division by zero is a crash, hence a finding.
        cmd.env("POCL_SIGFPE_HANDLER", "0");
        if let Some(p) = &self.device.platform {
            cmd.args(["--platform", p]);
        }
        if let Some(d) = &self.device.device {
            cmd.args(["--device", d]);
        }
        // Ends with this thread, which owns the worker: a fuzzer killed outright does not
        // leave it in an endless kernel with no watchdog.
        crate::orphan::end_with_parent(&mut cmd, libc::SIGKILL);
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // The kernel's own damage (heap corruption messages of a dying worker) is noise:
            // crashes are reported as findings.
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| FuzzError::Worker(format!("cannot start {}: {e}", self.exe.display())))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(FuzzError::Worker("the worker has no pipes".into()));
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut live = Live {
            child,
            stdin,
            replies: rx,
        };
        let build = Request::Build {
            source: self.source.clone(),
            options: self.options.clone(),
        };
        send(&mut live, &build)?;
        // Compiling may take long on a loaded machine: a generous fixed limit.
        match recv(&live, Duration::from_secs(120)) {
            Heard::Reply(Reply::Built) => {}
            Heard::Reply(Reply::Error(e)) => return Err(FuzzError::Worker(e)),
            _ => return Err(FuzzError::Worker("the worker died while compiling".into())),
        }
        self.compiles += 1;
        self.live = Some(live);
        Ok(())
    }

    fn kill(&mut self) {
        if let Some(mut l) = self.live.take() {
            let _ = l.child.kill();
            let _ = l.child.wait();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

fn send(live: &mut Live, req: &Request) -> Result<(), FuzzError> {
    let mut line = serde_json::to_vec(req).map_err(|e| FuzzError::Worker(e.to_string()))?;
    line.push(b'\n');
    live.stdin
        .write_all(&line)
        .and_then(|_| live.stdin.flush())
        .map_err(|e| FuzzError::Worker(format!("the worker is gone: {e}")))
}

/// What the parent heard from its worker within a deadline.
enum Heard {
    /// A reply.
    Reply(Reply),
    /// Nothing before the deadline.
    Timeout,
    /// The worker closed its stdout or said something that is no reply.
    Gone,
}

fn recv(live: &Live, limit: Duration) -> Heard {
    match live.replies.recv_timeout(limit) {
        Ok(line) => serde_json::from_str(&line).map_or(Heard::Gone, Heard::Reply),
        Err(RecvTimeoutError::Timeout) => Heard::Timeout,
        Err(RecvTimeoutError::Disconnected) => Heard::Gone,
    }
}

impl Runner for Worker {
    fn run(&mut self, input: &LaunchInput, extras: &[InputArg]) -> Result<Ran, FuzzError> {
        if self.live.is_none() {
            self.start()?;
        }
        let req = Request::Run(WireInput::from_input(input, extras));
        self.exchange_shaped(&req, input_shape(input))
    }
    fn run_plain(&mut self, input: &LaunchInput, extras: &[InputArg]) -> Result<Ran, FuzzError> {
        if self.live.is_none() {
            self.start()?;
        }
        let req = Request::RunPlain(WireInput::from_input(input, extras));
        self.exchange_shaped(&req, input_shape(input))
    }
    fn compiles(&self) -> usize {
        self.compiles
    }
    fn run_resident(
        &mut self,
        layout: &ResidentLayout,
        run: &ResidentRun,
    ) -> Result<Ran, FuzzError> {
        // Only a worker of the generation the run was made for holds its versions.
        if self.live.is_none() {
            return Ok(Ran::Crashed("the worker process died".into()));
        }
        let req = Request::Resident {
            layout: layout.clone(),
            run: run.clone(),
        };
        let at = shape(
            &layout.kernel,
            &run.global_offset,
            &run.global_size,
            &run.local_size,
        );
        self.exchange_shaped(&req, at)
    }
    fn generation(&mut self) -> Result<usize, FuzzError> {
        if self.live.is_none() {
            self.start()?;
        }
        Ok(self.compiles)
    }
}

impl Worker {
    /// [`Worker::exchange`] of an execution of `shape`: under the watchdog plus
    /// [`COMPILE_ALLOWANCE`] when PoCL has not compiled the kernel for it yet.
    fn exchange_shaped(&mut self, req: &Request, shape: Shape) -> Result<Ran, FuzzError> {
        let limit = if self.compiled.contains(&shape) {
            self.watchdog
        } else {
            self.watchdog + COMPILE_ALLOWANCE
        };
        // Past the allowance, a run that did not answer hung in the kernel, not in the
        // compile: later runs of the shape get the watchdog alone (a kernel hanging on every
        // input costs the allowance once, not on every execution).
        self.compiled.insert(shape);
        self.exchange(req, limit)
    }

    /// Sends `req` and waits for the reply for `limit` (the watchdog).
    fn exchange(&mut self, req: &Request, limit: Duration) -> Result<Ran, FuzzError> {
        let Some(live) = self.live.as_mut() else {
            return Err(FuzzError::Worker("no worker".into()));
        };
        if send(live, req).is_err() {
            self.kill();
            return Ok(Ran::Crashed("the worker process died".into()));
        }
        match recv(live, limit) {
            Heard::Reply(Reply::Ran(outputs, breaches)) => {
                Ok(Ran::Done(super::wire::decode_outputs(&outputs), breaches))
            }
            Heard::Reply(Reply::Failed(code)) => Ok(Ran::Crashed(code)),
            Heard::Reply(Reply::Error(e)) => Err(FuzzError::Worker(e)),
            Heard::Timeout => {
                self.kill();
                Ok(Ran::Hung)
            }
            Heard::Reply(Reply::Built) | Heard::Gone => {
                let status = self
                    .live
                    .as_mut()
                    .and_then(|l| l.child.wait().ok())
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "unknown status".into());
                self.live = None;
                Ok(Ran::Crashed(format!("the worker process died ({status})")))
            }
        }
    }
}

/// The worker side: reads requests on stdin, answers on stdout, until stdin closes.
pub fn serve(session: &Session) -> Result<(), FuzzError> {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut built: Option<BuiltProgram> = None;
    let mut resident: Option<Resident> = None;
    for line in stdin.lock().lines() {
        let line = line.map_err(|e| FuzzError::Worker(e.to_string()))?;
        let answer = match serde_json::from_str::<Request>(&line) {
            Ok(Request::Build { source, options }) => match session.build_source(&source, &options)
            {
                Ok(b) => {
                    built = Some(b);
                    Reply::Built
                }
                Err(e) => Reply::Error(e.to_string()),
            },
            Ok(Request::Run(w)) => match (&built, w.to_input()) {
                (Some(b), Ok((input, extras))) => match session.run_guarded(b, &input, &extras) {
                    Ok((o, breaches)) => {
                        Reply::Ran(super::wire::encode_outputs(&o.outputs), breaches)
                    }
                    Err(ExecError::Execution { code }) => Reply::Failed(code),
                    Err(e) => Reply::Error(e.to_string()),
                },
                (None, _) => Reply::Error("run before build".into()),
                (_, Err(e)) => Reply::Error(e),
            },
            Ok(Request::RunPlain(w)) => match (&built, w.to_input()) {
                (Some(b), Ok((input, extras))) => match session.run(b, &input, &extras) {
                    Ok(o) => Reply::Ran(super::wire::encode_outputs(&o.outputs), Vec::new()),
                    Err(ExecError::Execution { code }) => Reply::Failed(code),
                    Err(e) => Reply::Error(e.to_string()),
                },
                (None, _) => Reply::Error("run before build".into()),
                (_, Err(e)) => Reply::Error(e),
            },
            Ok(Request::Resident { layout, run }) => match &built {
                Some(b) => {
                    if resident.as_ref().map(Resident::layout) != Some(&layout) {
                        resident = None;
                        match session.resident(b, &layout) {
                            Ok(r) => resident = Some(r),
                            Err(e) => {
                                reply(&mut out, &Reply::Error(e.to_string()))?;
                                continue;
                            }
                        }
                    }
                    match resident.as_mut().map(|r| session.run_resident(r, &run)) {
                        Some(Ok((counters, breaches))) => {
                            Reply::Ran(super::wire::encode_outputs(&[Some(counters)]), breaches)
                        }
                        Some(Err(ExecError::Execution { code })) => Reply::Failed(code),
                        Some(Err(e)) => Reply::Error(e.to_string()),
                        None => Reply::Error("no resident launch".into()),
                    }
                }
                None => Reply::Error("run before build".into()),
            },
            Err(e) => Reply::Error(format!("bad request: {e}")),
        };
        if !reply(&mut out, &answer)? {
            break;
        }
    }
    Ok(())
}

/// Writes one reply line; `false` when the parent is gone.
fn reply(out: &mut impl Write, r: &Reply) -> Result<bool, FuzzError> {
    let mut text = serde_json::to_vec(r).map_err(|e| FuzzError::Worker(e.to_string()))?;
    text.push(b'\n');
    Ok(out.write_all(&text).and_then(|_| out.flush()).is_ok())
}
