//! `cltrap list`: one aligned line per launch — the `gpuverify --show-intercepted` view.

use crate::param_types::ParamTypes;
use crate::site::Resolver;
use crate::values::unhex;
use cltrap_capture::replayable::{ReplayIndex, Replayability};
use cltrap_capture::{ArgRecord, Capture, LaunchRecord};

/// Sizes as `1024`, `64x64` or `8x8x4`; `NULL` for an absent local size.
pub fn format_dims(d: Option<&[u64]>) -> String {
    match d {
        None => "NULL".into(),
        Some(d) => d.iter().map(u64::to_string).collect::<Vec<_>>().join("x"),
    }
}

/// An offset as `(4,2)`: a point, not a size.
pub fn format_offset(o: &[u64]) -> String {
    format!(
        "({})",
        o.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
    )
}

/// `name=value` for every by-value argument (decoded by its type name when known, else by
/// the type clang gives the parameter: [`ParamTypes`]).
pub fn format_scalars(capture: &Capture, launch: &LaunchRecord, types: &mut ParamTypes) -> String {
    let mut parts = Vec::new();
    for a in &launch.args {
        if let ArgRecord::Scalar { info, bytes } = a {
            let name = if info.name.is_empty() {
                format!("arg{}", info.index)
            } else {
                info.name.to_string()
            };
            let value = match unhex(bytes) {
                Some(b) => {
                    types
                        .decode(capture, launch, info.index, &info.type_name, &b)
                        .0
                }
                None => format!("<bad hex {bytes:?}>"),
            };
            parts.push(format!("{name}={value}"));
        }
    }
    parts.join(" ")
}

/// Geometry of a launch: `global 1024 local 64` plus ` offset 16` when there is one.
pub fn format_geometry(l: &LaunchRecord) -> (String, String, String) {
    let offset = match &l.global_offset {
        Some(o) if o.iter().any(|v| *v != 0) => format_offset(o),
        _ => String::new(),
    };
    (
        format_dims(Some(&l.global_size)),
        format_dims(l.local_size.as_deref()),
        offset,
    )
}

/// The widest a cell of each column may be, in characters (id, kernel, global, local,
/// offset, scalars, launched at): a capture's strings are the application's (or a damaged
/// file's) and may be megabytes long; the full values are in `cltrap show`.
const MAX_WIDTHS: [usize; 7] = [20, 64, 32, 32, 32, 96, 160];

/// The launch-site column keeps its end when cut: `file:line (function)` is what matters.
const SITE: usize = 6;

