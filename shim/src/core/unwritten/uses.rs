//! Whether one use of a parameter in the (expanded) body of a kernel only reads through it:
//! an element read as a value (`p[i]`, `(p)[i]`, `*p`, `*(p + k)`, member and index selections
//! after it), or the pointer handed to a `vload` built-in; every other use "may write".

use super::lex::{closing, enclosing, Tok};

/// What may follow a value read from `p[…]` (after member and index selections).
const AFTER_READ: [&str; 25] = [
    ")", "]", ";", ",", "+", "-", "*", "/", "%", "<", ">", "<=", ">=", "==", "!=", "&&", "||", "&",
    "|", "^", "?", ":", "<<", ">>", "}",
];

/// What [`read_only_use`] needs to know of the program besides the tokens.
pub(super) struct Context<'a> {
    /// Every macro name (defined in the program or by an option).
    pub(super) macros: &'a [&'a str],
    /// Whether `vload…` names OpenCL's built-ins (no function or macro of the program is
    /// named so).
    pub(super) builtin_vload: bool,
}

/// Whether `name` may be a macro: the program's or an option's, a compiler construct
/// (`__builtin_…`, `_Generic`), or a name in capitals the program does not define, as
/// drivers' headers name theirs (`ATOMIC_VAR_INIT(x)` is `(x)`).
fn macro_like(name: &str, cx: &Context) -> bool {
    cx.macros.contains(&name)
        || name.starts_with('_')
        || (name.bytes().any(|b| b.is_ascii_uppercase())
            && name
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'))
}

/// Whether the token at `i` may change what follows it: a prefix `&`, `++`, `--`, a macro's
/// name, or the `)` that closes a macro's arguments (either could stand for one of them).
fn changes_what_follows(toks: &[Tok], start: usize, i: Option<usize>, cx: &Context) -> bool {
    let Some(i) = i else {
        return false;
    };
    let t = &toks[i];
    if t.is(")") {
        return enclosing(toks, start, i)
            .and_then(|open| open.checked_sub(1))
            .and_then(|j| toks[j].ident())
            .is_some_and(|n| macro_like(n, cx));
    }
    t.is("&") || t.is("++") || t.is("--") || t.ident().is_some_and(|n| macro_like(n, cx))
}

/// Whether the use of the parameter at token `at` (inside `body`) only reads through it.
pub(super) fn read_only_use(
    toks: &[Tok],
    body: std::ops::Range<usize>,
    at: usize,
    cx: &Context,
) -> bool {
    // `s.name` or `s->name`: a member of that name, not the parameter.
    if at
        .checked_sub(1)
        .is_some_and(|i| toks[i].is(".") || toks[i].is("->"))
    {
        return true;
    }
    if inside_macro_arguments(toks, body.start, at, cx) {
        return false;
    }
    // `(p)`, `((p))` (as macros write their parameters) stand for `p`.
    let (mut first, mut last) = (at, at);
    while first > body.start + 1
        && toks[first - 1].is("(")
        && toks.get(last + 1).is_some_and(|t| t.is(")"))
        && !(toks[first - 2].ident().is_some_and(|n| !is_keyword(n))
            || toks[first - 2].is(")")
            || toks[first - 2].is("]"))
    {
        first -= 1;
        last += 1;
    }
    match toks.get(last + 1) {
        Some(t) if t.is("[") => {
            if changes_what_follows(toks, body.start, first.checked_sub(1), cx) {
                return false;
            }
            let Some(close) = closing(toks, last + 1) else {
                return false;
            };
            value_context(toks, body.start, close + 1)
        }
        _ => {
            deref_read(toks, body.start, first, last, cx)
                || (cx.builtin_vload && vload_pointer(toks, body.start, first, last))
        }
    }
}

/// Whether the bare pointer spanning tokens `first..=last` is dereferenced to be read: `*p` or
/// `*(p + k)` used as a value, with nothing that assigns inside the parentheses. (A `*` before
/// a pointer can only be a dereference: a pointer cannot be multiplied.)
fn deref_read(toks: &[Tok], start: usize, first: usize, last: usize, cx: &Context) -> bool {
    let Some(prev) = first.checked_sub(1) else {
        return false;
    };
    if toks[prev].is("*") {
        // `++*p`, `&*p`: the element changed, or its address taken.
        return !changes_what_follows(toks, start, prev.checked_sub(1), cx)
            && value_context(toks, start, last + 1);
    }
    if !(toks[prev].is("(") && prev > start && toks[prev - 1].is("*")) {
        return false;
    }
    if changes_what_follows(toks, start, (prev - 1).checked_sub(1), cx) {
        return false;
    }
    let Some(close) = closing(toks, prev) else {
        return false;
    };
    assigns_nothing(&toks[last + 1..close]) && value_context(toks, start, close + 1)
}

/// Tokens that assign, or end an argument (after which anything may follow).
const WRITES: [&str; 14] = [
    "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--", ",",
];

/// Whether the expression that ends just before token `next` is used as a value: skips
/// member and index selections, then looks at what follows; a closing parenthesis of a
/// grouping (not a call) hands the question to what follows the group.
fn value_context(toks: &[Tok], start: usize, mut next: usize) -> bool {
    loop {
        match toks.get(next) {
            Some(t) if t.is("[") => match closing(toks, next) {
                Some(c) => next = c + 1,
                None => return false,
            },
            Some(t) if t.is(".") && toks.get(next + 1).and_then(Tok::ident).is_some() => next += 2,
            Some(t) if t.is(")") => {
                let Some(open) = enclosing(toks, start, next) else {
                    return false;
                };
                let before = open.checked_sub(1).map(|i| &toks[i]);
                // `__extension__ (x) = …`, `_Generic(…) = …`, `__builtin_choose_expr`, inline
                // `asm` operands: not calls that take a value.
                if before.is_some_and(|t| {
                    t.ident()
                        .is_some_and(|n| n.starts_with('_') || n.starts_with("asm"))
                }) {
                    return false;
                }
                // A literal before a parenthesis (`"+r"(x)`, an `asm` operand): not C.
                if before.is_some_and(|t| *t == Tok::Other) {
                    return false;
                }
                if before.is_some_and(|t| t.ident().is_some_and(|n| !is_keyword(n))) {
                    return true;
                }
                // `&(p[i])`, `++(p[i])`: the group is an lvalue taken or changed.
                if before.is_some_and(|t| t.is("&") || t.is("++") || t.is("--")) {
                    return false;
                }
                next += 1;
            }
            Some(t) => return AFTER_READ.iter().any(|p| t.is(p)),
            None => return false,
        }
    }
}

/// Keywords that may stand before a parenthesis that groups rather than calls.
fn is_keyword(name: &str) -> bool {
    matches!(
        name,
        "return" | "if" | "while" | "for" | "switch" | "sizeof" | "do" | "else" | "case"
    )
}

/// Whether token `at` lies inside the parentheses of a call to a macro the program or its
/// options define (its expansion could assign to anything it is given), or of a compiler's
/// own construct (`__builtin_choose_expr(c, a, b) = v`, `_Generic`, `__extension__`): those
/// can make an lvalue of an argument.
fn inside_macro_arguments(toks: &[Tok], start: usize, at: usize, cx: &Context) -> bool {
    let mut pos = at;
    while let Some(open) = enclosing(toks, start, pos) {
        let callee = open.checked_sub(1).and_then(|j| toks[j].ident());
        if callee.is_some_and(|n| macro_like(n, cx)) {
            return true;
        }
        pos = open;
    }
    false
}

/// Whether none of `toks` assigns, increments, or ends an argument.
fn assigns_nothing(toks: &[Tok]) -> bool {
    toks.iter().all(|t| !WRITES.iter().any(|w| t.is(w)))
}

/// Whether `name` is one of OpenCL's `vload` built-ins (`vload4`, `vload_half`,
/// `vloada_half8`, …).
fn is_vload(name: &str) -> bool {
    let width = |w: &str| matches!(w, "2" | "3" | "4" | "8" | "16");
    match name
        .strip_prefix("vloada_half")
        .or_else(|| name.strip_prefix("vload_half"))
    {
        Some(w) => w.is_empty() || width(w),
        None => name.strip_prefix("vload").is_some_and(width),
    }
}

/// Whether the bare pointer spanning `first..=last` is the pointer argument of a `vload` function (which only
/// reads): `vloadN(offset, p)` or `vloadN(offset, p + k)`, with nothing that assigns between
/// the pointer and the call's closing parenthesis.
fn vload_pointer(toks: &[Tok], start: usize, first: usize, last: usize) -> bool {
    if !first.checked_sub(1).is_some_and(|i| toks[i].is(",")) {
        return false;
    }
    let Some(open) = enclosing(toks, start, first) else {
        return false;
    };
    let callee = open.checked_sub(1).and_then(|i| toks[i].ident());
    if !callee.is_some_and(is_vload) {
        return false;
    }
    closing(toks, open).is_some_and(|close| assigns_nothing(&toks[last + 1..close]))
}
