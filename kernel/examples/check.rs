//! Runs the front-end and both passes over kernel files and checks the rewritten sources still
//! compile: `cargo run -p cltrap-kernel --example check -- [-o OPTIONS] FILE...`.
use cltrap_kernel::coverage::{instrument_coverage, CoverageOptions};
use cltrap_kernel::frontend::{compile_errors, diagnostics, ParseOptions};
use cltrap_kernel::parse_with;
use cltrap_kernel::permute::permute_schedule;

fn check(path: &str, opts: &ParseOptions) -> Result<String, String> {
    let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let p = parse_with(&src, opts).map_err(|e| format!("parse: {e}"))?;
    let cov = instrument_coverage(&p, CoverageOptions::default())
        .map_err(|e| format!("coverage: {e}"))?;
    let perm = permute_schedule(&p).map_err(|e| format!("permute: {e}"))?;
    let before = diagnostics(&src, opts).map_err(|e| e.to_string())?.len();
    for (what, out) in [("coverage", &cov.source), ("permute", &perm.source)] {
        let after = diagnostics(out, opts).map_err(|e| e.to_string())?;
        if after.len() > before {
            for d in &after {
                eprintln!("{path}: {what}: {}:{}: {}", d.line, d.col, d.message);
            }
        }
        let errs = compile_errors(out, opts).map_err(|e| e.to_string())?;
        if let Some(e) = errs.first() {
            return Err(format!(
                "{what} output does not compile: {}:{}: {}",
                e.line, e.col, e.message
            ));
        }
    }
    Ok(format!(
        "{} kernels, {} functions, {} slots, {} barriers, {} skipped",
        p.kernels().count(),
        p.functions.len(),
        cov.map.slots.len(),
        cov.map.barriers.len(),
        cov.map.skipped.len()
    ))
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut opts = ParseOptions::default();
    if args.first().map(String::as_str) == Some("-o") && args.len() > 1 {
        opts.build_options = args[1].clone();
        args.drain(..2);
    }
    let mut failed = 0;
    for path in &args {
        match check(path, &opts) {
            Ok(s) => println!("ok   {path}: {s}"),
            Err(e) => {
                failed += 1;
                println!("FAIL {path}: {e}");
            }
        }
    }
    println!("{} files, {failed} failed", args.len());
}
