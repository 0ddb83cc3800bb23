//! Reports of a campaign: the terminal tables (per kernel and per operator) with the surviving
//! mutants as unified diffs, the mutation-testing-report-schema JSON (Stryker's format, so
//! its `mutation-testing-elements` viewer and dashboards read it), and a self-contained HTML
//! page (no scripts or network needed to view it).

use super::{CampaignReport, MutantResult, ProgramResult, Status};
use crate::html::escape;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Counts of one row of a table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// All mutants.
    pub all: u32,
    /// Per status.
    pub by_status: BTreeMap<Status, u32>,
    /// Mutants whose code some test case's kernel runs (see `MutantResult::untested`).
    pub tested: u32,
}

impl Counts {
    fn add(&mut self, m: &MutantResult) {
        self.all += 1;
        *self.by_status.entry(m.status).or_default() += 1;
        self.tested += u32::from(!m.untested);
    }

    /// Mutants of one status.
    pub fn get(&self, s: Status) -> u32 {
        self.by_status.get(&s).copied().unwrap_or(0)
    }

    /// Detected (killed, timeout, runtime error).
    pub fn detected(&self) -> u32 {
        self.by_status
            .iter()
            .filter(|(s, _)| s.detected())
            .map(|(_, n)| n)
            .sum()
    }

    /// The denominator: all − equivalent − compile errors (− ignored launch changes).
    pub fn valid(&self) -> u32 {
        self.all
            - self
                .by_status
                .iter()
                .filter(|(s, _)| s.excluded())
                .map(|(_, n)| n)
                .sum::<u32>()
    }

    /// Mutation score in percent, `None` when nothing counts or no test case runs any of
    /// the row's code (a score of a suite that does not exist would read as a weak one).
    pub fn score(&self) -> Option<f64> {
        let v = self.valid();
        (v > 0 && self.tested > 0).then(|| 100.0 * f64::from(self.detected()) / f64::from(v))
    }
}

/// Counts per kernel (the function a mutant is in) and per operator.
pub fn tables(r: &CampaignReport) -> (BTreeMap<String, Counts>, BTreeMap<String, Counts>) {
    let mut by_kernel: BTreeMap<String, Counts> = BTreeMap::new();
    let mut by_op: BTreeMap<String, Counts> = BTreeMap::new();
    for p in &r.programs {
        for m in &p.mutants {
            by_kernel
                .entry(m.mutant.function.clone())
                .or_default()
                .add(m);
            by_op
                .entry(m.mutant.operator.name().to_string())
                .or_default()
                .add(m);
        }
    }
    (by_kernel, by_op)
}

/// Notes on kernels whose every counted mutant (two or more) is TIMEOUT: a suite does not
/// detect every change to a kernel by making it slow, so such a row more likely says the
/// deadline was too short for the driver (a long lazy compile, a loaded machine) than that
/// the suite is strong; its 100% score is not to be trusted.
pub fn all_timeout_notes(r: &CampaignReport, deadline: std::time::Duration) -> Vec<String> {
    let (by_kernel, _) = tables(r);
    by_kernel
        .iter()
        .filter(|(_, c)| c.valid() >= 2 && c.get(Status::Timeout) == c.valid())
        .map(|(k, c)| {
            format!(
                "suspicious: every one of the {} mutants of kernel {k} is TIMEOUT (deadline {} ms per run); its score says nothing about the suite. Run again with a longer --timeout-ms",
                c.valid(),
                deadline.as_millis()
            )
        })
        .collect()
}

const COLUMNS: [Status; 9] = [
    Status::Killed,
    Status::Survived,
    Status::NoCoverage,
    Status::Timeout,
    Status::RuntimeError,
    Status::CompileError,
    Status::Undecided,
    Status::Equivalent,
    Status::Ignored,
];

