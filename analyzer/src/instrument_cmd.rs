//! The `cltrap` side of live instrumentation (`cltrap run --coverage` / `--permute SEED`).
//!
//! * `cltrap instrument --pass coverage|permute --options OPTS` (internal, spawned by the shim
//!   inside the application — libclang must never load there): the program source on stdin,
//!   one JSON answer on stdout, exit 0; or `{"error": "..."}` and exit 1. The answer:
//!   `{"format": "cltrap-instrument", "version": 1, "pass", "options", "original" (the source
//!   as given), "source" (instrumented), "kernels": [{"name", "extra_arg"}],
//!   "static_len", "barriers" (coverage: the counter buffer holds
//!   `static_len + barriers * work-groups` u32s), "map" (the pass's map)}`. The shim caches it as
//!   `DIR/instrument/<key>.json`.
//! * [`after_run`]: when the application has exited, merges the counter buffers the shim
//!   appended to `DIR/coverage.jsonl` during this run with the maps, prints the terminal summary
//!   on stderr and writes `DIR/coverage/coverage.json`, `coverage.lcov` and `html/`.

use clap::Parser;
use cltrap_analyzer::cover::{self, CoverageReport, ProgramCoverage, ReportPaths};
use cltrap_analyzer::launcher::RunReport;
use cltrap_analyzer::variant::words;
use cltrap_kernel::coverage::{instrument_coverage, CoverageMap, CoverageOptions};
use cltrap_kernel::permute::permute_schedule;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `cltrap instrument`.
#[derive(Parser, Debug)]
#[command(name = "cltrap instrument")]
struct Args {
    /// `coverage` or `permute`.
    #[arg(long)]
    pass: String,
    /// The application's build options.
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    options: String,
}

/// Runs `cltrap instrument` when that is the command line's subcommand (it is internal, so it
/// is not in the user-facing `clap` tree); `None` for every other command line.
pub fn intercept() -> Option<ExitCode> {
    let mut args = std::env::args_os();
    let _exe = args.next();
    if args.next().is_none_or(|a| a != "instrument") {
        return None;
    }
    let parsed = match Args::try_parse_from(std::iter::once("cltrap instrument".into()).chain(args))
    {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    let mut source = String::new();
    let answer = match std::io::stdin().read_to_string(&mut source) {
        Ok(_) => instrument(&parsed.pass, &parsed.options, &source),
        Err(e) => Err(format!("cannot read the program source from stdin: {e}")),
    };
    let (value, code) = match answer {
        Ok(v) => (v, ExitCode::SUCCESS),
        Err(e) => (json!({ "error": e }), ExitCode::from(1)),
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}");
    Some(code)
}

/// Instruments `source` for `pass`; `Err` is one sentence naming the construct and line.
pub fn instrument(pass: &str, options: &str, source: &str) -> Result<Value, String> {
    let program = cltrap_kernel::parse_program(source, options).map_err(|e| e.to_string())?;
    let mut answer = json!({
        "format": "cltrap-instrument",
        "version": 1,
        "pass": pass,
        "options": options,
        "original": source,
    });
    match pass {
        "coverage" => {
            let c = instrument_coverage(&program, CoverageOptions::default())
                .map_err(|e| e.to_string())?;
            let kernels: Vec<Value> = c
                .map
                .kernels
                .iter()
                .map(|k| json!({ "name": k.name, "extra_arg": k.cov_arg_index }))
                .collect();
            answer["source"] = json!(c.source);
            answer["kernels"] = json!(kernels);
            answer["static_len"] = json!(c.map.static_len());
            answer["barriers"] = json!(c.map.barriers.len());
            answer["map"] = serde_json::to_value(&c.map).map_err(|e| e.to_string())?;
        }
        "permute" => {
            let p = permute_schedule(&program).map_err(|e| e.to_string())?;
            let kernels: Vec<Value> = p
                .map
                .kernels
                .iter()
                .map(|k| json!({ "name": k.name, "extra_arg": k.perm_arg_index }))
                .collect();
            answer["source"] = json!(p.source);
            answer["kernels"] = json!(kernels);
            answer["map"] = serde_json::to_value(&p.map).map_err(|e| e.to_string())?;
        }
        other => {
            return Err(format!(
                "unknown pass {other:?}: expected coverage or permute"
            ))
        }
    }
    Ok(answer)
}

/// Why the live coverage report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// A file of the capture could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Writing the report failed.
    #[error("{0}")]
    Report(#[from] cover::write::ReportError),
}

/// One line of `coverage.jsonl` (see the shim's `swap::counters`).
struct Line {
    key: String,
    kernel: String,
    global: Vec<u64>,
    counters: String,
}

fn parse_line(text: &str) -> Option<Line> {
    let v: Value = serde_json::from_str(text).ok()?;
    Some(Line {
        key: v.get("key")?.as_str()?.to_string(),
        kernel: v.get("kernel")?.as_str()?.to_string(),
        global: v
            .get("global")?
            .as_array()?
            .iter()
            .filter_map(Value::as_u64)
            .collect(),
        counters: v.get("counters")?.as_str()?.to_string(),
    })
}

/// The merged report of the counters appended to `dir/coverage.jsonl` from byte `from` on.
/// Lines that cannot be used are listed in `details` (one sentence each); `None` when the run
/// appended nothing.
pub fn live_report(dir: &Path, from: u64) -> Result<Option<CoverageReport>, LiveError> {
    let path = dir.join("coverage.jsonl");
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(LiveError::Read { path, source }),
    };
    let start = usize::try_from(from).unwrap_or(usize::MAX).min(bytes.len());
    let text = String::from_utf8_lossy(&bytes[start..]);
    let mut report = CoverageReport::default();
    let mut index: HashMap<String, Option<usize>> = HashMap::new();
    let mut lines = 0;
    for raw in text.lines().filter(|l| !l.trim().is_empty()) {
        lines += 1;
        let Some(line) = parse_line(raw) else {
            note(
                &mut report,
                "a line of coverage.jsonl is unreadable (cut off by a crash?)".into(),
            );
            continue;
        };
        let at = match index.get(&line.key) {
            Some(at) => *at,
            None => {
                let at = match load_program(dir, &line.key) {
                    Ok(p) => {
                        report.programs.push(p);
                        Some(report.programs.len() - 1)
                    }
                    Err(e) => {
                        note(&mut report, e);
                        None
                    }
                };
                index.insert(line.key.clone(), at);
                at
            }
        };
        let Some(at) = at else { continue };
        let blob = cltrap_capture::writer::blob_path(dir, &line.counters);
        let counters: Vec<u32> = match std::fs::read(&blob) {
            Ok(b) => words(&b),
            Err(e) => {
                note(
                    &mut report,
                    format!("cannot read counters {}: {e}", blob.display()),
                );
                continue;
            }
        };
        if let Err(e) =
            report.programs[at].add_counters(&line.kernel, None, &counters, &line.global)
        {
            note(&mut report, format!("kernel {}: {e}", line.kernel));
        }
    }
    Ok((lines > 0).then_some(report))
}

