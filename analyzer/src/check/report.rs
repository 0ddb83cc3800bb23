//! The terminal report of `cltrap check`: findings grouped by kernel, each shown on its source
//! lines the way rustc shows a diagnostic (line numbers, a caret under the column).

use super::finding::{Access, Finding, Kind};
use super::{CheckReport, LaunchStatus, EXIT_INCOMPLETE};
use std::fmt::Write;

/// `data race (3 occurrence(s) in launch 2)`: what a finding is, where it occurred, how often.
pub fn headline(f: &Finding) -> String {
    let what = match f.kind {
        Kind::DataRace => "data race".to_string(),
        Kind::InvalidRead => "read out of bounds".to_string(),
        Kind::InvalidWrite => "write out of bounds".to_string(),
        Kind::Uninitialized => "use of an uninitialised value".to_string(),
        Kind::BarrierDivergence => "barrier not reached by every work-item of the group".into(),
        Kind::ApiMisuse | Kind::Other => f.example.message.clone(),
    };
    let launches: Vec<String> = f.launches.iter().map(u64::to_string).collect();
    format!(
        "{what} ({} occurrence(s) in launch {})",
        f.count,
        launches.join(",")
    )
}

/// `error[data-race]: data race (...)`, rustc's first line of a diagnostic.
pub fn title_of(f: &Finding) -> String {
    format!("{}[{}]: {}", f.kind.level(), f.kind.rule_id(), headline(f))
}

/// The `file:line:col` label of a program's source.
pub fn source_name(program: &str) -> String {
    // A digest is ASCII; a forged one in a resumed journal may not be (no char boundary).
    let short: String = program.chars().take(12).collect();
    format!("program-{short}.cl")
}

/// Writes one source line with a caret under `a.column`, and `note` after the caret.
fn snippet(out: &mut String, source: Option<&str>, a: &Access, gutter: usize, note: &str) {
    let text = source
        .and_then(|s| s.lines().nth(a.line.saturating_sub(1) as usize))
        .map(str::to_string)
        .unwrap_or_else(|| a.code.clone());
    let pad = " ".repeat(gutter);
    let _ = writeln!(out, "{:>gutter$} | {}", a.line, text.trim_end());
    // Tabs keep their width under the caret.
    let lead: String = text
        .chars()
        .take(a.column.saturating_sub(1) as usize)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let _ = writeln!(out, "{pad} | {lead}^ {note}");
}

/// The words after the caret under an access: who made it, and what it touched.
pub fn note(f: &Finding, a: &Access, first: bool) -> String {
    match f.kind {
        Kind::DataRace => {
            let verb = if first {
                "first access"
            } else {
                "second access"
            };
            format!("{verb}, by {}", a.who())
        }
        Kind::InvalidRead | Kind::InvalidWrite => match &f.example.target {
            Some(t) => format!("{} by {}", t.describe(), a.who()),
            None => format!("by {}", a.who()),
        },
        Kind::BarrierDivergence => {
            let only = f.example.detail.first().cloned().unwrap_or_default();
            format!("{only} in {}", a.who())
        }
        _ => format!("by {}", a.who()),
    }
}

