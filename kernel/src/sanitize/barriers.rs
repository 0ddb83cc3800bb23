//! Barrier intervals, per fenced address space, as Oclgrind's race detector counts them.
//!
//! Why a module of its own: the race checks (`races.rs`) compare accesses within one barrier
//! interval, and which barrier ends which interval decides which races exist.
//!
//! **Fence flags.** Oclgrind (`plugins/RaceDetector.cpp`, `workGroupBarrier`) ends the
//! `__local` interval of a work-group only at a barrier whose flags hold
//! `CLK_LOCAL_MEM_FENCE`, and the `__global` one (its per-work-item global access maps) only
//! at a barrier whose flags hold `CLK_GLOBAL_MEM_FENCE`; a barrier with neither flag ends
//! neither. So `barrier(CLK_LOCAL_MEM_FENCE)` between a `__global` write and another
//! work-item's read of it is a race (pyopencl's `scan_lev1`). The OpenCL specification says
//! the same of memory ordering (the fence orders only the named address spaces), so here
//! the specification and Oclgrind agree, and the native checks follow both. The interval
//! counter is one private `uint` (`__cltrap_ep` in a kernel, `*__cltrap_epp` in a helper): its
//! low 16 bits count `__local`-fencing barriers, its high 16 bits `__global`-fencing ones;
//! [`FENCE_MACRO`] computes the increment from the flags at run time. A barrier whose flags
//! the rewrite cannot repeat (an expression with side effects) counts for both spaces.
//!
//! **Barriers in macro bodies.** A barrier written inside a macro (pyopencl's
//! `#define local_barrier() barrier(CLK_LOCAL_MEM_FENCE);`, or a macro with other statements
//! before its barrier) has no text of its own at the macro's use to wrap. The macro's
//! definition is in the program text, though: each `barrier`/`work_group_barrier` call in a
//! `#define` body becomes [`BARRIER_MACRO`]/[`WG_BARRIER_MACRO`], which count the interval
//! through `__cltrap_epp` (the kernel declares it as a pointer to its counter) before the
//! barrier. That is done only when every function whose body expands such a macro is
//! instrumented (else `__cltrap_epp` would not exist there); otherwise, and for a macro
//! defined in an included header, the intervals are said to be unknown (as before).

use std::collections::BTreeSet;

use crate::edits::Edits;
use crate::model::{visit_exprs, ExprKind, Program, Stmt};

/// The increment of the interval counter for barrier flags `f`.
pub const FENCE_MACRO: &str = "__CLTRAP_FENCE";
/// `barrier(f)` in a macro body becomes this, which counts the interval then waits.
pub const BARRIER_MACRO: &str = "__CLTRAP_BARRIER";
/// `work_group_barrier(f[, scope])` in a macro body becomes this.
pub const WG_BARRIER_MACRO: &str = "__CLTRAP_WG_BARRIER";
/// The increment for a barrier whose flags are not known: both spaces.
const BOTH: &str = "0x10001u";

/// OpenCL C of the macros (after the common prelude).
pub(crate) fn prelude() -> String {
    format!(
        "\
#define {FENCE_MACRO}(f) (((f) & CLK_LOCAL_MEM_FENCE ? 1u : 0u) | ((f) & CLK_GLOBAL_MEM_FENCE ? 0x10000u : 0u))
#define __CLTRAP_FIRST(f, ...) f
#define {BARRIER_MACRO}(f) ((*__cltrap_epp) += {FENCE_MACRO}(f), barrier(f))
#define {WG_BARRIER_MACRO}(...) ((*__cltrap_epp) += {FENCE_MACRO}(__CLTRAP_FIRST(__VA_ARGS__, 0)), work_group_barrier(__VA_ARGS__))
"
    )
}

/// The macros of `p`'s own text whose bodies call a barrier, with the byte ranges of those
/// calls' names in their `#define` lines (and which name each is).
pub(crate) struct MacroBarriers {
    /// Names of the macros.
    pub names: BTreeSet<String>,
    /// (start, end, is `work_group_barrier`) of each barrier name in a macro body.
    pub calls: Vec<(u32, u32, bool)>,
}

