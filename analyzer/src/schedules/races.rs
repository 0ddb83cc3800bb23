//! The race check after `replay --schedules`: the racing lines of the launches whose results
//! depend on the schedule, from `cltrap check --races` ([`crate::check::check`]).
//!
//! Why the native engine by default: it runs the instrumented kernel on the real device, in
//! seconds where Oclgrind's simulation of a long capture's launches ran out of its budget
//! after two of them. What it could not check (accesses it cannot attribute, checks it
//! switched off for a launch) must not read as "no race": a launch the native engine found
//! no race in but did not check whole is checked again on Oclgrind within what is left of
//! the budget, and when that cannot finish it is reported as incomplete.

use crate::check::finding::{Family, Kind};
use crate::check::{self, CheckOptions, CheckReport, Engine, LaunchCheck, LaunchStatus};
use cltrap_capture::Capture;
use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

/// The check of `ids` for races on `engine`, within `budget`, as `replay --schedules` runs it.
fn run(
    capture: &Capture,
    ids: Vec<u64>,
    engine: Engine,
    budget: Duration,
) -> Result<CheckReport, String> {
    let mut opts = CheckOptions::of(ids, vec![Family::Races], budget);
    opts.engine = engine;
    opts.budget = Some(budget);
    check::check(capture.dir(), capture, &opts, |line| {
        eprintln!("cltrap: race check: {line}")
    })
}

/// Race findings per launch id.
fn races_by_launch(report: &CheckReport) -> BTreeMap<u64, usize> {
    let mut by = BTreeMap::new();
    for f in report.findings.iter().filter(|f| f.kind == Kind::DataRace) {
        for id in &f.launches {
            *by.entry(*id).or_default() += 1;
        }
    }
    by
}

