//! A mutant's test cases in batches, one campaign unit per (mutant, batch), and the one rule
//! that merges the batches' verdicts back into the verdict of the sequential walk
//! ([`super::worker::Evaluator::evaluate`] stops at the first test case that decides).
//!
//! Why: the mutants no test case kills run every test case; on a large capture that is
//! seconds per mutant inside one unit, and those few long units land unevenly on the GPUs of
//! a campaign. Batches bound a unit to [`CASES_PER_UNIT`] test cases, whatever the devices,
//! workers or shards, so the split (and the unit ids) is the same in every process that
//! prepares the campaign: its shards, `cltrap merge` and `--resume`.
//!
//! Only a job whose program is kept between jobs (`Job::cache`: the schema) is split; a job
//! that builds its own program (one mutant) would compile it again in every batch. A job of at
//! most one batch keeps the unit id `mutant-<program>-<n>`; a split one has the ids
//! `mutant-<program>-<n>-cases-<b>` (`b` from 0, in the order of the job's test cases).
//!
//! The merge ([`merge`]): the verdict of the first batch, in batch order, that is decisive
//! (the walk would have stopped there: KILLED, TIMEOUT, RUNTIME-ERROR, COMPILE-ERROR), with its
//! detail; else the first UNDECIDED; else SURVIVED when some batch ran a test case; else
//! IGNORED (no test case admits the mutant's launch change). A decisive batch decides only
//! when every earlier batch has a result: an earlier one could have decided first. `runs` is
//! the sum over the batches up to the deciding one, as the walk counts them.
//!
//! The later batches of a mutant that a batch decided are pointless: the campaign says so
//! ([`crate::campaign::Campaign::superseded`]) and the runner drops those not handed out yet.
//! Only a decisive batch supersedes, and only the batches after it, so every batch before the
//! first decisive one always runs and the verdict is the walk's, whatever else ran. Units go
//! out batch-major ([`batch_major`]: every mutant's first batch, then every second batch, …),
//! so by the time a mutant's next batch is handed out its earlier one has usually finished,
//! and a mutant killed by its first batch costs one unit, not one per batch.

use super::worker::{Job, JobResult};
use super::Status;

/// Test cases per unit of a split job. 64: on the measured GPU campaign (1 198 test cases, a
/// few milliseconds each) a surviving mutant's walk took seconds in one unit; in batches of
/// 64 a unit lasts a fraction of a second, so the last units of a campaign leave the other
/// GPUs idle that long at most, and a survivor spreads over all of them. A mutant killed by
/// the first test case of each batch (most are) pays one run and one unit's overhead per
/// further batch, about a 64th of the walk it would make if nothing killed it; a smaller
/// batch would multiply those units for little balance gained.
pub const CASES_PER_UNIT: usize = 64;

/// For tests only: the number of test cases per unit instead of [`CASES_PER_UNIT`] (a
/// positive integer), so a small capture splits its mutants. Every process of one campaign
/// (shards, merge, resume) must see the same value: it decides the unit ids.
pub const CASES_PER_UNIT_KNOB: &str = "CLTRAP_TEST_CASES_PER_UNIT";

/// The test cases per unit of this process: [`CASES_PER_UNIT_KNOB`] when it holds a positive
/// integer, else [`CASES_PER_UNIT`].
pub fn cases_per_unit() -> usize {
    std::env::var(CASES_PER_UNIT_KNOB)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(CASES_PER_UNIT)
}

/// `job` as the jobs of its units, in batch order: one per `per_unit` test cases when the job
/// keeps its program between jobs and has more test cases than that, else `job` itself. Each
/// batch builds what the whole job builds (`Job::permuted_builds`), so a program that does
/// not compile is every batch's COMPILE-ERROR, as it is the whole walk's.
pub fn split(job: &Job, per_unit: usize) -> Vec<Job> {
    let per_unit = per_unit.max(1);
    if !job.cache || job.tests.len() <= per_unit {
        return vec![job.clone()];
    }
    // Everything but the test cases, cloned once per batch without them.
    let shell = Job {
        tests: Vec::new(),
        permuted_builds: job.permuted_builds || job.tests.iter().any(|t| !t.seeds.is_empty()),
        ..job.clone()
    };
    job.tests
        .chunks(per_unit)
        .map(|tests| Job {
            tests: tests.to_vec(),
            ..shell.clone()
        })
        .collect()
}

/// The unit id of batch `b` of the mutant `number` of program `pi`, in a job of `batches`
/// batches (one batch: the id of an unsplit job).
pub fn unit_id(pi: usize, number: u32, b: usize, batches: usize) -> String {
    if batches <= 1 {
        format!("mutant-{pi}-{number}")
    } else {
        format!("mutant-{pi}-{number}-cases-{b}")
    }
}

/// Units per mutant (each mutant's batches in batch order) in the order they are handed out:
/// every mutant's batch 0 in mutant order, then every batch 1, and so on.
pub fn batch_major<T>(per_mutant: Vec<Vec<T>>) -> Vec<T> {
    let total = per_mutant.iter().map(Vec::len).sum();
    let mut iters: Vec<_> = per_mutant.into_iter().map(Vec::into_iter).collect();
    let mut out = Vec::with_capacity(total);
    while out.len() < total {
        for it in &mut iters {
            if let Some(u) = it.next() {
                out.push(u);
            }
        }
    }
    out
}

