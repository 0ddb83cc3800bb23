//! Which pointer parameters a kernel's OpenCL C source never writes through, read from the
//! program's own text: a `__global float *in` that the kernel only indexes to read is as
//! unchanged by a launch as a `const` one, so the capture reads it once (before the launch)
//! instead of twice. Real code often leaves out `const` (Rodinia's Gaussian elimination passes
//! all three matrices without it); each such argument would otherwise cost a read back and a
//! hash per launch.
//!
//! Job: a conservative token scan, no parser, in three steps: [`lex`] (tokens and
//! directives, marking every spelling a compiler would read otherwise), [`expand`] (the
//! program's own macros in the kernel's body: those defined before it, outside any `#if`,
//! alike in every definition, never undefined after, not given by `-D`, without `#`, `##` or
//! `...`), then [`uses`] (each use of the parameter: an element read as a value, or the pointer
//! handed to a `vload` built-in). Everything else counts as a possible write: a macro not
//! expanded or a `-D` option that names, reaches or takes the parameter, an `#include` not
//! given (headers are read with the program when the capture found every one) or within the
//! kernel, an `#if` around or within the kernel, a program-scope `__global` variable, C++ for
//! OpenCL, inline assembly, a kernel defined other than exactly once. A wrong "unwritten"
//! would record stale contents, so every doubt answers "may write"; `cases/` holds programs
//! that hide a write from a naive scan, each a test.
//!
//! Invariants:
//! * Pure: text in, flags out; nothing here calls OpenCL or allocates more than the tokens.
//! * "Unwritten" is only said of a name that is a parameter of the one definition found.

mod expand;
mod lex;
#[cfg(test)]
mod tests;
mod uses;

use lex::{closing, lex, lex_into, Define, Tok};
use uses::{read_only_use, Context};

/// The files a program included, as the capture's build-time scan found them.
pub struct Headers<'a> {
    /// The text of each file, once.
    pub texts: Vec<&'a [u8]>,
    /// How many `#include` directives the scan followed: fewer than this scan sees in the
    /// same text means one escaped it, and every parameter "may write".
    pub directives: usize,
}