/// The whole report: per kernel its findings, then one line per launch that was not checked,
/// then a summary line.
pub fn render(report: &CheckReport) -> String {
    let mut out = String::new();
    let mut kernel: Option<&str> = None;
    for f in &report.findings {
        if kernel != Some(f.kernel.as_str()) {
            kernel = Some(f.kernel.as_str());
            let n = report
                .findings
                .iter()
                .filter(|g| g.kernel == f.kernel)
                .count();
            let _ = writeln!(out, "kernel {}: {n} finding(s)\n", f.kernel);
        }
        let _ = writeln!(out, "{}", title_of(f));
        let source = report.sources.get(&f.program).map(String::as_str);
        let accesses: Vec<&Access> = [&f.example.first, &f.example.second]
            .into_iter()
            .flatten()
            .collect();
        let gutter = accesses
            .iter()
            .map(|a| a.line.to_string().len())
            .max()
            .unwrap_or(1);
        let pad = " ".repeat(gutter);
        match accesses.first() {
            Some(a) => {
                let _ = writeln!(
                    out,
                    "{pad}--> {}:{}:{}",
                    source_name(&f.program),
                    a.line,
                    a.column
                );
                let _ = writeln!(out, "{pad} |");
                snippet(&mut out, source, a, gutter, &note(f, a, true));
                if let Some(b) = accesses.get(1) {
                    let _ = writeln!(out, "{pad} |");
                    let _ = writeln!(
                        out,
                        "{pad}::: {}:{}:{}",
                        source_name(&f.program),
                        b.line,
                        b.column
                    );
                    snippet(&mut out, source, b, gutter, &note(f, b, false));
                }
                let _ = writeln!(out, "{pad} |");
            }
            None => {
                let _ = writeln!(out, "{pad} = reported by {}\n", f.example.by);
                continue;
            }
        }
        let _ = writeln!(out, "{pad} = {}: {}\n", f.example.by, f.example.message);
    }
    for l in &report.launches {
        let why = match &l.status {
            LaunchStatus::Checked { .. } => continue,
            LaunchStatus::Skipped { reason } => format!("skipped: {reason}"),
            LaunchStatus::TimedOut { seconds } => format!(
                "not finished within the {seconds} s deadline (try --quick or a larger --deadline); {} diagnostic(s) before that are included",
                l.diagnostics
            ),
            LaunchStatus::Failed { reason } => format!("error: {reason}"),
            LaunchStatus::EngineLimit { reason } => format!("not checked: {reason}"),
        };
        let _ = writeln!(out, "launch {} {}: {why}", l.id, l.kernel);
    }
    native_notes(&mut out, report);
    let checked = report
        .launches
        .iter()
        .filter(|l| matches!(l.status, LaunchStatus::Checked { .. }))
        .count();
    if let Some(line) = access_summary(report) {
        let _ = writeln!(out, "{line}");
    }
    let incomplete = report.findings.is_empty() && report.exit_code() == EXIT_INCOMPLETE;
    let _ = writeln!(
        out,
        "checked {checked} of {} launch(es) on {}: {} finding(s){}",
        report.launches.len(),
        report.engine,
        report.findings.len(),
        if incomplete {
            " — incomplete: not everything was checked (see above; exit status 3)"
        } else {
            ""
        }
    );
    out
}

/// The kind of reason an access was not checked, for the summary's counts.
pub fn reason_class(why: &str) -> &'static str {
    if why.starts_with("in helper function") {
        "in helper functions"
    } else if why.starts_with("an image access") {
        "image reads and writes (checked by --engine oclgrind)"
    } else if why.contains("macro") {
        "written inside macros"
    } else if why.starts_with("a pointer handed to") {
        "handed to built-ins or outside functions"
    } else if why.contains("not known to point") || why.contains("not addressable") {
        "through pointers not attributed to an object"
    } else {
        "of types the pass cannot spell"
    }
}

/// `checked 412 of 430 accesses; 18 not checked: 10 in helper functions, 8 ...`, when the
/// native engine ran a kernel.
pub fn access_summary(report: &CheckReport) -> Option<String> {
    let a = report.accesses;
    if a.checked + a.not_checked == 0 {
        return None;
    }
    let mut line = format!(
        "checked {} of {} accesses",
        a.checked,
        a.checked + a.not_checked
    );
    if a.not_checked > 0 {
        let mut by: std::collections::BTreeMap<&str, usize> = Default::default();
        for n in &report.not_checked {
            *by.entry(reason_class(&n.at.why)).or_default() += n.accesses;
        }
        let parts: Vec<String> = by.iter().map(|(k, n)| format!("{n} {k}")).collect();
        line.push_str(&format!(
            "; {} not checked: {}",
            a.not_checked,
            parts.join(", ")
        ));
    }
    Some(line)
}

/// What the native engine did not see: accesses it could not attribute, checks it switched
/// off, and barrier divergence (Oclgrind's alone).
fn native_notes(out: &mut String, report: &CheckReport) {
    for n in &report.not_checked {
        let u = &n.at;
        let many = if n.accesses > 1 {
            format!(" ({} accesses)", n.accesses)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "not checked: line {}:{} in {}: {}{many}",
            u.line, u.column, u.function, u.why
        );
    }
    for l in &report.launches {
        for n in &l.notes {
            let _ = writeln!(out, "launch {} {}: {n}", l.id, l.kernel);
        }
    }
    if report.launches.iter().any(|l| l.engine == "native") {
        let _ = writeln!(
            out,
            "note: barrier divergence is checked by --engine oclgrind only"
        );
    }
}

#[cfg(test)]
mod tests {
    /// A program digest from a resumed journal may be anything: its label never panics.
    #[test]
    fn a_source_label_is_cut_on_characters() {
        assert_eq!(
            super::source_name("0123456789abcdef"),
            "program-0123456789ab.cl"
        );
        assert_eq!(
            super::source_name("aaaaaaaaaaaébbbb"),
            "program-aaaaaaaaaaaé.cl"
        );
        assert_eq!(super::source_name(""), "program-.cl");
    }
}