/// Whether the sequential walk stops at a test case with this verdict, so that no later test
/// case can change it.
pub fn decisive(status: Status) -> bool {
    match status {
        Status::Killed | Status::Timeout | Status::RuntimeError | Status::CompileError => true,
        // The walk goes on past a test case that noticed nothing, that killed in only some
        // repeats, or whose launch the mutant's launch change does not admit.
        Status::Survived | Status::Undecided | Status::Ignored => false,
        // Decided before any run, never a unit's verdict: should a journal hold one, it ends
        // the walk like any other verdict the worker does not go on from.
        Status::NoCoverage | Status::Equivalent => true,
    }
}

/// The verdict of a mutant from its batches' results in batch order (`None`: no result for
/// that batch — not run yet, or interrupted), as the sequential walk over all its test cases
/// gives it; `None` when the missing batches could still change it.
pub fn merge(batches: &[Option<JobResult>]) -> Option<JobResult> {
    // Up to the deciding batch: the batches after it may or may not have run.
    let upto = batches
        .iter()
        .position(|b| b.as_ref().is_some_and(|r| decisive(r.status)))
        .map_or(batches.len(), |d| d + 1);
    let runs = batches[..upto].iter().flatten().map(|r| r.runs).sum();
    let first = |status: Status| {
        batches
            .iter()
            .flatten()
            .find(|r| r.status == status)
            .map(|r| JobResult {
                status,
                detail: r.detail.clone(),
                runs,
            })
    };
    for b in batches {
        match b {
            None => return None,
            Some(r) if decisive(r.status) => return Some(JobResult { runs, ..r.clone() }),
            Some(_) => {}
        }
    }
    first(Status::Undecided)
        .or_else(|| first(Status::Survived))
        .or_else(|| first(Status::Ignored))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutate::worker::TestRef;
    use std::collections::BTreeMap;

    fn r(status: Status, detail: &str, runs: u32) -> Option<JobResult> {
        Some(JobResult {
            status,
            detail: detail.into(),
            runs,
        })
    }

    fn verdict(batches: &[Option<JobResult>]) -> Option<(Status, String, u32)> {
        merge(batches).map(|r| (r.status, r.detail, r.runs))
    }

    fn v(status: Status, detail: &str, runs: u32) -> Option<(Status, String, u32)> {
        Some((status, detail.into(), runs))
    }

    const IGNORED: &str = "the change is not legal for any launch of the suite";

    #[test]
    fn one_batch_is_its_own_verdict() {
        for s in [
            Status::Killed,
            Status::Survived,
            Status::Timeout,
            Status::RuntimeError,
            Status::CompileError,
            Status::Undecided,
            Status::Ignored,
        ] {
            assert_eq!(verdict(&[r(s, "d", 3)]), v(s, "d", 3), "{s:?}");
        }
    }

    #[test]
    fn the_first_decisive_batch_decides_with_its_detail() {
        for s in [
            Status::Killed,
            Status::Timeout,
            Status::RuntimeError,
            Status::CompileError,
        ] {
            let b = [
                r(Status::Survived, "no test case noticed it", 64),
                r(s, "launch 70: first", 2),
                r(Status::Killed, "launch 130: later", 1),
            ];
            // The runs of the batches after the deciding one are not counted: they may
            // have been dropped before they ran.
            assert_eq!(verdict(&b), v(s, "launch 70: first", 66), "{s:?}");
            assert_eq!(verdict(&b[..2]), verdict(&b), "{s:?}");
            assert_eq!(
                verdict(&[b[0].clone(), b[1].clone(), None]),
                verdict(&b),
                "{s:?}"
            );
        }
        let b = [
            r(
                Status::RuntimeError,
                "launch 3: caught in its guard zone",
                4,
            ),
            r(Status::Killed, "launch 64: x", 1),
        ];
        assert_eq!(
            verdict(&b),
            v(
                Status::RuntimeError,
                "launch 3: caught in its guard zone",
                4
            )
        );
    }

    #[test]
    fn units_go_out_batch_major() {
        let per_mutant = vec![vec!["a0", "a1", "a2"], vec!["b0"], vec!["c0", "c1"]];
        assert_eq!(
            batch_major(per_mutant),
            ["a0", "b0", "c0", "a1", "c1", "a2"]
        );
        assert!(batch_major(Vec::<Vec<u8>>::new()).is_empty());
    }

    #[test]
    fn undecided_then_killed_is_killed() {
        let b = [
            r(
                Status::Undecided,
                "killed in 1 of 3 repeats (launch 2: x)",
                192,
            ),
            r(Status::Killed, "launch 80: y", 3),
        ];
        assert_eq!(verdict(&b), v(Status::Killed, "launch 80: y", 195));
        let b = [
            r(
                Status::Undecided,
                "killed in 1 of 3 repeats (launch 2: x)",
                192,
            ),
            r(Status::Timeout, "launch 80: watchdog", 1),
        ];
        assert_eq!(verdict(&b), v(Status::Timeout, "launch 80: watchdog", 193));
    }

    #[test]
    fn without_a_decisive_batch_the_first_undecided_then_survived_then_ignored() {
        let b = [
            r(Status::Survived, "no test case noticed it", 64),
            r(Status::Undecided, "first undecided", 64),
            r(Status::Undecided, "second undecided", 64),
        ];
        assert_eq!(verdict(&b), v(Status::Undecided, "first undecided", 192));
        // A batch whose launches all refuse the launch change says nothing.
        let b = [
            r(Status::Ignored, IGNORED, 0),
            r(Status::Survived, "no test case noticed it", 10),
            r(Status::Ignored, IGNORED, 0),
        ];
        assert_eq!(
            verdict(&b),
            v(Status::Survived, "no test case noticed it", 10)
        );
        let b = [
            r(Status::Ignored, IGNORED, 0),
            r(Status::Ignored, IGNORED, 0),
        ];
        assert_eq!(verdict(&b), v(Status::Ignored, IGNORED, 0));
    }

    #[test]
    fn a_lost_batch_is_that_batchs_verdict() {
        // `Campaign::lost` makes a crash RUNTIME-ERROR and a hang TIMEOUT, with runs 0.
        let b = [
            r(Status::Survived, "no test case noticed it", 64),
            r(
                Status::RuntimeError,
                "the worker process died of SIGSEGV (11)",
                0,
            ),
        ];
        assert_eq!(
            verdict(&b),
            v(
                Status::RuntimeError,
                "the worker process died of SIGSEGV (11)",
                64
            )
        );
        let b = [
            r(Status::Killed, "launch 1: z", 1),
            r(Status::Timeout, "a kernel run missed its deadline", 0),
        ];
        assert_eq!(verdict(&b), v(Status::Killed, "launch 1: z", 1));
    }

    #[test]
    fn missing_batches_decide_only_after_every_earlier_batch() {
        // Decided: every batch before the decisive one has a result.
        let b = [
            r(Status::Survived, "no test case noticed it", 64),
            r(Status::Killed, "launch 70: k", 1),
            None,
        ];
        assert_eq!(verdict(&b), v(Status::Killed, "launch 70: k", 65));
        let b = [r(Status::Killed, "launch 0: k", 1), None, None];
        assert_eq!(verdict(&b), v(Status::Killed, "launch 0: k", 1));
        // Not decided: an earlier batch could still decide first, or a later one could kill.
        assert_eq!(verdict(&[None, r(Status::Killed, "launch 70: k", 1)]), None);
        assert_eq!(
            verdict(&[
                r(Status::Undecided, "u", 64),
                None,
                r(Status::Killed, "k", 1)
            ]),
            None
        );
        assert_eq!(verdict(&[r(Status::Survived, "s", 64), None]), None);
        assert_eq!(verdict(&[r(Status::Undecided, "u", 64), None]), None);
        assert_eq!(verdict(&[r(Status::Ignored, IGNORED, 0), None]), None);
        assert_eq!(verdict(&[None, None]), None);
        assert_eq!(verdict(&[]), None);
    }

    fn job(cache: bool, tests: usize, seeded_at: Option<usize>) -> Job {
        Job {
            capture: "c".into(),
            program: "p".into(),
            source: "s.cl".into(),
            permuted: Some("s-permuted.cl".into()),
            extra_options: String::new(),
            cache,
            mutant: 7,
            kernel_names: BTreeMap::new(),
            reference: "s.cl".into(),
            reference_permuted: None,
            barrier_loops: false,
            launch: None,
            tests: (0..tests as u64)
                .map(|launch| TestRef {
                    launch,
                    seeds: if Some(launch as usize) == seeded_at {
                        vec![3]
                    } else {
                        vec![]
                    },
                    unguarded: false,
                    derived: BTreeMap::new(),
                })
                .collect(),
            repeats: 1,
            ulp: 0,
            permuted_builds: false,
        }
    }

    #[test]
    fn only_a_schema_job_of_more_than_one_batch_is_split_in_order() {
        assert_eq!(split(&job(true, 64, None), 64).len(), 1);
        assert_eq!(
            split(&job(false, 200, None), 64).len(),
            1,
            "a one-mutant program"
        );
        let parts = split(&job(true, 130, None), 64);
        let sizes: Vec<usize> = parts.iter().map(|j| j.tests.len()).collect();
        assert_eq!(sizes, [64, 64, 2]);
        let launches: Vec<u64> = parts
            .iter()
            .flat_map(|j| j.tests.iter().map(|t| t.launch))
            .collect();
        assert_eq!(launches, (0..130).collect::<Vec<u64>>());
        assert!(parts.iter().all(|j| !j.permuted_builds));
        // One seeded test case: every batch builds the permuted program.
        let parts = split(&job(true, 130, Some(100)), 64);
        assert!(parts.iter().all(|j| j.permuted_builds));
        assert_eq!(unit_id(1, 7, 0, 1), "mutant-1-7");
        assert_eq!(unit_id(1, 7, 2, 3), "mutant-1-7-cases-2");
    }
}