/// What the native engine left out of a launch it ran to the end: its unchecked accesses
/// and the checks it switched off, in words; `None` when it checked the launch whole.
fn left_out(l: &LaunchCheck) -> Option<String> {
    let n = l.unchecked_sites.unwrap_or(0);
    let mut parts = Vec::new();
    if n > 0 {
        let all = n + l.checked_sites.unwrap_or(0);
        parts.push(format!("{n} of {all} access(es) not checked"));
    }
    parts.extend(l.notes.iter().cloned());
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Why a launch's check did not end with a result, or `None` when it did.
fn unfinished(status: &LaunchStatus) -> Option<String> {
    match status {
        LaunchStatus::Checked { .. } => None,
        LaunchStatus::Skipped { reason } => Some(format!("skipped: {reason}")),
        LaunchStatus::TimedOut { seconds } => Some(format!("not finished within {seconds} s")),
        LaunchStatus::Failed { reason } => Some(format!("failed: {reason}")),
        LaunchStatus::EngineLimit { reason } => Some(reason.clone()),
    }
}

/// `check`'s report, less its exit status: the replay's own is the one that counts here.
fn render(report: &CheckReport) -> String {
    check::report::render(report).replace(" (see above; exit status 3)", " (see above)")
}

/// `N race(s) (engine)`.
fn found(n: usize, engine: &str) -> String {
    format!("{n} race(s) found ({engine})")
}

/// Runs the race check of `ids` (the launches whose results differ) on `engine` within
/// `budget` and prints its report, a second report for the launches checked again on
/// Oclgrind, and one verdict line per launch. Never fails the replay: when an engine is
/// missing or the budget runs out, it says so.
pub fn race_check(
    capture: &Capture,
    ids: Vec<u64>,
    budget: Duration,
    engine: Engine,
    out: &mut impl Write,
) {
    let started = Instant::now();
    let n = ids.len();
    let (name, other) = match engine {
        Engine::Native => (
            "native engine: the instrumented kernel on the device",
            "oclgrind",
        ),
        Engine::Oclgrind => ("Oclgrind", "native"),
    };
    let _ = writeln!(
        out,
        "\nrace check of the {n} launch(es) whose results differ ({name}, at most {} s in all; --race-engine {other} for the other engine, --no-race-check skips it):",
        budget.as_secs()
    );
    let _ = out.flush();
    let report = match run(capture, ids.clone(), engine, budget) {
        Ok(r) => r,
        Err(why) => {
            let _ = writeln!(out, "race check skipped: {why}");
            return;
        }
    };
    let _ = write!(out, "{}", render(&report));
    let races = races_by_launch(&report);
    // Launches the native engine ran to the end, found no race in and did not check whole.
    let partial: Vec<(u64, String)> = report
        .launches
        .iter()
        .filter(|l| l.engine == Engine::Native.name() && !races.contains_key(&l.id))
        .filter(|l| matches!(l.status, LaunchStatus::Checked { .. }))
        .filter_map(|l| left_out(l).map(|why| (l.id, why)))
        .collect();
    let mut again: Option<Result<CheckReport, String>> = None;
    if !partial.is_empty() {
        let left = budget.saturating_sub(started.elapsed());
        let ids: Vec<u64> = partial.iter().map(|(id, _)| *id).collect();
        let _ = writeln!(
            out,
            "\nthe native engine did not check {} launch(es) whole: checking {} again on Oclgrind (at most {} s left):",
            ids.len(),
            if ids.len() == 1 { "it" } else { "them" },
            left.as_secs()
        );
        let _ = out.flush();
        let r = if left < Duration::from_secs(1) {
            Err("the race check's time budget ran out".to_string())
        } else {
            run(capture, ids, Engine::Oclgrind, left)
        };
        match &r {
            Ok(r) => {
                let _ = write!(out, "{}", render(r));
            }
            Err(why) => {
                let _ = writeln!(out, "not checked on Oclgrind: {why}");
            }
        }
        again = Some(r);
    }
    let _ = writeln!(out);
    for l in &report.launches {
        let line = verdict(l, &races, &partial, again.as_ref());
        let _ = writeln!(out, "race check: launch {} {}: {line}", l.id, l.kernel);
    }
    let _ = out.flush();
}

/// One launch's race-check verdict in words. A launch is said to have no race only when
/// its engine checked all of it.
fn verdict(
    l: &LaunchCheck,
    races: &BTreeMap<u64, usize>,
    partial: &[(u64, String)],
    again: Option<&Result<CheckReport, String>>,
) -> String {
    if let Some(n) = races.get(&l.id) {
        return found(*n, l.engine);
    }
    if let Some(why) = unfinished(&l.status) {
        return format!("incomplete: not checked by {}: {why}", l.engine);
    }
    let Some((_, what)) = partial.iter().find(|(id, _)| *id == l.id) else {
        if l.incomplete() {
            // Oclgrind ran it with a check switched off (its notes).
            return format!(
                "no race found, but incomplete: {} ({})",
                l.notes.join("; "),
                l.engine
            );
        }
        return format!("no race found ({}, every access checked)", l.engine);
    };
    let native = format!("no race found by the native engine, but {what}");
    let fallback = match again {
        Some(Ok(r)) => r.launches.iter().find(|a| a.id == l.id).map(|a| {
            let races = races_by_launch(r);
            match (races.get(&a.id), unfinished(&a.status)) {
                (Some(n), _) => Ok(format!("on Oclgrind: {}", found(*n, a.engine))),
                (None, Some(why)) => Err(format!("Oclgrind: {why}")),
                (None, None) if a.incomplete() => Err(format!(
                    "Oclgrind found no race but did not check it whole either: {}",
                    a.notes.join("; ")
                )),
                (None, None) => Ok("on Oclgrind: no race found (every access checked)".into()),
            }
        }),
        Some(Err(why)) => Some(Err(format!("Oclgrind: {why}"))),
        None => None,
    };
    match fallback {
        Some(Ok(text)) => format!("{native}; {text}"),
        Some(Err(why)) => format!("incomplete: {native}; {why}"),
        None => format!("incomplete: {native}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(id: u64, engine: &'static str, unchecked: usize) -> LaunchCheck {
        LaunchCheck {
            id,
            kernel: "k".into(),
            status: LaunchStatus::Checked { millis: 1 },
            diagnostics: 0,
            engine,
            kernel_ns: None,
            baseline_kernel_ns: None,
            notes: vec![],
            checked_sites: Some(4 - unchecked),
            unchecked_sites: Some(unchecked),
        }
    }

    #[test]
    fn a_launch_not_checked_whole_is_never_said_to_be_free_of_races() {
        let none = BTreeMap::new();
        let whole = launch(0, "native", 0);
        assert_eq!(
            verdict(&whole, &none, &[], None),
            "no race found (native, every access checked)"
        );
        let part = launch(1, "native", 3);
        let why = left_out(&part).expect("something was left out");
        assert_eq!(why, "3 of 4 access(es) not checked");
        let partial = [(1, why)];
        for again in [None, Some(Err("no Oclgrind".to_string()))] {
            let v = verdict(&part, &none, &partial, again.as_ref());
            assert!(v.starts_with("incomplete: "), "{v}");
            assert!(v.contains("3 of 4 access(es) not checked"), "{v}");
        }
        // A race found is a race, whatever else was left out.
        let races = BTreeMap::from([(1, 2)]);
        assert_eq!(
            verdict(&part, &races, &partial, None),
            "2 race(s) found (native)"
        );
        // A check switched off is left out too.
        let mut off = launch(2, "native", 0);
        off.notes
            .push("__local races and uninitialised reads are not checked: x".into());
        assert!(left_out(&off).is_some());
    }
}
