//! Runs captured launches plain, coverage-instrumented and schedule-permuted on the default
//! device, checking the instrumented variants give the app's results:
//! `cargo run -p cltrap-kernel --example captured -- CAPTURE_DIR [MAX_PER_KERNEL]`.
//! A smoke test of the passes on third-party kernels (clFFT, clpeak, ffmpeg captures).
use std::collections::HashMap;
use std::path::Path;

use cltrap_analyzer::executor::{BuildOptions, DeviceSelector, LaunchInput, Session};
use cltrap_analyzer::variant::{program_source, word_buffer, words};
use cltrap_capture::{Capture, LaunchRecord};
use cltrap_kernel::coverage::{instrument_coverage, CoverageOptions};
use cltrap_kernel::permute::{identity_permutation, permute_schedule, random_permutation};

fn one(s: &Session, cap: &Capture, rec: &LaunchRecord) -> Result<String, String> {
    let program = cap.program(&rec.program).map_err(|e| e.to_string())?;
    let source = program_source(cap, &program).map_err(|e| e.to_string())?;
    let model =
        cltrap_kernel::parse_program(&source, &program.options).map_err(|e| e.to_string())?;
    let input = LaunchInput::from_record(cap, rec).map_err(|e| e.to_string())?;
    let plain_prog = s
        .build(cap, &program, &BuildOptions::default())
        .map_err(|e| e.to_string())?;
    let plain_run = s.run(&plain_prog, &input, &[]).map_err(|e| e.to_string())?;
    let plain_ns = plain_run.kernel_ns.unwrap_or(0);
    let plain = plain_run.outputs;
    let n = plain.len();

    let cov = instrument_coverage(&model, CoverageOptions::default())
        .map_err(|e| format!("coverage: {e}"))?;
    let built = s
        .build(
            cap,
            &program,
            &BuildOptions {
                source: Some(cov.source.clone()),
                extra_options: String::new(),
            },
        )
        .map_err(|e| format!("coverage build: {e}"))?;
    let init = cov
        .map
        .initial_buffer(&input.global_size, input.local_size.as_deref());
    let out = s
        .run(&built, &input, &[word_buffer(&init)])
        .map_err(|e| e.to_string())?;
    let same_cov = out.outputs[..n] == plain[..];
    let cov_ns = out.kernel_ns.unwrap_or(0);
    let raw = out.outputs[n].as_deref().map(words).unwrap_or_default();
    let res = cov
        .map
        .evaluate(&input.kernel, &raw, &input.global_size)
        .map_err(|e| e.to_string())?;
    let divergent: usize = res.barriers.iter().map(|b| b.divergent.len()).sum();

    let perm = permute_schedule(&model).map_err(|e| format!("permute: {e}"))?;
    let built = s
        .build(
            cap,
            &program,
            &BuildOptions {
                source: Some(perm.source.clone()),
                extra_options: String::new(),
            },
        )
        .map_err(|e| format!("permute build: {e}"))?;
    let ones = vec![1u64; input.global_size.len()];
    let local = input.local_size.clone().unwrap_or(ones);
    let mut tables = vec![("identity", identity_permutation(&input.global_size, &local))];
    if input.local_size.is_some() {
        tables.push(("random", random_permutation(&input.global_size, &local, 7)));
    }
    let mut perm_report = Vec::new();
    for (name, t) in tables {
        let out = s
            .run(&built, &input, &[word_buffer(&t)])
            .map_err(|e| e.to_string())?;
        perm_report.push(format!(
            "{name} {}",
            if out.outputs[..n] == plain[..] {
                "same"
            } else {
                "DIFFERENT"
            }
        ));
    }
    Ok(format!(
        "{:.2}x time; coverage outputs {}; branches {}/{}, loops {}/{}, barriers {} ({} divergent groups), {} skipped; schedules: {}",
        cov_ns as f64 / plain_ns.max(1) as f64,
        if same_cov { "same" } else { "DIFFERENT" },
        res.branches.0,
        res.branches.1,
        res.loop_boundaries.0,
        res.loop_boundaries.1,
        res.barriers.len(),
        divergent,
        cov.map.skipped.len(),
        perm_report.join(", ")
    ))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first() else {
        eprintln!("usage: captured CAPTURE_DIR [MAX_PER_KERNEL]");
        std::process::exit(2);
    };
    let max: usize = args.get(1).and_then(|m| m.parse().ok()).unwrap_or(2);
    let cap = match Capture::open(Path::new(dir)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let s = match Session::open(&DeviceSelector::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let mut seen: HashMap<String, usize> = HashMap::new();
    for rec in &cap.launches {
        let n = seen.entry(rec.kernel.clone()).or_default();
        *n += 1;
        if *n > max {
            continue;
        }
        match one(&s, &cap, rec) {
            Ok(r) => println!("{} {}: {r}", rec.id, rec.kernel),
            Err(e) => println!("{} {}: SKIP/FAIL {e}", rec.id, rec.kernel),
        }
    }
}
