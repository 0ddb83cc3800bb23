//! Expands the program's own macros in a kernel's body, so that a pointer handed to a macro
//! (clpeak's `FETCH_4(sum, id, A, n)` reads `A[id]`) is judged by what the macro does with it.
//!
//! Job: the C preprocessor's substitution for the macros given (object-like and function-like,
//! arguments split at top-level commas, each macro hidden while its own replacement is
//! rescanned), nothing else: no `#`, `##` or `...` (those macros are never given), no
//! conditionals. Anything it cannot follow gives up (None), and the caller answers "may write".

use super::lex::{Define, Tok};

/// Most tokens an expanded body may have: past it, the caller gives up.
const MOST_TOKENS: usize = 1 << 20;

/// `body` with every use of the macros in `defines` replaced, rescanned (None: an invocation
/// whose arguments run past the end of what is being expanded, a wrong number of arguments,
/// or past [`MOST_TOKENS`]).
pub(super) fn expand(body: &[Tok], defines: &[&Define]) -> Option<Vec<Tok>> {
    let mut out = Vec::with_capacity(body.len());
    let mut hidden = Vec::new();
    rescan(body, defines, &mut hidden, &mut out, false)?;
    Some(out)
}

/// Appends `toks` to `out`, expanding the macros of `defines` not in `hidden`. `nested`: `toks`
/// is a replacement, whose last name could take its arguments from what follows it in the
/// text (`#define F G` then `F(x)`): that gives up rather than guess.
fn rescan<'a>(
    toks: &[Tok],
    defines: &[&'a Define],
    hidden: &mut Vec<&'a str>,
    out: &mut Vec<Tok>,
    nested: bool,
) -> Option<()> {
    let mut i = 0;
    while i < toks.len() {
        let found = toks[i]
            .ident()
            .filter(|n| !hidden.contains(n))
            .and_then(|n| defines.iter().find(|d| d.name == n));
        let Some(d) = found else {
            out.push(toks[i].clone());
            i += 1;
            continue;
        };
        let replacement = match &d.params {
            None => {
                i += 1;
                d.body.clone()
            }
            Some(params) => {
                if nested && i + 1 == toks.len() {
                    return None;
                }
                // A function-like macro's name without `(` after it could be handed to
                // another macro that calls it (`REPEAT4(CLEAR)`): give up.
                if !toks.get(i + 1).is_some_and(|t| t.is("(")) {
                    return None;
                }
                let (args, close) = arguments(toks, i + 1)?;
                let args_match = args.len() == params.len()
                    || (params.is_empty() && args.len() == 1 && args[0].is_empty());
                if !args_match {
                    return None;
                }
                i = close + 1;
                // Each argument is expanded on its own first, as the preprocessor does
                // (`ID(ID(x))`), then put in place of its parameter and rescanned.
                let mut expanded = Vec::with_capacity(args.len());
                for a in &args {
                    let mut e = Vec::with_capacity(a.len());
                    rescan(a, defines, hidden, &mut e, true)?;
                    expanded.push(e);
                }
                substitute(&d.body, params, &expanded)
            }
        };
        hidden.push(&d.name);
        let done = rescan(&replacement, defines, hidden, out, true);
        hidden.pop();
        done?;
        if out.len() > MOST_TOKENS {
            return None;
        }
    }
    Some(())
}

/// The arguments of the invocation whose `(` is at `open`, split at commas outside inner
/// parentheses, and the index of its `)`.
fn arguments(toks: &[Tok], open: usize) -> Option<(Vec<Vec<Tok>>, usize)> {
    let mut args = vec![Vec::new()];
    let mut depth = 0usize;
    for (i, t) in toks.iter().enumerate().skip(open + 1) {
        if t.is(")") && depth == 0 {
            return Some((args, i));
        }
        if t.is("(") {
            depth += 1;
        } else if t.is(")") {
            depth -= 1;
        }
        if t.is(",") && depth == 0 {
            args.push(Vec::new());
        } else if let Some(last) = args.last_mut() {
            last.push(t.clone());
        }
    }
    None
}

/// `body` with each parameter replaced by its argument's tokens.
fn substitute(body: &[Tok], params: &[String], args: &[Vec<Tok>]) -> Vec<Tok> {
    let mut out = Vec::with_capacity(body.len());
    for t in body {
        match t.ident().and_then(|n| params.iter().position(|p| p == n)) {
            Some(j) => out.extend(args[j].iter().cloned()),
            None => out.push(t.clone()),
        }
    }
    out
}
