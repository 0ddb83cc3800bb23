//! Edits shared by the passes: adding a trailing parameter to functions and the matching
//! argument to their calls, and putting a prelude above the user's text without moving its
//! line numbers.

use std::collections::BTreeSet;

use crate::edits::Edits;
use crate::error::KernelError;
use crate::model::{visit_exprs, Expr, ExprKind, Function, Program};

/// The macros every prelude's helpers are written with: `__CLTRAP_FN` (helpers are
/// `static inline` where OpenCL C allows it, 1.2 and later) and `__CLTRAP_ELS(d)` (the
/// enqueued local size, which is the local size before OpenCL C 2.0). Identical redefinitions
/// are legal, so preludes that meet in one program do not clash.
pub const PRELUDE_MACROS: &str = "\
#if defined(__OPENCL_C_VERSION__) && __OPENCL_C_VERSION__ >= 120
#define __CLTRAP_FN static inline
#else
#define __CLTRAP_FN
#endif
#if defined(__OPENCL_C_VERSION__) && __OPENCL_C_VERSION__ >= 200
#define __CLTRAP_ELS(d) get_enqueued_local_size(d)
#else
#define __CLTRAP_ELS(d) get_local_size(d)
#endif
";

/// Text placed before the user's source: the pass's definitions, then `#line 1` so that clang's
/// and the OpenCL compiler's diagnostics keep the user's line numbers.
pub fn with_prelude(prelude: &str, instrumented: &str) -> String {
    let mut out = String::with_capacity(prelude.len() + instrumented.len() + 16);
    out.push_str(prelude);
    if !prelude.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("#line 1\n");
    out.push_str(instrumented);
    out
}

/// Appends parameter `decl` to `f`'s parameter list; returns the new parameter's index.
pub fn add_param(
    edits: &mut Edits,
    p: &Program,
    f: &Function,
    decl: &str,
) -> Result<u32, KernelError> {
    let (Some(open), Some(close)) = (f.params_open, f.params_close) else {
        let (line, col) = f.span.map(|s| (s.line, s.col)).unwrap_or((0, 0));
        return Err(KernelError::Unsupported {
            construct: format!("function `{}`", f.name),
            line,
            col,
            why: "its parameter list is not in the program text (macro?)".into(),
        });
    };
    let inner = &p.source[open as usize + 1..close as usize];
    if inner.trim().is_empty() {
        edits.insert(close, decl, 0);
        Ok(0)
    } else if inner.trim() == "void" {
        edits.replace(open + 1, close, decl);
        Ok(0)
    } else {
        edits.insert(close, format!(", {decl}"), 0);
        Ok(f.params.len() as u32)
    }
}

/// Appends argument `arg` to the call `call` (which must be written out in the user's text).
pub fn add_call_arg(
    edits: &mut Edits,
    p: &Program,
    call: &Expr,
    arg: &str,
) -> Result<(), KernelError> {
    let ExprKind::Call { callee, args, .. } = &call.kind else {
        return Ok(());
    };
    let refuse = |why: &str| KernelError::Unsupported {
        construct: format!("call to `{callee}`"),
        line: call.span.line,
        col: call.span.col,
        why: why.into(),
    };
    if !call_text_editable(p, call) {
        return Err(refuse("the call is written inside a macro, so the extra argument cannot be added in the program text"));
    }
    if args.is_empty() {
        edits.insert(call.span.end - 1, arg, 0);
    } else {
        edits.insert(call.span.end - 1, format!(", {arg}"), 0);
    }
    Ok(())
}

/// Whether an argument can be appended to `call` in the program text: false when the call
/// (or its closing parenthesis) is written inside a macro. Passes use it to leave a helper
/// with such a call site uninstrumented instead of refusing the whole program.
pub fn call_text_editable(p: &Program, call: &Expr) -> bool {
    let ExprKind::Call { callee_span, .. } = &call.kind else {
        return true;
    };
    let end = call.span.end as usize;
    !(call.span.macro_end
        || !callee_span.is_exact()
        || end == 0
        || p.source.as_bytes().get(end - 1) != Some(&b')'))
}

