//! Damaged launch lines for the commands that analyse a capture (`cover`, `check`,
//! `export`, `show --kernel`, `fuzz`, `mutate`): one damaged line of `launches.jsonl` must not hide the other
//! launches, so these commands open a capture keeping the damaged lines aside
//! ([`Capture::open_keeping_damaged`]), say each one once, work on every intact launch, and
//! end with exit 2 — as `list` and `replay` do.
//!
//! Exit status rule, the same for every command: a capture with a damaged launch line ends
//! with 2 whatever the analysis of the other launches found (findings, mismatches, an
//! incomplete check), since 2 is "the input could not be used whole" and a finding's status
//! on a damaged capture would claim more than was looked at.

use cltrap_capture::{Capture, DamagedLaunch};
use std::io::Write;

/// The exit status of a command on a capture with damaged launch lines.
pub const EXIT_DAMAGED: u8 = 2;

/// One sentence about a damaged line: `cltrap: line N of DIR/launches.jsonl (launch ID) is
/// damaged: WHY; it is left out of the WHAT, the other launches are analysed`. Why the full
/// path: the sentence must name the file even when several captures are analysed.
pub fn sentence(capture: &Capture, d: &DamagedLaunch, what: &str) -> String {
    format!(
        "{}; it is left out of the {what}, the other launches are {}",
        describe(capture, d),
        if what == "export" {
            "exported"
        } else {
            "analysed"
        }
    )
}

/// `line N of DIR/launches.jsonl (launch ID) is damaged: WHY`.
pub fn describe(capture: &Capture, d: &DamagedLaunch) -> String {
    let log = capture.dir().join(cltrap_capture::LAUNCHES_FILE);
    let mut s = format!("line {} of {}", d.line, log.display());
    if let Some(id) = d.id {
        s.push_str(&format!(" (launch {id})"));
    }
    s.push_str(&format!(" is damaged: {}", d.why));
    s
}

/// Tells every damaged launch line of `capture` once on stderr ([`sentence`]); returns how
/// many there are. `what` names what they are left out of (`coverage`, `check`, …).
pub fn report(capture: &Capture, what: &str) -> usize {
    for d in &capture.damaged {
        eprintln!("cltrap: {}", sentence(capture, d, what));
    }
    capture.damaged.len()
}

/// `code`, or [`EXIT_DAMAGED`] when `damaged` lines were left out (see the module's rule).
pub fn exit_code(code: u8, damaged: usize) -> u8 {
    if damaged > 0 {
        EXIT_DAMAGED
    } else {
        code
    }
}

/// The damaged line that launch `id` was, if it is one: a selection naming it is told so
/// instead of "no such launch".
pub fn line_of(capture: &Capture, id: u64) -> Option<&DamagedLaunch> {
    capture.damaged.iter().find(|d| d.id == Some(id))
}

/// `ids` without the launches whose lines are damaged (already reported by [`report`]);
/// `None` (every launch) stays `None`. An id that is neither a launch nor a damaged line is
/// kept, so the selection's own error names it. `Err` (one sentence) when every id selected
/// was a damaged line: nothing is left to work on.
pub fn drop_damaged(capture: &Capture, ids: Option<Vec<u64>>) -> Result<Option<Vec<u64>>, String> {
    let Some(ids) = ids else { return Ok(None) };
    let asked = ids.len();
    let kept: Vec<u64> = ids
        .into_iter()
        .filter(|id| line_of(capture, *id).is_none() || capture.launch(*id).is_ok())
        .collect();
    if kept.is_empty() && asked > 0 {
        return Err(format!(
            "every launch selected is a damaged line of {} (named above): nothing to analyse",
            capture.dir().join(cltrap_capture::LAUNCHES_FILE).display()
        ));
    }
    Ok(Some(kept))
}

/// An error sentence when nothing is left to work on: every line was damaged (`None` when
/// there are intact launches, or no damage).
pub fn nothing_left(capture: &Capture) -> Option<String> {
    (capture.launches.is_empty() && !capture.damaged.is_empty()).then(|| {
        format!(
            "{} holds no launch that is not damaged ({} damaged line(s) of {}): nothing to analyse",
            capture.dir().display(),
            capture.damaged.len(),
            cltrap_capture::LAUNCHES_FILE
        )
    })
}

/// The line under a report saying that damaged launch lines were left out of it.
pub fn note(out: &mut dyn Write, damaged: usize, done: &str) {
    if damaged > 0 {
        let _ = writeln!(
            out,
            "not {done}: {damaged} damaged line(s) of {} (named above on stderr); the results above are of the other launches",
            cltrap_capture::LAUNCHES_FILE
        );
    }
}