fn table(out: &mut String, title: &str, rows: &BTreeMap<String, Counts>) {
    let w = rows
        .keys()
        .map(String::len)
        .max()
        .unwrap_or(0)
        .max(title.len());
    let _ = write!(out, "{title:<w$}  {:>7}", "mutants");
    for c in COLUMNS {
        let _ = write!(out, "  {:>w2$}", c.label(), w2 = c.label().len());
    }
    let _ = writeln!(out, "  {:>6}", "score");
    let mut total = Counts::default();
    for (name, c) in rows {
        row(out, name, c, w);
        total.all += c.all;
        total.tested += c.tested;
        for (s, n) in &c.by_status {
            *total.by_status.entry(*s).or_default() += n;
        }
    }
    row(out, "total", &total, w);
}

fn row(out: &mut String, name: &str, c: &Counts, w: usize) {
    let _ = write!(out, "{name:<w$}  {:>7}", c.all);
    for s in COLUMNS {
        let _ = write!(out, "  {:>w2$}", c.get(s), w2 = s.label().len());
    }
    match c.score() {
        Some(s) => {
            let _ = writeln!(out, "  {s:>5.1}%");
        }
        None => {
            let _ = writeln!(out, "  {:>6}", "-");
        }
    }
}

/// A unified diff (one hunk, one line of context) of a mutant against the original source.
pub fn diff(p: &ProgramResult, m: &MutantResult) -> String {
    let file = &p.file;
    let mut out = format!(
        "--- a/{file}\n+++ b/{file} (mutant {} #{}, {})\n",
        m.mutant.id, m.mutant.number, m.mutant.operator
    );
    if m.mutant.launch.is_some() {
        let _ = writeln!(
            out,
            "@@ launch of {} @@\n {}",
            m.mutant.function, m.mutant.replacement
        );
        return out;
    }
    let lines: Vec<&str> = p.source.split('\n').collect();
    let first = m.mutant.line.saturating_sub(1) as usize;
    let last = (m.mutant.end_line.saturating_sub(1) as usize).min(lines.len().saturating_sub(1));
    let line_start: usize = lines[..first].iter().map(|l| l.len() + 1).sum();
    let line_end: usize = line_start
        + lines[first..=last]
            .iter()
            .map(|l| l.len() + 1)
            .sum::<usize>()
            .saturating_sub(1);
    let (s, e) = (m.mutant.start as usize, m.mutant.end as usize);
    let (Some(a), Some(b)) = (
        p.source.get(line_start..s),
        p.source.get(e..line_end.min(p.source.len())),
    ) else {
        return out;
    };
    let new_text = format!("{a}{}{b}", m.mutant.replacement);
    let old: Vec<&str> = lines[first..=last].to_vec();
    let new: Vec<&str> = new_text.split('\n').collect();
    let ctx_before = first.saturating_sub(1);
    let ctx_after = (last + 1).min(lines.len());
    let before: Vec<&str> = lines[ctx_before..first].to_vec();
    let after: Vec<&str> = lines[last + 1..(ctx_after + 1).min(lines.len())].to_vec();
    let _ = writeln!(
        out,
        "@@ -{},{} +{},{} @@",
        ctx_before + 1,
        before.len() + old.len() + after.len(),
        ctx_before + 1,
        before.len() + new.len() + after.len()
    );
    for l in &before {
        let _ = writeln!(out, " {l}");
    }
    for l in &old {
        let _ = writeln!(out, "-{l}");
    }
    for l in &new {
        let _ = writeln!(out, "+{l}");
    }
    for l in &after {
        let _ = writeln!(out, " {l}");
    }
    out
}