/// Finds the barrier calls written in `#define` bodies of `p`'s own text.
pub(crate) fn macro_barriers(p: &Program) -> MacroBarriers {
    let src = p.source.as_bytes();
    let mut out = MacroBarriers {
        names: BTreeSet::new(),
        calls: Vec::new(),
    };
    let mut line_start = 0usize;
    while line_start < src.len() {
        // One logical line (backslash continuations joined).
        let mut end = line_start;
        loop {
            while end < src.len() && src[end] != b'\n' {
                end += 1;
            }
            let cont = end > line_start && src[end - 1] == b'\\'
                || end > line_start + 1 && src[end - 1] == b'\r' && src[end - 2] == b'\\';
            if cont && end < src.len() {
                end += 1;
                continue;
            }
            break;
        }
        let line = &p.source[line_start..end];
        if let Some((name, body_at)) = define_name(line) {
            let body = &line[body_at..];
            for (i, _) in body.match_indices("barrier") {
                let at = body_at + i;
                let wg = line[..at].ends_with("work_group_");
                let name_start = if wg { at - "work_group_".len() } else { at };
                let prev = line[..name_start].chars().next_back();
                let after = line[at + "barrier".len()..].trim_start();
                let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                if !ident(prev) && after.starts_with('(') {
                    let s = (line_start + name_start) as u32;
                    out.calls
                        .push((s, (line_start + at + "barrier".len()) as u32, wg));
                    out.names.insert(name.to_string());
                }
            }
        }
        line_start = end + 1;
    }
    out
}

/// `#define NAME...`: the name and the byte offset in `line` where its body (with a
/// function-like macro's parameter list) starts.
fn define_name(line: &str) -> Option<(&str, usize)> {
    let t = line.trim_start();
    let t = t.strip_prefix('#')?.trim_start();
    let t = t.strip_prefix("define")?;
    if !t.starts_with(|c: char| c.is_whitespace()) {
        return None;
    }
    let t = t.trim_start();
    let len = t
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(t.len());
    if len == 0 {
        return None;
    }
    let name_at = line.len() - t.len();
    Some((&t[..len], name_at + len))
}

/// Whether macro use `name` reaches (through the macros its body names) one of `names`.
fn reaches(p: &Program, name: &str, names: &BTreeSet<String>) -> bool {
    let mut seen = BTreeSet::new();
    let mut todo = vec![name.to_string()];
    while let Some(n) = todo.pop() {
        if names.contains(&n) {
            return true;
        }
        if !seen.insert(n.clone()) {
            continue;
        }
        if let Some(body) = p.macro_defs.get(&n) {
            todo.extend(
                body.iter()
                    .filter(|t| p.macro_defs.contains_key(*t))
                    .cloned(),
            );
        }
    }
    false
}

/// Whether `body` expands a barrier macro of `macros` (a barrier call written inside a macro
/// use whose expansion reaches one of them).
pub(crate) fn uses_macro_barriers(
    p: &Program,
    body: &Stmt,
    barrier_names: &BTreeSet<String>,
    macros: &MacroBarriers,
) -> bool {
    let mut found = false;
    visit_exprs(body, &mut |e| {
        if let ExprKind::Call { callee, .. } = &e.kind {
            if barrier_names.contains(callee) && !e.span.is_exact() {
                if let Some(u) = p.macro_uses.iter().find(|u| u.start == e.span.start) {
                    found |= reaches(p, &u.name, &macros.names);
                }
            }
        }
    });
    found
}

/// Rewrites the barrier calls of the macro bodies of `macros` (see the module doc).
pub(crate) fn rewrite_macros(macros: &MacroBarriers, edits: &mut Edits) {
    for &(s, e, wg) in &macros.calls {
        edits.replace(s, e, if wg { WG_BARRIER_MACRO } else { BARRIER_MACRO });
    }
}

