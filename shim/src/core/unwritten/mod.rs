//! Which pointer parameters a kernel's OpenCL C source never writes through, read from the
//! program's own text: a `__global float *in` that the kernel only indexes to read is as
//! unchanged by a launch as a `const` one, so the capture reads it once (before the launch)
//! instead of twice. Real code often leaves out `const` (Rodinia's Gaussian elimination passes
//! all three matrices without it); each such argument cost a read back and a hash per launch.
//!
//! Job: a conservative token scan, no parser: the program's own macros are expanded in the
//! kernel's body ([`expand`]: those defined before it, alike in every definition, never
//! undefined after, without `#`, `##` or `...`), then a parameter counts as unwritten only
//! when every use of its name is an element read as a value (`name[…]`, `*name`,
//! `*(name + k)`) or the pointer handed to a `vload` function. Anything else (the bare pointer
//! assigned, offset, passed to a function; `&name[i]`; an element assigned, incremented or
//! indexed inside the arguments of a macro not expanded; the name mentioned by such a macro
//! or a `-D` option) counts as a possible write, as does a program that `#include`s a file not
//! given (headers are read with the program when the capture found every one), pastes tokens
//! (`##`), is C++ for OpenCL, or defines the kernel other than exactly once. A wrong
//! "unwritten" would record stale contents, so every doubt answers "may write".
//!
//! Invariants:
//! * Pure: text in, flags out; nothing here calls OpenCL or allocates more than the tokens.
//! * "Unwritten" is only said of a name that is a parameter of the one definition found.