/// The terminal report: notes, tables per kernel and per operator, survivors as diffs.
pub fn terminal(r: &CampaignReport) -> String {
    let mut out = String::new();
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    let (by_kernel, by_op) = tables(r);
    if !r.notes.is_empty() {
        out.push('\n');
    }
    table(&mut out, "kernel", &by_kernel);
    out.push('\n');
    table(&mut out, "operator", &by_op);
    let _ = writeln!(
        out,
        "\nscore = (KILLED + TIMEOUT + RUNTIME-ERROR) / (mutants - EQUIVALENT - COMPILE-ERROR - IGNORED)"
    );
    let _ = writeln!(out, "{}", not_covered(r));
    let survivors: Vec<(&ProgramResult, &MutantResult)> = r
        .programs
        .iter()
        .flat_map(|p| p.mutants.iter().map(move |m| (p, m)))
        .filter(|(_, m)| matches!(m.status, Status::Survived | Status::Undecided))
        .collect();
    let overran: Vec<(&ProgramResult, &MutantResult)> = r
        .programs
        .iter()
        .flat_map(|p| p.mutants.iter().map(move |m| (p, m)))
        .filter(|(_, m)| m.overran.is_some())
        .collect();
    if !overran.is_empty() {
        let _ = writeln!(
            out,
            "\nmutants that overran a buffer (bounds check on Oclgrind):"
        );
        for (p, m) in overran {
            if let Some(at) = &m.overran {
                let _ = writeln!(
                    out,
                    "{} {}:{}:{} {}: overran at {at}",
                    m.status.label(),
                    p.file,
                    m.mutant.line,
                    m.mutant.col,
                    m.mutant.operator
                );
            }
        }
    }
    if !survivors.is_empty() {
        let _ = writeln!(out, "\nsurviving mutants:");
        for (p, m) in survivors {
            let _ = writeln!(
                out,
                "\n{} {}:{}:{} {} ({})",
                m.status.label(),
                p.file,
                m.mutant.line,
                m.mutant.col,
                m.mutant.operator,
                m.detail
            );
            out.push_str(&diff(p, m));
        }
    }
    out
}

/// One line on what the campaign did not look at: launches that are not test cases, mutants
/// never run (NO-COVERAGE) and those no test case reaches at all, mutants that could not be
/// judged (compile errors). A score says nothing about these.
pub fn not_covered(r: &CampaignReport) -> String {
    let all: Vec<&MutantResult> = r.programs.iter().flat_map(|p| &p.mutants).collect();
    let count = |s: Status| all.iter().filter(|m| m.status == s).count();
    let untested = all.iter().filter(|m| m.untested).count();
    format!(
        "not covered: {} launch(es) not used as test cases (notes say why), {} mutant(s) never reached by a test case and not run (NO-COVERAGE; {untested} in code no test case's kernel runs), {} mutant(s) that do not compile; {} test case(s) used",
        r.dropped,
        count(Status::NoCoverage),
        count(Status::CompileError),
        r.test_cases
    )
}

fn stryker_status(s: Status) -> &'static str {
    match s {
        Status::Killed => "Killed",
        Status::Survived | Status::Undecided => "Survived",
        Status::NoCoverage => "NoCoverage",
        Status::Timeout => "Timeout",
        Status::RuntimeError => "RuntimeError",
        Status::CompileError => "CompileError",
        Status::Equivalent | Status::Ignored => "Ignored",
    }
}

