//! Trivial Compiler Equivalence (Papadakis et al., ICSE 2015): a mutant whose *optimised* code
//! is the same as the original's is equivalent; one whose optimised code is the same as another
//! mutant's is a duplicate. The syntactic rule of [`crate::mutate`] sees `x*1`→`x/1`; the
//! optimiser also sees `i < n`→`i != n` in a counted loop, a mutated dead store, a boundary
//! change that value ranges make unreachable, and so on.
//!
//! How: each source is compiled by the clang binary ([`clang_available`]) for the `spir64`
//! target at `-O2` with the program's own build options (through
//! [`crate::frontend::clang_command_line`], the arguments the front-end parses with), and the
//! IR text is cut per kernel into what that kernel reaches, renumbered, and hashed (see
//! `normalise`). Device binaries cannot do this job on PoCL: they hold unoptimised bitcode.
//!
//! What it is not for: running anything. Equal digests mean the optimiser produced the same
//! code, which on a real driver means the same behaviour (including behaviour the language
//! leaves undefined, where the compiler may pick anything for both); different digests decide
//! nothing.

pub(crate) mod clang_bin;
mod normalise;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use thiserror::Error;

use crate::frontend::{clang_command_line, ParseOptions};
use crate::model::Program;
use crate::mutate::{mutated_text, Mutant, Operator};

pub use clang_bin::{clang_at, clang_available, ClangInfo, CANDIDATES, CLANG_ENV};

/// Optimisation level of the comparison: -O2 inlines helpers and folds what TCE needs; -O3
/// decided no more mutants on the test kernels and costs more.
pub const OPT_LEVEL: &str = "-O2";
/// Target triple: SPIR is what OpenCL drivers consume, so no host ABI detail leaks into the IR.
pub const TARGET: &str = "spir64";

/// One program text to compile: the original or a mutant (`mutate::mutated_text`), with the
/// build options the capture recorded.
#[derive(Debug, Clone)]
pub struct TceSource {
    /// OpenCL C source text.
    pub source: String,
    /// Build options, file name and extra clang arguments, as the front-end takes them.
    pub options: ParseOptions,
}

impl TceSource {
    /// A source with the captured `clBuildProgram` options string.
    pub fn new(source: impl Into<String>, build_options: &str) -> TceSource {
        TceSource {
            source: source.into(),
            options: ParseOptions {
                build_options: build_options.into(),
                ..ParseOptions::default()
            },
        }
    }
}

/// The optimised code of one program, as digests (blake3, hex) of what each kernel reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrDigest {
    /// Over every kernel (names and digests): equal means every kernel compiles the same.
    pub program: String,
    /// Per kernel: its optimised definition plus the helpers, variables, declarations,
    /// attributes and metadata it reaches.
    pub kernels: BTreeMap<String, String>,
}

impl IrDigest {
    /// Whether `self` and `other` compile to the same code for `kernels` (every kernel of
    /// either program when empty). A kernel missing on one side is a difference.
    pub fn same_code(&self, other: &IrDigest, kernels: &[String]) -> bool {
        if kernels.is_empty() {
            return self.program == other.program;
        }
        kernels
            .iter()
            .all(|k| match (self.kernels.get(k), other.kernels.get(k)) {
                (Some(a), Some(b)) => a == b,
                _ => false,
            })
    }
}

/// Why a source could not be compared.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum TceError {
    /// No clang binary could be run.
    #[error("no clang binary found for comparing optimised code (tried {tried}); install clang-15 (Debian's PoCL depends on it) or set CLTRAP_CLANG")]
    NoClang {
        /// What was tried.
        tried: String,
    },
    /// Starting or waiting for clang failed.
    #[error("cannot run {program}: {message}")]
    Spawn {
        /// The binary.
        program: String,
        /// The system's reason.
        message: String,
    },
    /// Clang rejected the source.
    #[error("clang does not compile the source: {message}{}", if *errors > 1 { format!(" (and {} more errors)", errors - 1) } else { String::new() })]
    Compile {
        /// The first error, `program.cl:LINE:COL: error: ...`.
        message: String,
        /// How many errors clang reported.
        errors: usize,
    },
    /// Clang ran past the deadline and was killed.
    #[error("clang took longer than {seconds} s and was stopped")]
    Timeout {
        /// The deadline.
        seconds: f64,
    },
    /// Clang printed something that is not UTF-8 text.
    #[error("clang printed IR that is not UTF-8 text")]
    BadOutput,
}

/// How a batch runs: compiles at once, and how long one compile may take.
#[derive(Debug, Clone, Copy)]
pub struct TceLimits {
    /// Clang processes at once (the number of cores by default).
    pub threads: usize,
    /// Deadline of one compile.
    pub timeout: Duration,
}

impl Default for TceLimits {
    fn default() -> TceLimits {
        TceLimits {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            timeout: Duration::from_secs(60),
        }
    }
}

/// How a mutant's optimised code relates to the original and to the mutants before it.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Same code as the original: equivalent.
    SameAsOriginal,
    /// Same code as the mutant at this index (the first such, an earlier one): a duplicate.
    SameAsMutant(usize),
    /// Different code: TCE decides nothing.
    Different,
    /// The mutant could not be compiled or compared.
    NotCompared(TceError),
}

/// The source TCE compiles for mutant `m` of `p` (the user's text with only its patches), or
/// `None` when TCE cannot judge it: a launch-geometry mutant leaves the source unchanged (its
/// code *is* the original's, its launch is not), and an atomic made plain calls a
/// `__cltrap_plain_*` helper that exists only in the rendered schema programs.
pub fn mutant_source(p: &Program, m: &Mutant, options: &ParseOptions) -> Option<TceSource> {
    if m.launch.is_some() || m.operator == Operator::AtomicPlain {
        return None;
    }
    Some(TceSource {
        source: mutated_text(p, m).ok()?,
        options: options.clone(),
    })
}