/// Helpers (not kernels) of `needing` that cannot take an extra parameter because a call to
/// them, from a function of `needing`, is written inside a macro; plus, transitively, the
/// helpers such a helper calls (it has no parameter to pass on). Each comes with the line of
/// the offending call (0 for those excluded only through their caller).
pub fn helpers_called_in_macros(p: &Program, needing: &BTreeSet<String>) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = Vec::new();
    for f in p.functions.iter().filter(|f| needing.contains(&f.name)) {
        for call in calls_to(f, needing) {
            if let ExprKind::Call { callee, .. } = &call.kind {
                let helper = p.function(callee).is_some_and(|g| !g.is_kernel);
                if helper && !call_text_editable(p, call) && !out.iter().any(|(n, _)| n == callee) {
                    out.push((callee.clone(), call.span.line));
                }
            }
        }
    }
    loop {
        let before = out.len();
        let names: Vec<String> = out.iter().map(|(n, _)| n.clone()).collect();
        for n in names {
            if let Some(f) = p.function(&n) {
                for c in &f.calls {
                    let helper = p.function(c).is_some_and(|g| !g.is_kernel);
                    if helper && needing.contains(c) && !out.iter().any(|(x, _)| x == c) {
                        out.push((c.clone(), 0));
                    }
                }
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

/// The calls (anywhere in `f`'s body) to functions named in `names`.
pub fn calls_to<'a>(f: &'a Function, names: &BTreeSet<String>) -> Vec<&'a Expr> {
    let mut out = Vec::new();
    if let Some(body) = &f.body {
        visit_exprs(body, &mut |e| {
            if let ExprKind::Call { callee, .. } = &e.kind {
                if names.contains(callee) {
                    out.push(e);
                }
            }
        });
    }
    out
}

/// Functions (by name) that call, directly or through other functions, anything in `seeds`;
/// `seeds` themselves are included.
pub fn callers_closure(p: &Program, seeds: &BTreeSet<String>) -> BTreeSet<String> {
    let mut set = seeds.clone();
    loop {
        let before = set.len();
        for f in &p.functions {
            if f.calls.iter().any(|c| set.contains(c)) {
                set.insert(f.name.clone());
            }
        }
        if set.len() == before {
            return set;
        }
    }
}

/// Functions (by name) a kernel of `p` can reach through calls, kernels included: only these
/// can run, so only these need a pass's extra parameter. An unused helper (in the main file or
/// in an included header) is left as it is, even one a pass could not rewrite.
pub fn reachable_from_kernels(p: &Program) -> BTreeSet<String> {
    let mut set: BTreeSet<String> = p
        .functions
        .iter()
        .filter(|f| f.is_kernel)
        .map(|f| f.name.clone())
        .collect();
    let mut todo: Vec<String> = set.iter().cloned().collect();
    while let Some(n) = todo.pop() {
        for f in p.functions.iter().filter(|f| f.name == n) {
            for c in &f.calls {
                // Header functions have no body in the model but are functions all the same.
                if p.functions.iter().any(|g| &g.name == c) && set.insert(c.clone()) {
                    todo.push(c.clone());
                }
            }
        }
    }
    set
}

/// Removes from `needing` the functions defined only in included headers that no kernel
/// reaches: they never run, so they need no extra parameter (main-file functions stay, since
/// they can be edited and a caller may need their new parameter).
pub fn drop_unused_header_functions(p: &Program, needing: &mut BTreeSet<String>) {
    let reachable = reachable_from_kernels(p);
    needing.retain(|n| {
        reachable.contains(n) || p.functions.iter().any(|f| &f.name == n && f.span.is_some())
    });
}

/// Puts `before` above every `#include` line of the main text and `after` below it, keeping
/// the user's line numbers with `#line`: a pass that redefines built-ins as macros undefines
/// them around included headers, so header functions no kernel reaches (which the pass does
/// not rewrite) still compile with the real built-ins.
pub fn around_includes(edits: &mut Edits, source: &str, before: &str, after: &str) {
    let mut offset = 0usize;
    for (i, line) in source.split_inclusive('\n').enumerate() {
        let t = line.trim_start();
        let directive = t
            .strip_prefix('#')
            .map(|r| r.trim_start().starts_with("include"))
            .unwrap_or(false);
        if directive && line.ends_with('\n') && !line.trim_end().ends_with('\\') {
            let n = i as u32 + 1;
            // Each directive is followed by `#line`, so every inserted line is numbered as
            // the user's line it stands before.
            let numbered = |text: &str, n: u32| -> String {
                text.lines().map(|l| format!("{l}\n#line {n}\n")).collect()
            };
            edits.insert(offset as u32, numbered(before, n), 0);
            edits.insert((offset + line.len()) as u32, numbered(after, n + 1), 0);
        }
        offset += line.len();
    }
}

/// Refuses functions defined in headers that would need the pass's extra parameter: their text
/// is not the user's main file, so they cannot be edited, and skipping them would be wrong.
/// The error points at the first call in the main file that leads to the function (directly
/// or through other header functions), because a header's own lines are not in the program
/// text; without such a call it points at the start of the file and says so.
pub fn refuse_header_functions(
    p: &Program,
    needing: &BTreeSet<String>,
    pass: &str,
) -> Result<(), KernelError> {
    for f in p.functions.iter().filter(|f| f.span.is_none()) {
        if needing.contains(&f.name) || f.calls.iter().any(|c| needing.contains(c)) {
            let (line, col, how) = match call_leading_to(p, &f.name) {
                Some((caller, line, col)) => (
                    line,
                    col,
                    format!("reached from `{caller}` through this call"),
                ),
                None => (1, 1, "no call to it in the main file was found".to_string()),
            };
            return Err(KernelError::Unsupported {
                construct: format!(
                    "function `{}` defined in an included header ({how})",
                    f.name
                ),
                line,
                col,
                why: format!(
                    "{pass} needs to rewrite it, and only the main program text can be rewritten"
                ),
            });
        }
    }
    Ok(())
}

/// The first call written in a main-file function to `target` or to a header function that
/// calls it (transitively): the caller's name and the call's line and column.
fn call_leading_to(p: &Program, target: &str) -> Option<(String, u32, u32)> {
    // Header functions that lead to `target`.
    let mut leads = BTreeSet::from([target.to_string()]);
    loop {
        let before = leads.len();
        for f in p.functions.iter().filter(|f| f.span.is_none()) {
            if f.calls.iter().any(|c| leads.contains(c)) {
                leads.insert(f.name.clone());
            }
        }
        if leads.len() == before {
            break;
        }
    }
    for f in p.functions.iter().filter(|f| f.span.is_some()) {
        if let Some(call) = calls_to(f, &leads).into_iter().next() {
            return Some((f.name.clone(), call.span.line.max(1), call.span.col.max(1)));
        }
    }
    None
}