/// The campaign in the mutation-testing-report-schema format (schemaVersion 1): one file per
/// program, statuses mapped onto the schema's (UNDECIDED → `Survived`, EQUIVALENT and
/// IGNORED → `Ignored`; the cltrap status is kept in `statusReason`).
pub fn stryker_json(r: &CampaignReport) -> Value {
    let mut files = serde_json::Map::new();
    for p in &r.programs {
        let mutants: Vec<Value> = p
            .mutants
            .iter()
            .map(|m| {
                let mu = &m.mutant;
                json!({
                    "id": mu.id,
                    "mutatorName": mu.operator.name(),
                    "replacement": mu.replacement,
                    "location": {
                        "start": {"line": mu.line, "column": mu.col},
                        "end": {"line": mu.end_line, "column": mu.end_col},
                    },
                    "status": stryker_status(m.status),
                    "statusReason": format!("{}: {}", m.status.label(), m.detail),
                    "description": format!(
                        "#{} in {}: `{}` -> `{}`{}",
                        mu.number,
                        mu.function,
                        mu.original,
                        mu.replacement,
                        if m.own_program { " (compiled on its own)" } else { " (schema)" }
                    ),
                    "static": false,
                })
            })
            .collect();
        files.insert(
            p.file.clone(),
            json!({"language": "c", "source": p.source, "mutants": mutants}),
        );
    }
    json!({
        "$schema": "https://git.io/mutation-testing-report-schema",
        "schemaVersion": "1",
        "thresholds": {"high": 80, "low": 60},
        "projectRoot": "",
        "files": files,
        "framework": {"name": "cltrap", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// A self-contained HTML page: summary tables, each program's source with mutated lines
/// marked, and every mutant with its status and diff. The JSON report is embedded too
/// (`<script type="application/json" id="report">`) for tools that want it.
pub fn html(r: &CampaignReport) -> String {
    let mut out = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>cltrap mutation report</title><style>
body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
td:first-child,th:first-child{text-align:left}pre{background:#f6f6f6;padding:6px;overflow:auto}
.KILLED,.TIMEOUT,.RUNTIME-ERROR{color:#070}.SURVIVED,.UNDECIDED{color:#b00;font-weight:bold}.NO-COVERAGE{color:#b60}
.EQUIVALENT,.COMPILE-ERROR,.IGNORED{color:#666}.src .m{background:#fdd}.src .k{background:#dfd}
</style></head><body><h1>cltrap mutation report</h1>\n",
    );
    let (by_kernel, by_op) = tables(r);
    for (title, rows) in [("kernel", &by_kernel), ("operator", &by_op)] {
        let _ = write!(
            out,
            "<h2>Per {title}</h2><table><tr><th>{title}</th><th>mutants</th>"
        );
        for c in COLUMNS {
            let _ = write!(out, "<th>{}</th>", c.label());
        }
        out.push_str("<th>score</th></tr>\n");
        for (name, c) in rows {
            let _ = write!(out, "<tr><td>{}</td><td>{}</td>", escape(name), c.all);
            for s in COLUMNS {
                let _ = write!(out, "<td>{}</td>", c.get(s));
            }
            let score = c.score().map_or("-".to_string(), |s| format!("{s:.1}%"));
            let _ = writeln!(out, "<td>{score}</td></tr>");
        }
        out.push_str("</table>\n");
    }
    if !r.notes.is_empty() {
        out.push_str("<h2>Notes</h2><ul>");
        for n in &r.notes {
            let _ = write!(out, "<li>{}</li>", escape(n));
        }
        out.push_str("</ul>\n");
    }
    for p in &r.programs {
        let _ = write!(out, "<h2>{}</h2><pre class=\"src\">", escape(&p.file));
        for (i, line) in p.source.split('\n').enumerate() {
            let n = i as u32 + 1;
            let here: Vec<&MutantResult> =
                p.mutants.iter().filter(|m| m.mutant.line == n).collect();
            let survived = here
                .iter()
                .any(|m| matches!(m.status, Status::Survived | Status::Undecided));
            let class = if survived {
                " class=\"m\""
            } else if here.is_empty() {
                ""
            } else {
                " class=\"k\""
            };
            let marks = if here.is_empty() {
                String::new()
            } else {
                format!(
                    "  // {} mutant(s): {}",
                    here.len(),
                    here.iter()
                        .map(|m| format!("#{} {}", m.mutant.number, m.status.label()))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let _ = writeln!(
                out,
                "<span{class}>{n:>4}  {}{}</span>",
                escape(line),
                escape(&marks)
            );
        }
        out.push_str("</pre><table><tr><th>#</th><th>operator</th><th>line:col</th><th>original</th><th>replacement</th><th>status</th><th>why</th></tr>\n");
        for m in &p.mutants {
            let mu = &m.mutant;
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}:{}</td><td><code>{}</code></td><td><code>{}</code></td><td class=\"{}\">{}</td><td style=\"text-align:left\">{}</td></tr>",
                mu.number,
                mu.operator,
                mu.line,
                mu.col,
                escape(&mu.original),
                escape(&mu.replacement),
                m.status.label(),
                m.status.label(),
                escape(&m.detail)
            );
        }
        out.push_str("</table>\n");
        for m in p
            .mutants
            .iter()
            .filter(|m| matches!(m.status, Status::Survived | Status::Undecided))
        {
            let _ = write!(out, "<pre>{}</pre>", escape(&diff(p, m)));
        }
    }
    // No `<` at all inside the script element (`</script>`, `<!--` would end it or change
    // how the parser reads it): `\u003c` in JSON strings, where alone it can occur.
    let json = stryker_json(r).to_string().replace('<', "\\u003c");
    let _ = writeln!(
        out,
        "<script type=\"application/json\" id=\"report\">{json}</script></body></html>"
    );
    out
}
