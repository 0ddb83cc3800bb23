//! The HTML coverage report: one self-contained page (inline CSS, no scripts) with a summary
//! table per kernel and each program's source annotated line by line — green where every
//! outcome recorded on the line was reached, yellow where some were, red where none were —
//! with a marker per branch side / loop-boundary class / barrier (hover for its label).

use super::report::{barrier_counts, barrier_sites, BarrierStatus};
use super::{CoverageReport, ProgramCoverage};
use cltrap_kernel::coverage::Outcome;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::html::escape;

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em}
table.sum{border-collapse:collapse;margin-bottom:1em}
table.sum td,table.sum th{border:1px solid #bbb;padding:2px 8px;text-align:left}
table.src{border-collapse:collapse;font-family:monospace;font-size:13px;width:100%}
table.src td{padding:0 6px;white-space:pre;vertical-align:top}
td.n{color:#888;text-align:right;user-select:none}
tr.hit td.c{background:#d8f5d0} tr.partial td.c{background:#fff3b0}
tr.miss td.c{background:#f8d0d0} tr.div td.c{background:#f0b0f0}
span.m{display:inline-block;min-width:1.2em;margin-right:2px;padding:0 2px;border-radius:3px;
font-size:11px;text-align:center;color:#fff}
span.y{background:#2a8a2a} span.x{background:#c03030} span.u{background:#999}
span.d{background:#a020a0}
.note{color:#555}";

fn outcome_mark(o: Outcome) -> &'static str {
    match o {
        Outcome::True => "T",
        Outcome::False => "F",
        Outcome::Taken => "L",
        Outcome::Zero => "0",
        Outcome::Once => "1",
        Outcome::Many => "n",
    }
}

#[derive(Default)]
struct Line {
    marks: Vec<(u32, String)>,
    reached: usize,
    missed: usize,
    divergent: bool,
}

fn program_section(s: &mut String, p: &ProgramCoverage) {
    let _ = writeln!(
        s,
        "<h2 id=\"{0}\">{0}</h2>\n<table class=\"sum\"><tr><th>kernel</th><th>launches</th><th>branches</th><th>loop boundaries</th><th>barriers ok / divergent / never reached</th></tr>",
        escape(&p.short_name())
    );
    let mut hit: BTreeSet<u32> = BTreeSet::new();
    let mut measured: BTreeSet<u32> = BTreeSet::new();
    let mut barrier_state: BTreeMap<u32, BarrierStatus> = BTreeMap::new();
    for k in &p.kernels {
        for h in &k.result.slots {
            measured.insert(h.index);
            if h.hit {
                hit.insert(h.index);
            }
        }
        let sites = barrier_sites(p, k);
        let b = barrier_counts(&sites);
        for site in &sites {
            let e = barrier_state
                .entry(site.barrier)
                .or_insert(BarrierStatus::NeverReached);
            *e = match (*e, site.status) {
                (BarrierStatus::Divergent, _) | (_, BarrierStatus::Divergent) => {
                    BarrierStatus::Divergent
                }
                (BarrierStatus::Covered, _) | (_, BarrierStatus::Covered) => BarrierStatus::Covered,
                _ => BarrierStatus::NeverReached,
            };
        }
        let n = k.launches.len() as u64 + k.unnumbered_launches;
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{n}</td><td>{}/{}</td><td>{}/{}</td><td>{} / {} / {}</td></tr>",
            escape(&k.kernel),
            k.result.branches.0,
            k.result.branches.1,
            k.result.loop_boundaries.0,
            k.result.loop_boundaries.1,
            b.covered,
            b.divergent,
            b.never_reached
        );
    }
    s.push_str("</table>\n");
    for k in &p.kernels {
        for d in k.divergences.iter().take(20) {
            let launch = d
                .launch
                .map(|l| format!("launch {l}, "))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "<p class=\"note\">barrier divergence in {} at line {}: {launch}group ({},{},{}): {} arrival(s) for {} work-item(s)</p>",
                escape(&k.kernel),
                d.line,
                d.group[0],
                d.group[1],
                d.group[2],
                d.arrivals,
                d.work_items
            );
        }
    }
    for sk in &p.map.skipped {
        let _ = writeln!(
            s,
            "<p class=\"note\">not instrumented: line {}:{} {} ({})</p>",
            sk.line,
            sk.col,
            escape(&sk.construct),
            escape(&sk.why)
        );
    }

    let mut lines: BTreeMap<u32, Line> = BTreeMap::new();
    for slot in &p.map.slots {
        let l = lines.entry(slot.line).or_default();
        let (class, title) = if !measured.contains(&slot.index) {
            ("u", "not measured")
        } else if hit.contains(&slot.index) {
            l.reached += 1;
            ("y", "reached")
        } else {
            l.missed += 1;
            ("x", "not reached")
        };
        l.marks.push((
            slot.col,
            format!(
                "<span class=\"m {class}\" title=\"{}: {title}\">{}</span>",
                escape(&slot.label),
                outcome_mark(slot.outcome)
            ),
        ));
    }
    for b in &p.map.barriers {
        let l = lines.entry(b.line).or_default();
        let (class, title) = match barrier_state.get(&b.index) {
            None => ("u", "not measured"),
            Some(BarrierStatus::Covered) => {
                l.reached += 1;
                ("y", "reached by whole work-groups")
            }
            Some(BarrierStatus::NeverReached) => {
                l.missed += 1;
                ("x", "never reached")
            }
            Some(BarrierStatus::Divergent) => {
                l.divergent = true;
                ("d", "BARRIER DIVERGENCE")
            }
        };
        l.marks.push((
            b.col,
            format!(
                "<span class=\"m {class}\" title=\"{}: {title}\">B</span>",
                escape(&b.label)
            ),
        ));
    }
    s.push_str("<table class=\"src\">\n");
    for (i, text) in p.source.lines().enumerate() {
        let n = i as u32 + 1;
        let (class, marks) = match lines.get_mut(&n) {
            Some(l) => {
                l.marks.sort_by_key(|(c, _)| *c);
                let class = if l.divergent {
                    "div"
                } else if l.reached > 0 && l.missed == 0 {
                    "hit"
                } else if l.reached > 0 {
                    "partial"
                } else if l.missed > 0 {
                    "miss"
                } else {
                    ""
                };
                let marks: String = l.marks.iter().map(|(_, m)| m.as_str()).collect();
                (class, marks)
            }
            None => ("", String::new()),
        };
        let _ = writeln!(
            s,
            "<tr class=\"{class}\"><td class=\"n\">{n}</td><td>{marks}</td><td class=\"c\">{}</td></tr>",
            escape(text)
        );
    }
    s.push_str("</table>\n");
}

/// The whole report as one HTML page.
pub fn render(report: &CoverageReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>cltrap coverage</title><style>{STYLE}</style></head><body>\n<h1>cltrap kernel coverage</h1>"
    );
    s.push_str("<p class=\"note\">Markers: T/F branch side true/false, L case label reached, 0/1/n loop ran 0, 1, more times, B barrier; green reached, red not reached, purple barrier divergence, grey not measured.</p>\n");
    s.push_str("<ul>\n");
    for p in &report.programs {
        let kernels: Vec<String> = p.kernels.iter().map(|k| escape(&k.kernel)).collect();
        let _ = writeln!(
            s,
            "<li><a href=\"#{0}\">{0}</a>: {1}</li>",
            escape(&p.short_name()),
            kernels.join(", ")
        );
    }
    s.push_str("</ul>\n");
    for p in &report.programs {
        program_section(&mut s, p);
    }
    if !report.problems.is_empty() {
        s.push_str("<h2>Launches not measured, and notes</h2>\n<ul>\n");
        for pr in &report.problems {
            let _ = writeln!(
                s,
                "<li>launch {} {}: {}: {}</li>",
                pr.launch,
                escape(&pr.kernel),
                escape(&pr.kind),
                escape(&pr.message)
            );
        }
        s.push_str("</ul>\n");
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn kernel_text_is_escaped() {
        assert_eq!(
            super::escape("a<b && c>\"d\" 'e'"),
            "a&lt;b &amp;&amp; c&gt;&quot;d&quot; &#39;e&#39;"
        );
    }
}