fn note(report: &mut CoverageReport, message: String) {
    if !report.details.contains(&message) {
        report.details.push(message);
    }
}

fn load_program(dir: &Path, key: &str) -> Result<ProgramCoverage, String> {
    let path = dir.join("instrument").join(format!("{key}.json"));
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let v: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{} is not valid JSON: {e}", path.display()))?;
    let map: CoverageMap = serde_json::from_value(v.get("map").cloned().unwrap_or(Value::Null))
        .map_err(|e| format!("{} holds no coverage map: {e}", path.display()))?;
    let original = v
        .get("original")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Ok(ProgramCoverage::new(key, original, map))
}

/// Where the live report goes: `DIR/coverage/`.
pub fn report_paths(dir: &Path) -> ReportPaths {
    let out = dir.join("coverage");
    ReportPaths {
        lcov: Some(out.join("coverage.lcov")),
        html: Some(out.join("html")),
        json: Some(out.join("coverage.json")),
    }
}

/// After `cltrap run`: if the application's launches appended coverage counters, prints the
/// summary and writes the reports (all on stderr: stdout belongs to the application).
pub fn after_run(report: &RunReport) {
    let live = match live_report(&report.dir, report.coverage_from) {
        Ok(Some(r)) => r,
        Ok(None) => return,
        Err(e) => {
            eprintln!("cltrap: no coverage report: {e}");
            return;
        }
    };
    for d in &live.details {
        eprintln!("cltrap: {d}");
    }
    eprint!("{}", cover::report::summary(&live));
    // The report lies inside the capture and shows its kernels: its folder takes the
    // capture's folder mode (0700 unless shared), so what is written inside stays as private
    // as the rest of the capture.
    let access = if report.share {
        cltrap_capture::writer_fs::Access::SHARED
    } else {
        cltrap_capture::writer_fs::Access::PRIVATE
    };
    if let Err(e) =
        cltrap_capture::writer_fs::ensure_subdirs(&report.dir, Path::new("coverage"), access)
    {
        eprintln!("cltrap: no coverage report: {e}");
        return;
    }
    match cover::write::write(&live, &report_paths(&report.dir)) {
        Ok(written) => {
            for p in written {
                eprintln!("cltrap: wrote {}", p.display());
            }
        }
        Err(e) => eprintln!("cltrap: {e}"),
    }
}
