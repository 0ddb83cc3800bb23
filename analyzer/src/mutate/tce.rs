//! EQUIVALENT and duplicate mutants by Trivial Compiler Equivalence (`cltrap_kernel::tce`):
//! after the suite has run, each mutant it could not tell apart from the original (SURVIVED)
//! or never reached (NO-COVERAGE) is compiled by clang at -O2 and its optimised code compared,
//! per launched kernel, with the original's and with the other such mutants'. Both kinds are
//! EQUIVALENT (left out of the score): the same code as the original, or as an earlier
//! undetected mutant (a duplicate; the earlier one stands for both). Duplicates of detected
//! mutants are not looked for: those are never compiled.
//!
//! Why only those: a detected mutant (KILLED, TIMEOUT, RUNTIME-ERROR, UNDECIDED) behaves
//! observably differently, so it cannot be equivalent, and compiling it would cost a clang run
//! for nothing; the score's denominator only changes through the undetected ones. Why after
//! the run rather than before: it keeps the per-mutant cost of the campaign a kernel run for
//! every mutant the suite kills, which is most of them in a useful suite.

use super::{MutantResult, Status};
use cltrap_kernel::tce::{self, TceSource, Verdict};
use cltrap_kernel::Program;

/// What the comparison decided for one program (for notes and `--timing`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TceTally {
    /// Mutants compiled and compared.
    pub compared: u32,
    /// Marked EQUIVALENT: same optimised code as the original.
    pub equivalent: u32,
    /// Marked EQUIVALENT: same optimised code as an earlier undetected mutant (the detail
    /// says which).
    pub duplicates: u32,
    /// Compared mutants clang could not compile or compare.
    pub not_compared: u32,
}

/// Whether TCE has anything to decide for a mutant with this status.
fn judged(s: Status) -> bool {
    matches!(s, Status::Survived | Status::NoCoverage)
}

/// Compares the undetected mutants of one program with the original by their optimised code,
/// for the launched `kernels` (their helpers included): the same code as the original, or as
/// an earlier undetected mutant ("duplicate of #N"), turns a mutant EQUIVALENT.
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
    let original = TceSource::new(program.source.clone(), build_options);
    let picked: Vec<(usize, TceSource)> = mutants
        .iter()
        .enumerate()
        .filter(|(_, r)| judged(r.status))
        .filter_map(|(i, r)| {
            tce::mutant_source(program, &r.mutant, &original.options).map(|s| (i, s))
        })
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
    let mut jobs = vec![original];
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
                // The EQUIVALENT covers "the same code as another mutant" too: a
                // duplicate adds nothing the first one does not already test, so it is left
                // out of the score and the first one stands for both.
                let twin = mutants[picked[j].0].mutant.number;
                let r = &mut mutants[*index];
                r.status = Status::Equivalent;
                r.detail = format!(
                    "duplicate of mutant #{twin}: the same optimised LLVM IR ({how}); counted once"
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

#[cfg(test)]
mod tests {
    use super::*;
    use cltrap_kernel::mutate::{find_mutants, MutateOptions, Operator};

    fn survivor(m: cltrap_kernel::mutate::Mutant) -> MutantResult {
        MutantResult {
            mutant: m,
            status: Status::Survived,
            detail: "no test case noticed it".into(),
            own_program: false,
            overran: None,
            untested: false,
        }
    }

    /// Real clang on the kernel crate's TCE fixture, with every mutant of line 10's loop
    /// taken as a survivor: `k < 4` → `0` and `<` → `>=` both skip the loop (one counted, the
    /// other a duplicate), `k < 4` → `1` differs from both; killed mutants are left alone.
    #[test]
    fn duplicates_and_equivalents_among_survivors_leave_the_score_killed_ones_are_not_compiled() {
        let src = include_str!("../../../kernel/tests/kernels/tce_equivalent.cl");
        let p = cltrap_kernel::parse_program(src, "").expect("fixture parses");
        let mut results: Vec<MutantResult> = find_mutants(&p, &MutateOptions::default())
            .into_iter()
            .filter(|m| m.line == 10 || m.line == 8)
            .map(survivor)
            .collect();
        let pos = |rs: &[MutantResult], op: Operator, original: &str, replacement: &str| {
            rs.iter()
                .position(|r| {
                    r.mutant.operator == op
                        && r.mutant.original == original
                        && r.mutant.replacement == replacement
                })
                .unwrap_or_else(|| panic!("no {op:?} {original} -> {replacement}"))
        };
        let never = pos(&results, Operator::Condition, "k < 4", "0");
        let negated = pos(&results, Operator::RelationalNegation, "<", ">=");
        let dead = pos(&results, Operator::Arithmetic, "*", "/");
        let killed = pos(&results, Operator::Condition, "k < 4", "1");
        results[killed].status = Status::Killed;
        let mut notes = Vec::new();
        let tally = judge(
            &p,
            "",
            &["tce_equivalent".to_string()],
            "t.cl",
            &mut results,
            &mut notes,
        );
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(results[never].status, Status::Survived);
        assert_eq!(results[negated].status, Status::Equivalent);
        let number = results[never].mutant.number;
        assert!(
            results[negated].detail.starts_with(&format!(
                "duplicate of mutant #{number}: the same optimised"
            )),
            "{}",
            results[negated].detail
        );
        // `int scratch = a * b;` is a dead store: any change to it is the original's code.
        assert_eq!(results[dead].status, Status::Equivalent);
        assert!(results[dead].detail.contains("as the original"));
        assert_eq!(results[killed].status, Status::Killed);
        assert!(tally.duplicates >= 1 && tally.equivalent >= 1, "{tally:?}");
        assert_eq!(
            tally.compared as usize,
            results.len() - 1,
            "every survivor compared, the killed one not"
        );
    }
}