/// For each of `params` (names as `CL_KERNEL_ARG_NAME` gives them), whether kernel `kernel`
/// of the program made of `sources` (concatenated as `clCreateProgramWithSource` does) and
/// built with `options` provably never writes through it. `headers`: every file the program
/// includes, directly or not, when all were found (None: an `#include` answers "may write"
/// for every parameter). Empty names answer false.
pub fn unwritten(
    sources: &[&[u8]],
    headers: Option<&Headers>,
    options: &str,
    kernel: &str,
    params: &[&str],
) -> Vec<bool> {
    let no = vec![false; params.len()];
    // Options that define, undefine or include what this scan cannot see, and C++ for
    // OpenCL (references: `int &r = p[i]; r = 1;`), are not read.
    let lower = options.to_ascii_lowercase();
    let unread_options = [
        "##",
        "c++",
        "-include",
        "-imacros",
        "--define",
        "-u",
        "\"",
        "'",
        "{",
        "}",
        "$",
        "-xclang",
        "-wp",
        "@",
        "\\",
        "clcpp",
        "-x",
        "-fms",
        // OpenCL C 2.0 and 3.0 allow program-scope and `static` pointers to global memory,
        // which carry a pointer from one launch to another unnamed.
        "-cl-std=cl2",
        "-cl-std=cl3",
    ];
    if unread_options.iter().any(|o| lower.contains(o)) {
        return no;
    }
    let Some(mut lexed) = lex(&sources.concat()) else {
        return no;
    };
    for h in headers.map(|h| h.texts.as_slice()).unwrap_or_default() {
        // A header's text after the program's: its macros count as defined after every
        // kernel (never expanded), its `#include`s are counted with the program's.
        if lex_into(&mut lexed, h).is_none() {
            return no;
        }
    }
    let includes_seen = match headers {
        None => lexed.includes == 0,
        Some(h) => lexed.includes <= h.directives,
    };
    if lexed.blocked || !includes_seen {
        return no;
    }
    // A macro named like the kernel renames it; one whose text names it may define it.
    if lexed
        .defines
        .iter()
        .any(|d| d.name == kernel || d.mentions(kernel))
    {
        return no;
    }
    let Some((params_range, body)) = definition(&lexed.tokens, kernel) else {
        return no;
    };
    // A parameter list that names none of the parameters (one a macro spells, as hashcat's
    // `KERN_ATTR_VECTOR ()`) answers "may write" for each: nothing more to read.
    let params_toks = &lexed.tokens[params_range.clone()];
    if !params
        .iter()
        .any(|p| !p.is_empty() && params_toks.iter().any(|t| t.is_ident(p)))
    {
        return no;
    }
    // The kernel's name once in the text, outside any parentheses or braces: a second
    // mention (`KERNEL(k)`, `(k)(…)`, a decoy in a macro's ignored argument) could be the
    // definition the compiler keeps.
    let name_at = params_range.start - 2;
    let mentions_of_name = lexed.tokens.iter().filter(|t| t.is_ident(kernel)).count();
    let nested = lexed.tokens[..name_at]
        .iter()
        .fold(0i64, |depth, t| match t {
            Tok::Punct("(" | "{") => depth + 1,
            Tok::Punct(")" | "}") => depth - 1,
            _ => depth,
        });
    if mentions_of_name != 1 || nested != 0 {
        return no;
    }
    // An `#include` from the kernel's name to the end of its body brings code this scan did
    // not place there; an `#if` around or inside the kernel may drop what this scan reads
    // (`#if 0` … `}` …), or hide another definition.
    let within = |at: usize| at >= name_at && at <= body.end;
    let depth_at_name: i64 = lexed
        .conditionals
        .iter()
        .filter(|(at, _)| *at <= name_at)
        .map(|(_, d)| d)
        .sum();
    if lexed.include_at.iter().any(|&at| within(at))
        || lexed.conditionals.iter().any(|(at, _)| within(*at))
        || depth_at_name > 0
    {
        return no;
    }
    let option_macros = option_macros(options);
    // A macro is expanded in the kernel's body when every definition of its name comes
    // before the body, outside any `#if`, and says the same, no `#undef` of it follows one,
    // and no `-D` option defines it too; the others stay names whose arguments may be
    // written, and whatever they name (through other macros too) may be written.
    let expandable = |d: &Define| {
        let same_name = || lexed.defines.iter().filter(|e| e.name == d.name);
        let first = same_name().map(|e| e.seq).min().unwrap_or(d.seq);
        !d.unusual
            && !option_macros.contains(&d.name)
            && same_name().all(|e| e.at <= body.start && e.params == d.params && e.body == d.body)
            && !lexed
                .undefs
                .iter()
                .any(|(n, seq)| *n == d.name && *seq > first)
    };
    let (expanded, kept): (Vec<&Define>, Vec<&Define>) =
        lexed.defines.iter().partition(|d| expandable(d));
    // Every macro name stays one whose arguments may be written: one left in the expanded
    // body was not expanded there (a macro is not expanded inside its own replacement).
    let mut macros: Vec<&str> = lexed.defines.iter().map(|d| d.name.as_str()).collect();
    macros.extend(option_macros.iter().map(String::as_str));
    let Some(toks) = expand::expand(&lexed.tokens[body.clone()], &expanded) else {
        return no;
    };
    // A function or macro of the program that could be named like a `vload` built-in: a
    // `vload…` name outside every function body, or in any macro.
    let vload_named = |t: &Tok| t.ident().is_some_and(|n| n.contains("vload"));
    let mut user_vload = lexed
        .defines
        .iter()
        .any(|d| d.name.contains("vload") || d.body.iter().any(vload_named));
    // Outside every function body, in one pass: a program-scope variable in the global
    // address space (OpenCL 2.0) can hold a pointer a launch stored (`gptr = p;`) for another
    // to write through (every parameter may be written, named or not); a `vload…` name there
    // is the program's own function.
    let (mut braces, mut parens) = (0usize, 0usize);
    for t in &lexed.tokens {
        match t {
            Tok::Punct("{") => braces += 1,
            Tok::Punct("}") => braces = braces.saturating_sub(1),
            Tok::Punct("(") => parens += 1,
            Tok::Punct(")") => parens = parens.saturating_sub(1),
            Tok::Ident(n) if braces == 0 && parens == 0 && (n == "global" || n == "__global") => {
                return no;
            }
            t if braces == 0 && vload_named(t) => user_vload = true,
            _ => {}
        }
    }
    // A cast to a global pointer (`(__global float *)addr[0]`) makes a pointer from a number
    // another launch may have taken from any buffer: every parameter may be written.
    if casts_to_global_pointer(&lexed.tokens) {
        return no;
    }
    let cx = Context {
        macros: &macros,
        builtin_vload: !user_vload,
    };
    // Inline assembly's operands can be written in ways that read like values.
    if toks.iter().any(|t| {
        t.ident()
            .is_some_and(|n| n.trim_start_matches('_').starts_with("asm"))
    }) {
        return no;
    }
    let whole = 0..toks.len();
    params
        .iter()
        .map(|&p| {
            let reaching = reaching(&lexed.defines, p);
            !p.is_empty()
                && params_toks.iter().any(|t| t.is_ident(p))
                && !kept.iter().any(|d| reaching.contains(&d.name.as_str()))
                && !lexed.defines.iter().any(|d| d.name == p)
                && !mentions(options, p)
                && !reaching.iter().any(|m| mentions(options, m))
                && whole
                    .clone()
                    .filter(|&i| toks[i].is_ident(p))
                    .all(|i| read_only_use(&toks, whole.clone(), i, &cx))
        })
        .collect()
}