mod expand;

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
        "##", "c++", "-include", "-imacros", "--define", "-u", "\"", "'", "{", "}", "$", "-xclang",
        "-wp", "@", "\\",
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
        let Some(more) = lex(h) else {
            return no;
        };
        lexed.append(more);
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
    // An `#include` from the kernel's name to the end of its body brings code this scan did
    // not place there; an `#if` around or inside the kernel may drop what this scan reads
    // (`#if 0` … `}` …), or hide another definition.
    let name_at = params_range.start - 2;
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
    // A program-scope variable in the global address space (OpenCL 2.0) can hold a pointer a
    // launch stored (`gptr = p;`) for another to write through: every parameter may be
    // written, named or not.
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
            _ => {}
        }
    }
    let mut depth = 0usize;
    let mut user_vload = lexed
        .defines
        .iter()
        .any(|d| d.name.contains("vload") || d.body.iter().any(vload_named));
    for t in &lexed.tokens {
        if t.is("{") {
            depth += 1;
        } else if t.is("}") {
            depth = depth.saturating_sub(1);
        } else if depth == 0 && vload_named(t) {
            user_vload = true;
        }
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
    let params_toks = &lexed.tokens[params_range];
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

/// One token of the program's text (comments and literals reduced to what matters here).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Ident(String),
    Punct(&'static str),
    /// A number, string or character literal, or a byte that is none of the above.
    Other,
}

impl Tok {
    pub(super) fn is_ident(&self, name: &str) -> bool {
        matches!(self, Tok::Ident(n) if n == name)
    }
    pub(super) fn is(&self, p: &str) -> bool {
        matches!(self, Tok::Punct(q) if *q == p)
    }
    pub(super) fn ident(&self) -> Option<&str> {
        match self {
            Tok::Ident(n) => Some(n),
            _ => None,
        }
    }
}

/// The program's tokens outside preprocessor directives, and what the directives say.
struct Lexed {
    tokens: Vec<Tok>,
    /// Every `#define`, in the order of the text.
    defines: Vec<Define>,
    /// Every `#undef`: the name, and how many directives come before it.
    undefs: Vec<(String, usize)>,
    /// Directives read so far.
    directives: usize,
    /// `##` in a directive, or the digraph `%:` (a `#` this scan does not read as one):
    /// tokens this scan cannot follow.
    blocked: bool,
    /// `#include` (`#include_next`, `#import`) directives: text this scan sees only if the
    /// caller gave it.
    includes: usize,
    /// Where each of them stands (how many of the program's tokens come before it).
    include_at: Vec<usize>,
    /// `#if`s open at this point of the text.
    conditional: usize,
    /// Every conditional directive: where it stands (tokens before it), and +1 for `#if…`,
    /// -1 for `#endif`, 0 for `#else`/`#elif`.
    conditionals: Vec<(usize, i64)>,
}

/// One `#define`.
pub(super) struct Define {
    pub(super) name: String,
    /// The parameters of a function-like macro (None: object-like).
    pub(super) params: Option<Vec<String>>,
    /// `...` among the parameters, or `#` in the body: not expanded here.
    unusual: bool,
    pub(super) body: Vec<Tok>,
    /// How many of the program's tokens come before it.
    at: usize,
    /// How many directives come before it.
    seq: usize,
}

impl Define {
    /// Whether the macro mentions `name` (as a parameter or in its body).
    fn mentions(&self, name: &str) -> bool {
        self.params.iter().flatten().any(|p| p == name)
            || self.body.iter().any(|t| t.is_ident(name))
    }
}

impl Lexed {
    /// Adds another file's tokens and directives after these.
    fn append(&mut self, more: Lexed) {
        let (tokens, directives) = (self.tokens.len(), self.directives);
        self.tokens.extend(more.tokens);
        self.defines.extend(more.defines.into_iter().map(|mut d| {
            d.at += tokens;
            d.seq += directives;
            d
        }));
        self.undefs.extend(
            more.undefs
                .into_iter()
                .map(|(n, seq)| (n, seq + directives)),
        );
        self.directives += more.directives;
        self.blocked |= more.blocked;
        self.includes += more.includes;
        self.include_at
            .extend(more.include_at.into_iter().map(|at| at + tokens));
        self.conditionals.extend(
            more.conditionals
                .into_iter()
                .map(|(at, d)| (at + tokens, d)),
        );
    }
}

/// Punctuators, longest first so that `+=` is not read as `+` then `=`.
const PUNCTS: [&str; 53] = [
    "%:", "<%", "%>", "<:", ":>", "<<=", ">>=", "...", "->", "++", "--", "<<", ">>", "<=", ">=",
    "==", "!=", "&&", "||", "*=", "/=", "%=", "+=", "-=", "&=", "^=", "|=", "##", "[", "]", "(",
    ")", "{", "}", ".", "&", "*", "+", "-", "~", "!", "/", "%", "<", ">", "^", "|", "?", ":", ";",
    "=", ",", "#",
];

/// Splits the text into tokens (after joining lines ended by a backslash); None if a comment
/// or literal never ends.
fn lex(raw: &[u8]) -> Option<Lexed> {
    // Trigraphs (`??/` is a backslash, `??=` a `#`): text this scan does not translate.
    const TRIGRAPHS: [&[u8]; 9] = [
        b"??=", b"??/", b"??'", b"??(", b"??)", b"??!", b"??<", b"??>", b"??-",
    ];
    if raw.windows(3).any(|w| TRIGRAPHS.contains(&w)) {
        return None;
    }
    // A byte-order mark at the start is skipped, as compilers do.
    let raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
    // Lines end at `\r\n`, `\n` or a lone `\r`; a backslash ends a line's text when only blanks
    // follow it (compilers join those lines, with a warning).
    let mut text = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let (c, next) = match raw[i] {
            b'\r' if raw.get(i + 1) == Some(&b'\n') => (b'\n', i + 2),
            b'\r' => (b'\n', i + 1),
            c => (c, i + 1),
        };
        if c == b'\\' {
            let blanks = raw[next..]
                .iter()
                .take_while(|b| matches!(b, b' ' | b'\t' | b'\x0B' | b'\x0C'))
                .count();
            match raw.get(next + blanks) {
                Some(b'\n') => {
                    i = next + blanks + 1;
                    continue;
                }
                Some(b'\r') => {
                    i = next + blanks + 1 + usize::from(raw.get(next + blanks + 1) == Some(&b'\n'));
                    continue;
                }
                _ => {}
            }
        }
        text.push(c);
        i = next;
    }
    let mut out = Lexed {
        tokens: Vec::new(),
        defines: Vec::new(),
        undefs: Vec::new(),
        directives: 0,
        blocked: false,
        includes: 0,
        include_at: Vec::new(),
        conditional: 0,
        conditionals: Vec::new(),
    };
    let mut line_start = true;
    // Tokens of the directive being read (None outside one), and whether a `(` follows the
    // name of a `#define` at once (a function-like macro).
    let mut directive: Option<Vec<Tok>> = None;
    let mut function_like = false;
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        if c == b'\n' {
            if let Some(d) = directive.take() {
                end_directive(&mut out, d, function_like);
            }
            line_start = true;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() || c == b'\x0B' {
            i += 1;
            continue;
        }
        if text[i..].starts_with(b"//") {
            while i < text.len() && text[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if text[i..].starts_with(b"/*") {
            let end = text[i + 2..].windows(2).position(|w| w == b"*/")?;
            i += 2 + end + 2;
            continue;
        }
        if c == b'#' && line_start && directive.is_none() {
            directive = Some(Vec::new());
            function_like = false;
            line_start = false;
            i += 1;
            continue;
        }
        line_start = false;
        let (tok, len) = if c == b'"' || c == b'\'' {
            (Tok::Other, literal(&text[i..], c)?)
        } else if c.is_ascii_digit()
            || (c == b'.' && text.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            (Tok::Other, number(&text[i..]))
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            let len = text[i..]
                .iter()
                .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_' || *b == b'$'))
                .unwrap_or(text.len() - i);
            let name = String::from_utf8_lossy(&text[i..i + len]).into_owned();
            (Tok::Ident(name), len)
        } else if let Some(p) = PUNCTS.iter().find(|p| text[i..].starts_with(p.as_bytes())) {
            (Tok::Punct(p), p.len())
        } else {
            // A byte outside ASCII in the code (a no-break space, a letter of a name), or a
            // backslash (`\u00e9`, a letter of a name): how a compiler reads it is not this
            // scan's to guess.
            if !c.is_ascii() || c == b'\\' {
                out.blocked = true;
            }
            (Tok::Other, 1)
        };
        i += len;
        // Digraphs (`%:` is a `#`, `<%` a `{`): not read as what they stand for here; nor
        // `_Pragma("push_macro(…)")`, a directive in disguise.
        if ["%:", "<%", "%>", "<:", ":>"].iter().any(|d| tok.is(d)) || tok.is_ident("_Pragma") {
            out.blocked = true;
        }
        match &mut directive {
            Some(d) => {
                d.push(tok);
                if d.len() == 2 && d[0].is_ident("define") {
                    function_like = text.get(i) == Some(&b'(');
                }
            }
            None => out.tokens.push(tok),
        }
    }
    if let Some(d) = directive.take() {
        end_directive(&mut out, d, function_like);
    }
    Some(out)
}

/// Takes note of one directive's tokens (the `#` already dropped).
fn end_directive(out: &mut Lexed, d: Vec<Tok>, function_like: bool) {
    if d.iter().any(|t| t.is("##")) {
        out.blocked = true;
    }
    let first = d.first().and_then(Tok::ident);
    let delta: Option<i64> = match first {
        Some("if" | "ifdef" | "ifndef") => Some(1),
        Some("elif" | "else" | "elifdef" | "elifndef") => Some(0),
        Some("endif") => Some(-1),
        _ => None,
    };
    if let Some(d) = delta {
        out.conditional = out.conditional.saturating_add_signed(d as isize);
        out.conditionals.push((out.tokens.len(), d));
    }
    // `#pragma push_macro` / `pop_macro` bring back definitions this scan does not track.
    if first == Some("pragma")
        && d.iter()
            .any(|t| t.is_ident("push_macro") || t.is_ident("pop_macro"))
    {
        out.blocked = true;
    }
    match (first, d.get(1).and_then(Tok::ident)) {
        (Some(k), _) if k.starts_with("include") || k == "import" => {
            out.includes += 1;
            out.include_at.push(out.tokens.len());
        }
        (Some("undef"), Some(name)) => out.undefs.push((name.to_string(), out.directives)),
        (Some("define"), Some(name)) => {
            let name = name.to_string();
            let (params, body_at, mut unusual) = if function_like {
                let close = d.iter().position(|t| t.is(")")).unwrap_or(d.len());
                let list = &d[3.min(d.len())..close];
                let names: Vec<String> = list
                    .iter()
                    .filter_map(Tok::ident)
                    .map(str::to_string)
                    .collect();
                let variadic = list.iter().any(|t| t.is("..."));
                (
                    Some(names),
                    (close + 1).min(d.len()),
                    variadic || close == d.len(),
                )
            } else {
                (None, 2, false)
            };
            let body = d[body_at..].to_vec();
            unusual |= body.iter().any(|t| t.is("#")) || out.conditional > 0;
            // A body that opens a bracket it does not close (or the reverse) changes where
            // the kernel's body ends: nothing read from the unexpanded text can be trusted.
            if !balanced(&body) {
                out.blocked = true;
            }
            out.defines.push(Define {
                name,
                params,
                unusual,
                body,
                at: out.tokens.len(),
                seq: out.directives,
            });
        }
        _ => {}
    }
    out.directives += 1;
}

/// Whether every `(`, `[` and `{` of `toks` is closed by its kind, in order.
fn balanced(toks: &[Tok]) -> bool {
    let mut open: Vec<&str> = Vec::new();
    for t in toks {
        match t {
            Tok::Punct(p @ ("(" | "[" | "{")) => open.push(p),
            Tok::Punct(c @ (")" | "]" | "}")) => {
                let want = match *c {
                    ")" => "(",
                    "]" => "[",
                    _ => "{",
                };
                if open.pop() != Some(want) {
                    return false;
                }
            }
            _ => {}
        }
    }
    open.is_empty()
}

/// The length of the string or character literal at the start of `t` (quote `q`).
fn literal(t: &[u8], q: u8) -> Option<usize> {
    let mut i = 1;
    while i < t.len() {
        match t[i] {
            b'\\' => i += 2,
            b'\n' => return None,
            b if b == q => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The length of the number at the start of `t` (a C preprocessing number).
fn number(t: &[u8]) -> usize {
    let mut i = 1;
    while i < t.len() {
        let b = t[i];
        let exponent_sign =
            (b == b'+' || b == b'-') && matches!(t[i - 1], b'e' | b'E' | b'p' | b'P');
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || exponent_sign {
            i += 1;
        } else {
            break;
        }
    }
    i
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

/// The index of the token closing the bracket opened at `open` (None if it never closes).
fn closing(toks: &[Tok], open: usize) -> Option<usize> {
    let (o, c) = match &toks[open] {
        Tok::Punct("(") => ("(", ")"),
        Tok::Punct("[") => ("[", "]"),
        Tok::Punct("{") => ("{", "}"),
        _ => return None,
    };
    let mut depth = 0usize;
    for (i, t) in toks.iter().enumerate().skip(open) {
        if t.is(o) {
            depth += 1;
        } else if t.is(c) {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
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

/// What may follow a value read from `p[…]` (after member and index selections).
const AFTER_READ: [&str; 25] = [
    ")", "]", ";", ",", "+", "-", "*", "/", "%", "<", ">", "<=", ">=", "==", "!=", "&&", "||", "&",
    "|", "^", "?", ":", "<<", ">>", "}",
];

/// Whether the use of the parameter at token `at` (inside `body`) only reads through it.
/// What [`read_only_use`] needs to know of the program besides the tokens.
struct Context<'a> {
    /// Every macro name (defined in the program or by an option).
    macros: &'a [&'a str],
    /// Whether `vload…` names OpenCL's built-ins (no function or macro of the program is
    /// named so).
    builtin_vload: bool,
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

fn read_only_use(toks: &[Tok], body: std::ops::Range<usize>, at: usize, cx: &Context) -> bool {
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

/// The innermost `(` left open before token `at`, looking no further back than `start` (for
/// a `)` at `at`: the `(` it closes).
fn enclosing(toks: &[Tok], start: usize, at: usize) -> Option<usize> {
    let mut depth = 0usize;
    for i in (start..at).rev() {
        if toks[i].is(")") {
            depth += 1;
        } else if toks[i].is("(") {
            if depth == 0 {
                return Some(i);
            }
            depth -= 1;
        }
    }
    None
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

#[cfg(test)]
mod tests {
    use super::{unwritten, Headers};

    fn check(src: &str, kernel: &str, params: &[&str]) -> Vec<bool> {
        unwritten(&[src.as_bytes()], None, "", kernel, params)
    }

    /// Rodinia's Gaussian elimination (`gaussianElim_kernels.cl`, as the project's bench
    /// carries it): Fan1 writes only `m`, Fan2 writes `a` and `b` and only reads `m`.
    #[test]
    fn rodinia_gaussian_elimination() {
        let src = "__kernel void Fan1(__global float *m_dev, __global float *a_dev,\n\
                   __global float *b_dev, const int size, const int t) {\n\
                   int globalId = get_global_id(0);\n\
                   if (globalId < size-1-t) {\n\
                   *(m_dev + size * (globalId + t + 1)+t) = *(a_dev + size * (globalId + t + 1) + t) / *(a_dev + size * t + t);\n\
                   }\n}\n\
                   __kernel void Fan2(__global float *m_dev, __global float *a_dev,\n\
                   __global float *b_dev, const int size, const int t) {\n\
                   int globalId = get_global_id(0); int globalIdx = get_global_id(0);\n\
                   int globalIdy = get_global_id(1);\n\
                   if (globalIdx < size-1-t && globalIdy < size-t) {\n\
                   a_dev[size*(globalIdx+1+t)+(globalIdy+t)] -= m_dev[size*(globalIdx+1+t)+t] * a_dev[size*t+(globalIdy+t)];\n\
                   if(globalIdy == 0){\n\
                   b_dev[globalIdx+1+t] -= m_dev[size*(globalIdx+1+t)+(globalIdy+t)] * b_dev[t];\n\
                   }\n}\n}\n";
        let p = ["m_dev", "a_dev", "b_dev", "size", "t"];
        // Fan1 reads and writes through `*(p + …)`.
        assert_eq!(check(src, "Fan1", &p), [false, true, true, false, false]);
        assert_eq!(check(src, "Fan2", &p), [true, false, false, false, false]);
    }

    #[test]
    fn indexed_reads_count_and_every_kind_of_write_does_not() {
        let reads = "__kernel void k(__global float *in, __global float4 *v, __global float *out) {\n\
                     int i = get_global_id(0);\n\
                     float x = in[i] + (in[i+1]) * -in[i-1] ? in[0] : in[1];\n\
                     float4 y = v[i]; float z = v[i].x + v[i].s0 + vload4(0, in + 4 * i).y;\n\
                     out[i] = x + max(in[i], 0.0f) + (float)in[2] + sizeof(in[0]) + *in + *(in + i * 2);\n}";
        assert_eq!(check(reads, "k", &["in", "v", "out"]), [true, true, false]);
        for write in [
            "in[i] = 1;",
            "in[i] += 1;",
            "in[i]++;",
            "++in[i];",
            "--in[i];",
            "(in[i]) = 2;",
            "((in[i])) *= 2;",
            "in[i] <<= 1;",
            "*in = 3;",
            "*(in + i) = 3;",
            "*(in + i) += 3;",
            "(*in)++;",
            "atomic_inc(&(in[i]));",
            "++(in[i]);",
            "*(in + i++) = 3;",
            "__global float *q = in; q[i] = 1;",
            "helper(in, i);",
            "vstore4(x, 0, in);",
            "atomic_add((__global int *)&in[i], 1);",
            "atomic_inc(in + i);",
            "v[i].x = 1;",
            "v[i].s01 = (float2)(1);",
            "v[i] = 0;",
            "SET(in[i]);",
            "vload4(0, in = in + 1);",
            "in[i] OPERATOR 3;",
        ] {
            let src = format!(
                "#define SET(x) x = 0\n#define OPERATOR =\n\
                 void helper(__global float *p, int i) {{ p[i] = 0; }}\n\
                 __kernel void k(__global float *in, __global float4 *v) {{\n\
                 int i = get_global_id(0); float4 x = 0;\n{write}\n}}"
            );
            let got = check(&src, "k", &["in", "v"]);
            assert!(!(got[0] && got[1]), "{write}: {got:?}");
        }
    }

    #[test]
    fn macros_are_expanded_or_answer_may_write() {
        let kernel = |body: &str| {
            format!("__kernel void k(__global float *in, __global float *out) {{\n{body}\nout[0] = in[0];\n}}")
        };
        let p = ["in", "out"];
        assert_eq!(check(&kernel(""), "k", &p), [true, false]);
        // Expanded: a macro defined once before the kernel, its writes seen through it.
        for (pre, use_) in [
            ("#define W in[1] = 0\n", "W;"),
            ("#define W \\\n in[1] = 0\n", "W;"),
            ("#define SET(x) x = 0\n", "SET(in[2]);"),
            ("#define AT(p, i) (p)[i]\n", "AT(in, 2) += 1;"),
            ("#define PTR(p) p\n", "__global float *q = PTR(in);"),
        ] {
            let src = format!("{pre}{}", kernel(use_));
            assert_eq!(check(&src, "k", &p), [false, false], "{pre}{use_}");
        }
        // clpeak's bandwidth kernels read through nested macros that take the pointer.
        // Macros that parenthesise their parameters.
        let paren = format!(
            "#define AT(p, i) ((p)[i])\n{}",
            kernel("out[1] = AT(in, 2) + *((in)) + *((in) + 1);")
        );
        assert_eq!(check(&paren, "k", &p), [true, false]);
        for write in [
            "(in)[0] = 1;",
            "((in))[0]++;",
            "*((in)) = 1;",
            "f((in));",
            "__global float *q = (in);",
            "(float *)(in);",
        ] {
            assert_eq!(check(&kernel(write), "k", &p), [false, false], "{write}");
        }
        let clpeak = "#define FETCH_2(sum, id, A, jumpBy) sum += A[id]; id += jumpBy; sum += A[id]; id += jumpBy;\n\
                      #define FETCH_4(sum, id, A, jumpBy) FETCH_2(sum, id, A, jumpBy); FETCH_2(sum, id, A, jumpBy);\n\
                      __kernel void bw(__global float *A, __global float *B) {\n\
                      int id = get_global_id(0); float sum = 0;\n\
                      for (int i = 0; i < 4; i++) { FETCH_4(sum, id, A, get_local_size(0)); }\n\
                      B[get_global_id(0)] = sum;\n}";
        assert_eq!(check(clpeak, "bw", &["A", "B"]), [true, false]);
        // As clpeak writes it, `#undef` first: still expanded.
        let undef_first = format!("#undef FETCH_2\n{clpeak}");
        assert_eq!(check(&undef_first, "bw", &["A", "B"]), [true, false]);
        // A definition under `#if` may be the one that counts, or not: not expanded.
        let guarded = format!(
            "#if defined(X)\n#define FETCH_2(sum, id, A, jumpBy) sum += A[id];\n#endif\n{clpeak}"
        );
        assert_eq!(check(&guarded, "bw", &["A", "B"]), [false, false]);
        // Not expanded, so "may write": defined after the kernel, twice, or undefined; with
        // `#` or `...`; from the options; a header (`#include` unknown); token pasting.
        for src in [
            format!("{}\n#define W in[1] = 0\n", kernel("")),
            format!("#define W 1\n#define W in[1] = 0\n{}", kernel("W;")),
            format!(
                "#if A\n#define W 1\n#else\n#define W in[1] = 0\n#endif\n{}",
                kernel("W;")
            ),
            format!(
                "#define W 1\n#undef W\n#define W in[1] = 0\n{}",
                kernel("W;")
            ),
            format!("#define W in[1] = 0\n#undef W\n{}", kernel("")),
            format!("#define S(x) #x\n#define N in\n{}", kernel("S(in[0]);")),
            format!("#define V(...) __VA_ARGS__ = 0\n{}", kernel("V(in[0]);")),
            format!("#define F G\n#define G(x) x = 0\n{}", kernel("F(in[0]);")),
            format!("#define in in\n{}", kernel("")),
            format!("%:define W in[0] = 1\n{}", kernel("W;")),
            format!("#define k k2\n{}", kernel("")),
            format!("#include \"defs.h\"\n{}", kernel("")),
            format!("#define CAT(a, b) a ## b\n{}", kernel("")),
        ] {
            let got = check(&src, "k", &p);
            assert!(!got[0], "{src}: {got:?}");
        }
        let with_option = unwritten(&[kernel("").as_bytes()], None, "-D W=in[1]", "k", &p);
        assert_eq!(with_option, [false, false]);
        let cpp = unwritten(&[kernel("").as_bytes()], None, "-cl-std=CLC++", "k", &p);
        assert_eq!(cpp, [false, false]);
        let opt = unwritten(
            &[kernel("Z(in[0]);").as_bytes()],
            None,
            "-DZ(x)=x=0",
            "k",
            &p,
        );
        assert_eq!(opt, [false, false]);
        // An invocation whose arguments never close, or with too few: give up.
        for src in [
            format!("#define F(a, b) a\n{}", kernel("F(in[0]);")),
            "#define F(a) a\n__kernel void k(__global float *in, __global float *out) { out[0] = F(in[0]; }".to_string(),
        ] {
            assert_eq!(check(&src, "k", &p), [false, false], "{src}");
        }
    }

    /// `cases/`: programs that really write a parameter in ways an earlier version of this
    /// scan missed (a review's findings, each confirmed with clang-15).
    #[test]
    fn programs_that_really_write_answer_may_write() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core/unwritten/cases");
        let mut checked = 0;
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .expect("cases")
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in entries
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "cl"))
        {
            let src = std::fs::read(path).expect("case");
            let meta = std::fs::read_to_string(path.with_extension("cl.meta")).unwrap_or_default();
            let field = |key: &str| {
                meta.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .map(str::to_string)
            };
            let options = field("options=").unwrap_or_default();
            let written = field("written=").unwrap_or_else(|| "in".into());
            let header_texts: Option<Vec<Vec<u8>>> = field("headers=").map(|h| {
                h.split(',')
                    .map(|n| std::fs::read(dir.join(n)).expect("header"))
                    .collect()
            });
            let headers = header_texts.as_ref().map(|t| Headers {
                texts: t.iter().map(Vec::as_slice).collect(),
                directives: std::iter::once(&src)
                    .chain(t)
                    .map(|x| String::from_utf8_lossy(x).matches("#include").count())
                    .sum(),
            });
            let got = unwritten(&[&src], headers.as_ref(), &options, "k", &[&written]);
            assert_eq!(got, [false], "{} writes {written}", path.display());
            checked += 1;
        }
        assert!(checked >= 30, "{checked} cases");
    }

    /// With the headers given, an `#include` no longer blocks; a header's macro that names
    /// the parameter, or a kernel defined in a header, are read as if in the program.
    #[test]
    fn included_headers_are_read_with_the_program() {
        let main = "#include \"defs.h\"\n\
                    __kernel void k(__global float *in, __global float *out) { out[0] = SCALE * in[0]; }";
        let params = ["in", "out"];
        let plain: &[&[u8]] = &[b"#define SCALE 2.0f\n"];
        assert_eq!(
            unwritten(
                &[main.as_bytes()],
                Some(&Headers {
                    texts: plain.to_vec(),
                    directives: 1
                }),
                "",
                "k",
                &params
            ),
            [true, false]
        );
        let naming: &[&[u8]] = &[b"#define SCALE (in[1] = 2.0f)\n"];
        assert_eq!(
            unwritten(
                &[main.as_bytes()],
                Some(&Headers {
                    texts: naming.to_vec(),
                    directives: 1
                }),
                "",
                "k",
                &params
            ),
            [false, false]
        );
        let in_header: &[&[u8]] =
            &[b"__kernel void h(__global float *in, __global float *out) { out[0] = in[0]; }"];
        assert_eq!(
            unwritten(
                &[b"#include \"h.h\"\n"],
                Some(&Headers {
                    texts: in_header.to_vec(),
                    directives: 1
                }),
                "",
                "h",
                &params
            ),
            [true, false]
        );
    }

    #[test]
    fn several_source_strings_comments_and_literals() {
        let a = "// in[0] = 1 in a comment\n/* in[0] = 2; */\n__kernel void k(__global float *in,";
        let b = " __global float *out) { out[0] = in[0]; printf(\"in[0] = %f\", in[0]); }";
        assert_eq!(
            unwritten(&[a.as_bytes(), b.as_bytes()], None, "", "k", &["in", "out"]),
            [true, false]
        );
    }

    #[test]
    fn unknown_kernels_and_names_answer_may_write() {
        let src = "__kernel void k(__global float *in) { float x = in[0]; }";
        assert_eq!(check(src, "other", &["in"]), [false]);
        assert_eq!(check(src, "k", &["", "nope"]), [false, false]);
        let twice = format!("{src}\n{src}");
        assert_eq!(check(&twice, "k", &["in"]), [false]);
        assert_eq!(
            check(
                "__kernel void k(__global float *in) { /* never",
                "k",
                &["in"]
            ),
            [false]
        );
        // A member of the same name is not the parameter.
        let member = "typedef struct { float in[4]; } S;\n\
                      __kernel void k(__global float *in, __global S *s) { s->in[0] = in[0]; }";
        assert_eq!(check(member, "k", &["in", "s"]), [true, false]);
        // Attributes between the parameters and the body.
        let attr = "__kernel void k(__global float *in, __global float *o) __attribute__((reqd_work_group_size(1,1,1))) { o[0] = in[0]; }";
        assert_eq!(check(attr, "k", &["in", "o"]), [true, false]);
    }
}