/// The text for a report's reason: `clang 15, -O2`.
pub fn describe(clang: &ClangInfo) -> String {
    format!("clang {}, {OPT_LEVEL}", clang.major)
}

/// The clang arguments for `options`: the front-end's own (`-x cl`, macros, includes,
/// language version, math flags) plus target, optimisation and IR output on stdout; the input
/// is stdin. `-cl-opt-disable` is dropped: TCE needs the optimiser, and optimising cannot make
/// two different behaviours look equal.
pub fn clang_arguments(options: &ParseOptions) -> Vec<String> {
    let mut args: Vec<String> = clang_command_line(options)
        .into_iter()
        .filter(|a| a != "-cl-opt-disable")
        .collect();
    for a in [
        "-target",
        TARGET,
        OPT_LEVEL,
        "-emit-llvm",
        "-S",
        "-w",
        "-o",
        "-",
        "-",
    ] {
        args.push(a.to_string());
    }
    args
}

/// The optimised IR module of one source, as clang prints it (for reading; compare with
/// [`ir_digest`]).
pub fn optimised_ir(job: &TceSource) -> Result<String, TceError> {
    optimised_ir_within(job, TceLimits::default().timeout)
}

fn optimised_ir_within(job: &TceSource, timeout: Duration) -> Result<String, TceError> {
    let clang = clang_available()?;
    clang_bin::run(
        &clang,
        &clang_arguments(&job.options),
        &job.source,
        &job.options.file_name,
        timeout,
    )
}

/// The digest of one source's optimised code.
pub fn ir_digest(job: &TceSource) -> Result<IrDigest, TceError> {
    digest_within(job, TceLimits::default().timeout)
}

fn digest_within(job: &TceSource, timeout: Duration) -> Result<IrDigest, TceError> {
    let ir = optimised_ir_within(job, timeout)?;
    Ok(digest_ir(&ir))
}

/// The per-kernel canonical texts of an optimised module (exposed so a report or a test can
/// show *why* two digests differ).
pub fn kernel_texts(ir: &str) -> BTreeMap<String, String> {
    normalise::Module::parse(ir).kernel_texts()
}

fn digest_ir(ir: &str) -> IrDigest {
    let kernels: BTreeMap<String, String> = kernel_texts(ir)
        .into_iter()
        .map(|(k, text)| (k, cltrap_capture::writer::digest(text.as_bytes())))
        .collect();
    let mut all = String::new();
    for (k, d) in &kernels {
        all.push_str(k);
        all.push(' ');
        all.push_str(d);
        all.push('\n');
    }
    IrDigest {
        program: cltrap_capture::writer::digest(all.as_bytes()),
        kernels,
    }
}

/// Digests of many sources, compiled concurrently (one clang process per core), one result
/// per source in order: a source that fails does not fail the others. Identical sources with
/// identical options are compiled once.
pub fn ir_digests(jobs: &[TceSource]) -> Vec<Result<IrDigest, TceError>> {
    ir_digests_with(jobs, TceLimits::default())
}

/// [`ir_digests`] with explicit limits.
pub fn ir_digests_with(jobs: &[TceSource], limits: TceLimits) -> Vec<Result<IrDigest, TceError>> {
    if let Err(e) = clang_available() {
        return jobs.iter().map(|_| Err(e.clone())).collect();
    }
    let mut first_of: HashMap<(&str, Vec<String>), usize> = HashMap::new();
    let mut unique: Vec<usize> = Vec::new();
    let same_as: Vec<usize> = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let key = (j.source.as_str(), clang_arguments(&j.options));
            *first_of.entry(key).or_insert_with(|| {
                unique.push(i);
                i
            })
        })
        .collect();
    let results: Mutex<HashMap<usize, Result<IrDigest, TceError>>> = Mutex::new(HashMap::new());
    let next = AtomicUsize::new(0);
    let threads = limits.threads.clamp(1, unique.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while let Some(&i) = unique.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let r = digest_within(&jobs[i], limits.timeout);
                    if let Ok(mut map) = results.lock() {
                        map.insert(i, r);
                    }
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    same_as
        .iter()
        .map(|i| {
            results.get(i).cloned().unwrap_or_else(|| {
                Err(TceError::Spawn {
                    program: "clang".into(),
                    message: "a compile thread stopped".into(),
                })
            })
        })
        .collect()
}

/// Classifies mutants against the original by their digests, for `kernels` (all when empty):
/// the same code as the original is [`Verdict::SameAsOriginal`], else the same as an earlier
/// mutant is [`Verdict::SameAsMutant`].
pub fn verdicts(
    original: &IrDigest,
    mutants: &[Result<IrDigest, TceError>],
    kernels: &[String],
) -> Vec<Verdict> {
    let mut seen: Vec<(usize, &IrDigest)> = Vec::new();
    mutants
        .iter()
        .enumerate()
        .map(|(i, r)| match r {
            Err(e) => Verdict::NotCompared(e.clone()),
            Ok(d) if d.same_code(original, kernels) => Verdict::SameAsOriginal,
            Ok(d) => match seen.iter().find(|(_, e)| d.same_code(e, kernels)) {
                Some((j, _)) => Verdict::SameAsMutant(*j),
                None => {
                    seen.push((i, d));
                    Verdict::Different
                }
            },
        })
        .collect()
}
