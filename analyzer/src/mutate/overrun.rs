//! The line that overran, for RUNTIME-ERROR mutants: a mutant that wrote into a guard zone (or
//! crashed the worker) is run once more, on its own program, under the bounds check of
//! `cltrap check` ([`crate::check::locate`]) on the test case that caught it (for a crash: the
//! first test case of each of the program's kernels), within one budget for the campaign.
//!
//! Why after the evaluation: the check runs on a simulator, far slower than the device, so
//! only the few mutants that overran pay for it, each once; TIMEOUTs (hangs) are left out.

use super::{CampaignReport, MutateOptions, Plan, Status};
use crate::check::locate::{overruns, Located, DEFAULT_BUDGET};
use crate::check::Variant;
use cltrap_capture::Capture;
use std::time::{Duration, Instant};

/// The launch a guard-zone detail names (`launch 3 under schedule seed 2: wrote out of bounds
/// of ... (caught in its guard zone)`), `None` for other details.
fn guard_launch(detail: &str) -> Option<u64> {
    if !detail.contains("(caught in its guard zone)") {
        return None;
    }
    detail
        .strip_prefix("launch ")?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Whether a RUNTIME-ERROR detail is a crash of the worker by a signal, in the words of the
/// campaign's lost units (`campaign::died`).
fn crashed(detail: &str) -> bool {
    detail.starts_with("the worker process died of ")
}

/// Names the overrunning line of every RUNTIME-ERROR mutant of this campaign that wrote out
/// of bounds or crashed, in its detail (`...; overran at program-x.cl:12:5: write out of
/// bounds, argument 0 (out), byte offset 256 of a 256-byte buffer, by ...`) and its
/// `overran` field. Notes what it could not do.
pub(super) fn locate(
    capture: &Capture,
    plans: &[Plan],
    report: &mut CampaignReport,
    opts: &MutateOptions,
) {
    let started = Instant::now();
    let mut notes = Vec::new();
    let mut unlocated = 0usize;
    'programs: for (plan, prog) in plans.iter().zip(report.programs.iter_mut()) {
        for m in prog.mutants.iter_mut() {
            if m.status != Status::RuntimeError || m.mutant.launch.is_some() {
                continue;
            }
            let ids: Vec<u64> = match guard_launch(&m.detail) {
                Some(id) => vec![id],
                None if crashed(&m.detail) => plan
                    .kernels
                    .values()
                    .filter_map(|ids| ids.first().copied())
                    .collect(),
                None => continue,
            };
            let left = DEFAULT_BUDGET.saturating_sub(started.elapsed());
            if left < Duration::from_secs(1) {
                unlocated += 1;
                continue;
            }
            let single = match cltrap_kernel::mutate::single(&plan.parsed, &m.mutant) {
                Ok(s) => s,
                Err(_) => continue,
            };
            let path = opts.out_dir.join("src").join(format!(
                "{}-m{}-check.cl",
                super::short(&plan.hash),
                m.mutant.number
            ));
            if let Err(e) = crate::campaign::journal::replace_file(&path, single.source.as_bytes())
            {
                notes.push(format!("{}: {e}", path.display()));
                break 'programs;
            }
            let variant = Variant {
                source: path,
                extra_options: format!("-D__CLTRAP_BUDGET={}u", opts.loop_budget),
                mutant_args: true,
            };
            match overruns(capture.dir(), capture, ids, Some(variant), left) {
                Ok(found) => {
                    if let Some(at) = found.values().find_map(|l| match l {
                        Located::At(at) => Some(at.clone()),
                        _ => None,
                    }) {
                        m.detail = format!("{}; overran at {at}", m.detail);
                        m.overran = Some(at);
                    }
                }
                Err(why) => {
                    notes.push(format!(
                        "the lines where RUNTIME-ERROR mutants overran were not looked for: {why}"
                    ));
                    break 'programs;
                }
            }
        }
    }
    if unlocated > 0 {
        notes.push(format!(
            "{unlocated} RUNTIME-ERROR mutant(s) not located: the bounds check's budget of {} s ran out",
            DEFAULT_BUDGET.as_secs()
        ));
    }
    report.notes.extend(notes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_zone_detail_names_its_launch() {
        assert_eq!(
            guard_launch("launch 12 under schedule seed 3: wrote out of bounds of argument 0 (out, uint*): up to 4 bytes past its end (caught in its guard zone)"),
            Some(12)
        );
        assert_eq!(guard_launch("launch 2: argument 0 differs"), None);
        // In the words a lost unit's result uses (a test on the wording itself: these once
        // drifted apart, and no crashed mutant was located).
        assert!(crashed(&super::super::campaign::died(
            "killed by signal 11"
        )));
        assert!(!crashed(&super::super::campaign::died(
            "exited with status 3"
        )));
    }
}