/// Whether the program casts to a `__global` pointer anywhere: a parenthesised group that
/// starts with `global`/`__global`, holds no `,`, and ends with `*` and qualifiers only (a
/// parameter list ends with a name instead).
fn casts_to_global_pointer(toks: &[Tok]) -> bool {
    toks.iter().enumerate().any(|(i, t)| {
        let opens_global = t.is("(")
            && toks
                .get(i + 1)
                .is_some_and(|g| g.is_ident("global") || g.is_ident("__global"));
        if !opens_global {
            return false;
        }
        let Some(close) = closing(toks, i) else {
            return true;
        };
        let group = &toks[i + 1..close];
        let qualifier = |t: &Tok| {
            t.ident()
                .is_some_and(|n| matches!(n, "const" | "restrict" | "volatile" | "__restrict"))
        };
        !group.iter().any(|t| t.is(","))
            && group
                .iter()
                .rev()
                .find(|t| !qualifier(t))
                .is_some_and(|t| t.is("*"))
    })
}

/// The macros whose expansion can produce `name`: those that mention it, and those that
/// mention one of them, to any depth.
fn reaching<'a>(defines: &'a [Define], name: &str) -> Vec<&'a str> {
    let mut found: Vec<&str> = Vec::new();
    loop {
        let before = found.len();
        for d in defines {
            if !found.contains(&d.name.as_str())
                && (d.mentions(name) || found.iter().any(|f| d.mentions(f)))
            {
                found.push(&d.name);
            }
        }
        if found.len() == before {
            return found;
        }
    }
}

/// Names defined by `-D` options (`-D NAME`, `-DNAME=…`, `-DNAME(x)=…`).
fn option_macros(options: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = options;
    while let Some(at) = rest.find("-D") {
        rest = rest[at + 2..].trim_start();
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            names.push(name);
        }
    }
    names
}

/// Whether `name` occurs in `text` as a whole identifier.
fn mentions(text: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(is_ident)
            && !text[at + name.len()..].chars().next().is_some_and(is_ident)
    })
}

/// The one definition of function `name`: the range of its parameter tokens and of its body's
/// (between the braces). None unless exactly one definition is found.
fn definition(
    toks: &[Tok],
    name: &str,
) -> Option<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    let mut found = None;
    for i in 0..toks.len().saturating_sub(1) {
        if !toks[i].is_ident(name) || !toks[i + 1].is("(") {
            continue;
        }
        let close = closing(toks, i + 1)?;
        let mut k = close + 1;
        // `__attribute__((…))` between the parameters and the body.
        while toks.get(k).is_some_and(|t| t.is_ident("__attribute__")) {
            k = closing(toks, k + 1)? + 1;
        }
        if toks.get(k).is_some_and(|t| t.is("{")) {
            let end = closing(toks, k)?;
            if found.is_some() {
                return None;
            }
            found = Some((i + 2..close, k + 1..end));
        }
    }
    found
}
