//! The HTML report of `cltrap check` (`--html FILE`): one self-contained page, findings grouped
//! by kind and then by source location, each shown on its kernel source lines (both lines of a
//! race) with the work-items and groups involved, the counts, the engine and the launches.
//!
//! Why a page of its own: the terminal report is one finding after another; a page lets a
//! reader see at a glance which kinds occur where, and keeps the source context around each
//! line. It uses the one escaping rule of the `cover` and `mutate` reports ([`crate::html`])
//! and their look (sans-serif, bordered tables, monospace source with a line-number gutter).

use super::finding::{Access, Finding, Kind};
use super::report::{note, source_name, title_of};
use super::{CheckReport, LaunchStatus};
use crate::html::escape;
use std::collections::BTreeMap;
use std::fmt::Write;

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;max-width:80em}
table.sum{border-collapse:collapse;margin-bottom:1em}
table.sum td,table.sum th{border:1px solid #bbb;padding:2px 8px;text-align:left}
table.sum td.r{text-align:right}
div.finding{border:1px solid #ccc;border-left:4px solid #c03030;margin:0.6em 0 1.2em;padding:4px 10px}
div.finding.warning{border-left-color:#d08000}
div.finding h4{margin:4px 0;font-size:1em}
table.src{border-collapse:collapse;font-family:monospace;font-size:13px;margin:4px 0;width:100%;table-layout:fixed}
table.src td{padding:0 6px;white-space:pre;vertical-align:top}
td.n{color:#888;text-align:right;user-select:none;width:3em}
tr.at td{background:#f8d0d0} tr.caret td{color:#c03030;font-weight:bold}
td.file{color:#555;font-family:sans-serif;font-size:12px;padding-top:4px}
.note{color:#555} .ok{color:#2a8a2a} .bad{color:#c03030}
code{background:#f3f3f3;padding:0 3px}";

/// Lines of source shown before and after each access.
const CONTEXT: usize = 2;

/// A heading for a kind (plural, for the section).
fn kind_heading(k: &Kind) -> &'static str {
    match k {
        Kind::DataRace => "Data races",
        Kind::InvalidRead => "Reads out of bounds",
        Kind::InvalidWrite => "Writes out of bounds",
        Kind::Uninitialized => "Uses of uninitialised values",
        Kind::BarrierDivergence => "Divergent barriers",
        Kind::ApiMisuse => "API misuse",
        Kind::Other => "Other diagnostics",
    }
}

/// `program-xxx.cl:25:12`, or `program-xxx.cl` when the finding has no line.
fn location(f: &Finding) -> String {
    match &f.example.first {
        Some(a) => format!("{}:{}:{}", source_name(&f.program), a.line, a.column),
        None => source_name(&f.program),
    }
}

/// The source lines around the marked accesses (one table when they are close: both lines
/// of a race usually are), each marked line followed by a caret row under its column.
fn snippet(out: &mut String, source: Option<&str>, f: &Finding, marks: &[(&Access, String)]) {
    let lines: Vec<&str> = source.map(|s| s.lines().collect()).unwrap_or_default();
    let Some((first, _)) = marks.first() else {
        return;
    };
    let _ = writeln!(
        out,
        "<table class=\"src\"><tr><td class=\"n\"></td><td class=\"file\">{}:{}:{}</td></tr>",
        escape(&source_name(&f.program)),
        first.line,
        first.column
    );
    let at = |a: &Access| a.line.saturating_sub(1) as usize;
    let mut shown: Option<usize> = None;
    for (a, _) in marks {
        let i = at(a);
        let (from, to) = if i < lines.len() {
            (
                i.saturating_sub(CONTEXT),
                (i + CONTEXT).min(lines.len() - 1),
            )
        } else {
            (i, i)
        };
        let from = match shown {
            Some(last) if from <= last + 1 => last + 1,
            Some(_) => {
                out.push_str("<tr><td class=\"n\">&#8942;</td><td></td></tr>\n");
                from
            }
            None => from,
        };
        // A mark on a line already drawn (both accesses on one line) got its caret row there.
        if shown.is_some_and(|s| i <= s) {
            continue;
        }
        for j in from..=to.max(i) {
            let text = match lines.get(j) {
                Some(t) => *t,
                None if j == i => a.code.as_str(),
                None => "",
            };
            let class = if j == i { " class=\"at\"" } else { "" };
            let _ = writeln!(
                out,
                "<tr{class} data-line=\"{}\"><td class=\"n\">{}</td><td>{}</td></tr>",
                j + 1,
                j + 1,
                escape(text.trim_end())
            );
            if j == i {
                for (b, n) in marks.iter().filter(|(b, _)| at(b) == i) {
                    caret_row(out, text, b, n);
                }
            }
            // The next mark's line inside this range: stop before it, it is drawn with its own.
            if marks
                .iter()
                .any(|(b, _)| at(b) == j + 1 && at(b) != i && at(b) > i)
            {
                shown = Some(j);
                break;
            }
            shown = Some(j);
        }
    }
    out.push_str("</table>\n");
}

fn caret_row(out: &mut String, text: &str, a: &Access, note: &str) {
    let lead: String = text
        .chars()
        .take(a.column.saturating_sub(1) as usize)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let _ = writeln!(
        out,
        "<tr class=\"caret\"><td class=\"n\"></td><td>{}^ {}</td></tr>",
        escape(&lead),
        escape(note)
    );
}

fn finding(out: &mut String, report: &CheckReport, f: &Finding) {
    let accesses: Vec<&Access> = [&f.example.first, &f.example.second]
        .into_iter()
        .flatten()
        .collect();
    let lines: Vec<String> = accesses.iter().map(|a| a.line.to_string()).collect();
    let launches: Vec<String> = f.launches.iter().map(u64::to_string).collect();
    let _ = writeln!(
        out,
        "<div class=\"finding {}\" data-kind=\"{}\" data-kernel=\"{}\" data-lines=\"{}\" data-count=\"{}\" data-launches=\"{}\">",
        f.kind.level(),
        f.kind.rule_id(),
        escape(&f.kernel),
        lines.join(","),
        f.count,
        launches.join(",")
    );
    let _ = writeln!(
        out,
        "<h4>{} <span class=\"note\">in kernel <code>{}</code></span></h4>",
        escape(&title_of(f)),
        escape(&f.kernel)
    );
    let source = report.sources.get(&f.program).map(String::as_str);
    let mut marks: Vec<(&Access, String)> = accesses
        .iter()
        .enumerate()
        .map(|(i, a)| (*a, note(f, a, i == 0)))
        .collect();
    marks.sort_by_key(|(a, _)| (a.line, a.column));
    snippet(out, source, f, &marks);
    if let Some(t) = &f.example.target {
        let _ = writeln!(
            out,
            "<p>memory: {}{}</p>",
            escape(&t.describe()),
            t.size
                .map(|s| format!(", an access of {s} byte(s)"))
                .unwrap_or_default()
        );
    }
    // An API error's lines are its headline already.
    if f.kind != Kind::ApiMisuse {
        for d in &f.example.detail {
            let _ = writeln!(out, "<p>{}</p>", escape(d));
        }
    }
    if accesses.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"note\">reported by {}</p>\n</div>",
            escape(&f.example.by)
        );
    } else {
        let _ = writeln!(
            out,
            "<p class=\"note\">{}: {}</p>\n</div>",
            escape(&f.example.by),
            escape(&f.example.message)
        );
    }
}

fn launch_row(out: &mut String, l: &super::LaunchCheck) {
    let (class, status) = match &l.status {
        LaunchStatus::Checked { millis } => {
            ("ok", format!("checked in {:.1} s", *millis as f64 / 1000.0))
        }
        LaunchStatus::Skipped { reason } => ("note", format!("skipped: {reason}")),
        LaunchStatus::TimedOut { seconds } => (
            "bad",
            format!("not finished within the {seconds} s deadline (findings before that are kept)"),
        ),
        LaunchStatus::Failed { reason } => ("bad", format!("not checked: {reason}")),
        LaunchStatus::EngineLimit { reason } => ("note", format!("not checked: {reason}")),
    };
    let _ = writeln!(
        out,
        "<tr data-launch=\"{}\"><td class=\"r\">{}</td><td><code>{}</code></td><td class=\"{class}\">{}</td><td class=\"r\">{}</td></tr>",
        l.id,
        l.id,
        escape(&l.kernel),
        escape(&status),
        l.diagnostics
    );
}

/// The whole page.
pub fn render(report: &CheckReport) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>cltrap check</title><style>{STYLE}</style></head><body>\n<h1>cltrap check</h1>\n"
    );
    let checked = report
        .launches
        .iter()
        .filter(|l| matches!(l.status, LaunchStatus::Checked { .. }))
        .count();
    let _ = writeln!(
        out,
        "<p>engine <b>{}</b>; {checked} of {} launch(es) checked; <b class=\"{}\">{} finding(s)</b>.</p>",
        escape(report.engine),
        report.launches.len(),
        if report.findings.is_empty() { "ok" } else { "bad" },
        report.findings.len()
    );
    if let Some(line) = super::report::access_summary(report) {
        let _ = writeln!(
            out,
            "<p class=\"{}\" id=\"coverage\">{}{}</p>",
            if report.accesses.not_checked > 0 {
                "note"
            } else {
                "ok"
            },
            escape(&line),
            if report.accesses.not_checked > 0 {
                " (<a href=\"#not-checked\">listed below</a>)"
            } else {
                ""
            }
        );
    }
    if report.findings.is_empty() && report.exit_code() == super::EXIT_INCOMPLETE {
        out.push_str("<p class=\"note\"><b>Incomplete</b>: no finding in what was checked, but not everything was checked.</p>\n");
    }
    let mut by_kind: BTreeMap<&Kind, Vec<&Finding>> = BTreeMap::new();
    for f in &report.findings {
        by_kind.entry(&f.kind).or_default().push(f);
    }
    if !by_kind.is_empty() {
        out.push_str("<table class=\"sum\"><tr><th>kind</th><th>findings</th><th>occurrences</th><th>kernels</th></tr>\n");
        for (kind, fs) in &by_kind {
            let mut kernels: Vec<&str> = fs.iter().map(|f| f.kernel.as_str()).collect();
            kernels.dedup();
            kernels.sort_unstable();
            kernels.dedup();
            let _ = writeln!(
                out,
                "<tr><td><a href=\"#{0}\">{0}</a></td><td class=\"r\">{1}</td><td class=\"r\">{2}</td><td>{3}</td></tr>",
                kind.rule_id(),
                fs.len(),
                fs.iter().map(|f| f.count).sum::<usize>(),
                escape(&kernels.join(", "))
            );
        }
        out.push_str("</table>\n");
    }
    for (kind, fs) in &by_kind {
        let _ = writeln!(
            out,
            "<h2 id=\"{}\">{} ({})</h2>",
            kind.rule_id(),
            kind_heading(kind),
            fs.len()
        );
        // Within a kind, by source location (program, line, column of the first access).
        let mut by_place: BTreeMap<(String, u32, u32), Vec<&Finding>> = BTreeMap::new();
        for f in fs {
            let (l, c) = f
                .example
                .first
                .as_ref()
                .map_or((0, 0), |a| (a.line, a.column));
            by_place
                .entry((f.program.clone(), l, c))
                .or_default()
                .push(f);
        }
        for fs in by_place.values() {
            let _ = writeln!(out, "<h3>{}</h3>", escape(&location(fs[0])));
            for f in fs {
                finding(&mut out, report, f);
            }
        }
    }
    if !report.not_checked.is_empty() {
        let _ = writeln!(
            out,
            "<h2 id=\"not-checked\">Not checked ({})</h2>\n<table class=\"sum\"><tr><th>kernel</th><th>where</th><th>function</th><th>why</th></tr>",
            report.not_checked.len()
        );
        for n in &report.not_checked {
            let _ = writeln!(
                out,
                "<tr class=\"unchecked\"><td><code>{}</code></td><td>{}:{}:{}</td><td><code>{}</code></td><td>{}</td></tr>",
                escape(&n.kernel),
                escape(&super::report::source_name(&n.program)),
                n.at.line,
                n.at.column,
                escape(&n.at.function),
                escape(&n.at.why)
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("<h2 id=\"launches\">Launches</h2>\n<table class=\"sum\"><tr><th>id</th><th>kernel</th><th>status</th><th>diagnostics</th></tr>\n");
    for l in &report.launches {
        launch_row(&mut out, l);
    }
    out.push_str("</table>\n</body></html>\n");
    out
}