/// `s` with control characters escaped as Rust writes them (`\n`, `\u{1b}`): a capture's
/// string printed for a person cannot break a line or drive the terminal.
pub fn escape_controls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` with control characters escaped as [`escape_controls`] does, except line ends and
/// tabs: a text of several lines (a build log) from a capture keeps its lines but cannot
/// drive the terminal (an escape sequence, a carriage return rewriting a line).
pub fn escape_controls_keep_lines(s: &str) -> String {
    s.split('\n')
        .map(|line| {
            line.split('\t')
                .map(escape_controls)
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `s` fit for one cell of at most `max` characters: control characters escaped
/// ([`escape_controls`]), then cut with an ellipsis when too long.
pub fn clip(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut n = 0;
    for c in s.chars() {
        let piece: String = if c.is_control() {
            c.escape_default().collect()
        } else {
            c.to_string()
        };
        let len = piece.chars().count();
        if n + len > max {
            // Room for the ellipsis: drop characters until it fits.
            while n + 1 > max && out.pop().is_some() {
                n -= 1;
            }
            out.push('…');
            return out;
        }
        out.push_str(&piece);
        n += len;
    }
    out
}

/// [`clip`] that keeps the end of `s`: `…` then its last characters.
pub fn clip_front(s: &str, max: usize) -> String {
    let escaped = escape_controls(s);
    let n = escaped.chars().count();
    if n <= max {
        return escaped;
    }
    let keep = max.saturating_sub(1);
    let mut out = String::from("…");
    out.extend(escaped.chars().skip(n - keep));
    out
}

/// Renders the whole list (header included) for `capture`.
pub fn render(capture: &Capture, resolver: &mut Resolver) -> String {
    resolver.prefetch(
        capture
            .launches
            .iter()
            .filter_map(|l| l.launch_site.as_ref()),
    );
    let header = [
        "id",
        "kernel",
        "global",
        "local",
        "offset",
        "scalars",
        "launched at",
    ]
    .map(String::from);
    let mut rows: Vec<[String; 7]> = vec![header];
    let mut blocked = 0usize;
    let mut derived = 0usize;
    let index = ReplayIndex::of(&capture.launches);
    let mut types = ParamTypes::default();
    for l in &capture.launches {
        let (g, lo, off) = format_geometry(l);
        let site = l
            .launch_site
            .as_ref()
            .map(|s| resolver.describe(s))
            .unwrap_or_else(|| "-".into());
        // Clipped before the marker, so a long name keeps it.
        let mut kernel = clip(&l.kernel, MAX_WIDTHS[1] - 4);
        match index.get(l.id) {
            Some(Replayability::Blocked { .. }) | None => {
                kernel.push_str(" (!)");
                blocked += 1;
            }
            Some(Replayability::Derived { .. }) => {
                kernel.push_str(" (d)");
                derived += 1;
            }
            Some(Replayability::Stored) => {}
        }
        let row = [
            l.id.to_string(),
            kernel,
            g,
            lo,
            off,
            format_scalars(capture, l, &mut types),
            site,
        ];
        let mut clipped: [String; 7] = Default::default();
        for (i, cell) in row.iter().enumerate() {
            clipped[i] = if i == SITE {
                clip_front(cell, MAX_WIDTHS[i])
            } else {
                clip(cell, MAX_WIDTHS[i])
            };
        }
        rows.push(clipped);
    }
    let show_offset = rows.iter().skip(1).any(|r| !r[4].is_empty());
    let mut widths = [0usize; 7];
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in &rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            if i == 4 && !show_offset {
                continue;
            }
            let w = widths[i];
            let cell = if i == 0 {
                format!("{c:>w$}")
            } else {
                format!("{c:<w$}")
            };
            line.push_str(&cell);
            line.push_str("  ");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let total = capture.launches.len();
    if capture.launches.is_empty() {
        out.push_str("(no launches in this capture)\n");
    } else if blocked > 0 || derived > 0 {
        if derived > 0 {
            out.push_str(&format!(
                "(d) = replayable with derived inputs: contents before the launch re-created by re-executing earlier launches ({derived} launch(es); `cltrap show DIR ID` names them)\n"
            ));
        }
        if blocked > 0 {
            out.push_str("(!) = not replayable exactly; `cltrap show DIR ID` says why\n");
        }
        out.push_str(&format!(
            "{} of {total} launch(es) can be replayed\n",
            total - blocked
        ));
    }
    for d in &capture.damaged {
        out.push_str(&format!("damaged: {d}\n"));
    }
    if !capture.damaged.is_empty() {
        out.push_str(&format!(
            "note: {} damaged launch line(s) are left out above; the other launches are listed\n",
            capture.damaged.len()
        ));
    }
    if capture.truncated {
        out.push_str("note: the launch log ends in a cut-off record (the application died mid-write); it was ignored\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_keeps_its_lines_but_not_its_escape_sequences() {
        let log = "error: x\n\tat line 3\r\u{1b}[2Kfake: all launches matched\n";
        assert_eq!(
            escape_controls_keep_lines(log),
            "error: x\n\tat line 3\\r\\u{1b}[2Kfake: all launches matched\n"
        );
    }

    #[test]
    fn dims_print_compactly() {
        assert_eq!(format_dims(Some(&[1024])), "1024");
        assert_eq!(format_dims(Some(&[8, 8, 4])), "8x8x4");
        assert_eq!(format_dims(None), "NULL");
    }

    #[test]
    fn cells_are_clipped_with_an_ellipsis_and_control_characters_escaped() {
        assert_eq!(clip("vadd", 8), "vadd");
        assert_eq!(clip("abcdefgh", 8), "abcdefgh");
        assert_eq!(clip("abcdefghi", 8), "abcdefg…");
        assert_eq!(clip("a\nb", 8), "a\\nb");
        assert_eq!(clip(&"x".repeat(1 << 20), 48).chars().count(), 48);
        assert_eq!(clip_front("/a/long/path/k.c:7 (main)", 12), "….c:7 (main)");
        assert_eq!(clip_front("k.c:7", 12), "k.c:7");
    }
}
