//! EQUIVALENT and duplicate mutants by Trivial Compiler Equivalence (`cltrap_kernel::tce`):
//! after the suite has run, each mutant it could not tell apart from the original (SURVIVED)
//! or never reached (NO-COVERAGE) is compiled by clang at -O2 and its optimised code compared,
//! per launched kernel, with the original's.
//!
//! Why only those: a detected mutant (KILLED, TIMEOUT, RUNTIME-ERROR, UNDECIDED) behaves
//! observably differently, so it cannot be equivalent, and compiling it would cost a clang run
//! for nothing; the score's denominator only changes through the undetected ones. Why after
//! the run rather than before: it keeps the per-mutant cost of the campaign a kernel run for
//! every mutant the suite kills, which is most of them in a useful suite.

use super::{MutantResult, Status};
use cltrap_kernel::frontend::ParseOptions;
use cltrap_kernel::tce::{self, TceSource, Verdict};
use cltrap_kernel::Program;

/// What the comparison decided for one program (for notes and `--timing`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TceTally {
    /// Mutants compiled and compared.
    pub compared: u32,
    /// Marked EQUIVALENT (same optimised code as the original).
    pub equivalent: u32,
    /// Same optimised code as another mutant (the detail says which).
    pub duplicates: u32,
    /// Compared mutants clang could not compile or compare.
    pub not_compared: u32,
}

/// Whether TCE has anything to decide for a mutant with this status.
fn judged(s: Status) -> bool {
    matches!(s, Status::Survived | Status::NoCoverage)
}

/// Compares the undetected mutants of one program with the original by their optimised code,
/// for the launched `kernels` (their helpers included): the same code as the original turns a
/// mutant EQUIVALENT; the same code as another mutant adds "duplicate of #N" to its detail.
/// When clang is missing or the original does not compile, nothing changes and one note says
/// why (the campaign's verdicts stay those of the runs).
pub fn judge(
    program: &Program,
    build_options: &str,
    kernels: &[String],
    file: &str,
    mutants: &mut [MutantResult],
    notes: &mut Vec<String>,
) -> TceTally {
    let mut tally = TceTally::default();
    let options = ParseOptions {
        build_options: build_options.into(),
        ..ParseOptions::default()
    };
    let picked: Vec<(usize, TceSource)> = mutants
        .iter()
        .enumerate()
        .filter(|(_, r)| judged(r.status))
        .filter_map(|(i, r)| tce::mutant_source(program, &r.mutant, &options).map(|s| (i, s)))
        .collect();
    if picked.is_empty() {
        return tally;
    }
    let clang = match tce::clang_available() {
        Ok(c) => c,
        Err(e) => {
            notes.push(format!(
                "{file}: equivalence by optimised code skipped: {e}"
            ));
            return tally;
        }
    };
    let how = tce::describe(&clang);
    let mut jobs = vec![TceSource {
        source: program.source.clone(),
        options,
    }];
    jobs.extend(picked.iter().map(|(_, s)| s.clone()));
    let mut digests = tce::ir_digests(&jobs).into_iter();
    let original = match digests.next() {
        Some(Ok(d)) => d,
        Some(Err(e)) => {
            notes.push(format!(
                "{file}: equivalence by optimised code skipped: the original does not compile with {how}: {e}"
            ));
            return tally;
        }
        None => return tally,
    };
    let rest: Vec<_> = digests.collect();
    for ((index, _), verdict) in picked.iter().zip(tce::verdicts(&original, &rest, kernels)) {
        tally.compared += 1;
        match verdict {
            Verdict::SameAsOriginal => {
                let r = &mut mutants[*index];
                r.status = Status::Equivalent;
                r.detail = format!("same optimised LLVM IR as the original ({how})");
                tally.equivalent += 1;
            }
            Verdict::SameAsMutant(j) => {
                let twin = mutants[picked[j].0].mutant.number;
                let r = &mut mutants[*index];
                r.detail = format!(
                    "{}; duplicate of mutant #{twin} (same optimised LLVM IR, {how})",
                    r.detail
                );
                tally.duplicates += 1;
            }
            Verdict::Different => {}
            Verdict::NotCompared(_) => tally.not_compared += 1,
        }
    }
    if tally.not_compared > 0 {
        notes.push(format!(
            "{file}: {} undetected mutant(s) could not be compared by optimised code ({how} did not compile their text); their verdicts stand",
            tally.not_compared
        ));
    }
    tally
}