/// Makes every barrier of `body` count the interval it ends in `counter` (the private
/// counter's lvalue; see the module doc); returns why the intervals cannot be counted, if
/// they cannot. `rewritten`: the barrier macros of the program text are rewritten, so a
/// barrier expanded from one of them counts itself.
pub(crate) fn count_barriers(
    p: &Program,
    body: &Stmt,
    barrier_names: &BTreeSet<String>,
    counter: &str,
    rewritten: Option<&MacroBarriers>,
    edits: &mut Edits,
) -> Option<String> {
    let mut problem = None;
    visit_exprs(body, &mut |e| {
        let ExprKind::Call { callee, args, .. } = &e.kind else {
            return;
        };
        if !barrier_names.contains(callee) {
            return;
        }
        if e.span.is_exact() {
            // The flags' text (often macros: `CLK_LOCAL_MEM_FENCE`) is the call's first
            // argument as written; repeated, so it must have no side effects.
            let flags = args
                .first()
                .filter(|f| super::pure(f))
                .and_then(|_| p.source.get(e.span.start as usize..e.span.end as usize))
                .and_then(first_argument);
            let inc = match flags {
                Some(text) => format!("{FENCE_MACRO}({text})"),
                None => BOTH.to_string(),
            };
            edits.wrap(
                e.span.start,
                e.span.end,
                format!("({counter} += {inc}, "),
                ")",
                -1000,
            );
            return;
        }
        let from_rewritten = rewritten.is_some_and(|m| {
            p.macro_uses
                .iter()
                .find(|u| u.start == e.span.start)
                .is_some_and(|u| reaches(p, &u.name, &m.names))
        });
        if from_rewritten {
            return;
        }
        if p.macro_is_single_call(e.span.start, callee) {
            edits.wrap(
                e.span.start,
                e.span.end,
                format!("({counter} += {BOTH}, "),
                ")",
                -1000,
            );
        } else if problem.is_none() {
            problem = Some(format!(
                "a `{callee}` at line {} is written inside a macro with other code",
                e.span.line
            ));
        }
    });
    problem
}

/// The text of the first argument of call text `f(a, b)`.
fn first_argument(call: &str) -> Option<&str> {
    let open = call.find('(')?;
    let mut depth = 0i32;
    for (i, c) in call.char_indices().skip(open + 1) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth > 0 => depth -= 1,
            ',' | ')' if depth == 0 => {
                let arg = call[open + 1..i].trim();
                return (!arg.is_empty()).then_some(arg);
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_are_the_first_argument_as_written() {
        assert_eq!(
            first_argument("barrier(CLK_LOCAL_MEM_FENCE | F(1, 2))"),
            Some("CLK_LOCAL_MEM_FENCE | F(1, 2)")
        );
        assert_eq!(
            first_argument("work_group_barrier(CLK_GLOBAL_MEM_FENCE, memory_scope_device)"),
            Some("CLK_GLOBAL_MEM_FENCE")
        );
        assert_eq!(first_argument("barrier()"), None);
    }

    #[test]
    fn barrier_calls_in_define_bodies_are_found() {
        let src = "#define local_barrier() barrier(CLK_LOCAL_MEM_FENCE);\n#define STEP(p) p[0] = 1; \\\n  work_group_barrier(CLK_GLOBAL_MEM_FENCE)\n#define my_barrier 3\n#define X mybarrier(1)\n";
        let p = crate::parse_program(src, "").expect("parses");
        let m = macro_barriers(&p);
        let names: Vec<&str> = m.names.iter().map(String::as_str).collect();
        assert_eq!(names, ["STEP", "local_barrier"]);
        let texts: Vec<&str> = m
            .calls
            .iter()
            .map(|&(s, e, _)| &src[s as usize..e as usize])
            .collect();
        assert_eq!(texts, ["barrier", "work_group_barrier"]);
    }
}
