//! The program's text as tokens for [`super::unwritten`]: comments and literals dropped,
//! lines joined as a compiler joins them, preprocessor directives read apart (macro
//! definitions, `#undef`s, `#include`s and conditionals, with where each stands), and every
//! spelling this scan does not read as a compiler would (trigraphs, digraphs, bytes outside
//! ASCII, `##`, `#pragma push_macro`) marked, so that the caller answers "may write".

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
#[derive(Default)]
pub(super) struct Lexed {
    pub(super) tokens: Vec<Tok>,
    /// Every `#define`, in the order of the text.
    pub(super) defines: Vec<Define>,
    /// Every `#undef`: the name, and how many directives come before it.
    pub(super) undefs: Vec<(String, usize)>,
    /// Directives read so far.
    pub(super) directives: usize,
    /// `##` in a directive, or the digraph `%:` (a `#` this scan does not read as one):
    /// tokens this scan cannot follow.
    pub(super) blocked: bool,
    /// `#include` (`#include_next`, `#import`) directives: text this scan sees only if the
    /// caller gave it.
    pub(super) includes: usize,
    /// Where each of them stands (how many of the program's tokens come before it).
    pub(super) include_at: Vec<usize>,
    /// `#if`s open at this point of the text.
    pub(super) conditional: usize,
    /// Every conditional directive: where it stands (tokens before it), and +1 for `#if…`,
    /// -1 for `#endif`, 0 for `#else`/`#elif`.
    pub(super) conditionals: Vec<(usize, i64)>,
}

/// One `#define`.
pub(super) struct Define {
    pub(super) name: String,
    /// The parameters of a function-like macro (None: object-like).
    pub(super) params: Option<Vec<String>>,
    /// `...` among the parameters, or `#` in the body: not expanded here.
    pub(super) unusual: bool,
    pub(super) body: Vec<Tok>,
    /// How many of the program's tokens come before it.
    pub(super) at: usize,
    /// How many directives come before it.
    pub(super) seq: usize,
}

impl Define {
    /// Whether the macro mentions `name` (as a parameter or in its body).
    pub(super) fn mentions(&self, name: &str) -> bool {
        self.params.iter().flatten().any(|p| p == name)
            || self.body.iter().any(|t| t.is_ident(name))
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
pub(super) fn lex(raw: &[u8]) -> Option<Lexed> {
    let mut out = Lexed::default();
    lex_into(&mut out, raw)?;
    Some(out)
}

/// [`lex`] of another file (a header after the program), its tokens and directives added
/// after those `out` holds, in place: megabytes of headers are not copied again per file.
pub(super) fn lex_into(out: &mut Lexed, raw: &[u8]) -> Option<()> {
    // Trigraphs (`??/` is a backslash, `??=` a `#`): text this scan does not translate.
    const TRIGRAPHS: [&[u8]; 9] = [
        b"??=", b"??/", b"??'", b"??(", b"??)", b"??!", b"??<", b"??>", b"??-",
    ];
    // Compared only at a `??`, not nine times at every byte.
    let trigraph = |w: &[u8]| w[0] == b'?' && w[1] == b'?' && TRIGRAPHS.contains(&w);
    if raw.windows(3).any(trigraph) {
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
                // `\n\r` after a backslash is one line end to a compiler, as `\r\n` is.
                Some(b'\n') => {
                    i = next + blanks + 1 + usize::from(raw.get(next + blanks + 1) == Some(&b'\r'));
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
    // A file starts outside every `#if`, whatever the one before left open.
    out.conditional = 0;
    out.tokens.reserve(text.len() / 8);
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
                end_directive(out, d, function_like);
            }
            line_start = true;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() || c == b'\x0B' {
            i += 1;
            continue;
        }
        if c == b'/' && text.get(i + 1) == Some(&b'/') {
            while i < text.len() && text[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && text.get(i + 1) == Some(&b'*') {
            let end = text[i + 2..]
                .windows(2)
                .position(|w| w[0] == b'*' && w[1] == b'/')?;
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
            // ASCII letters, digits, `_` and `$` only: always UTF-8.
            let name = std::str::from_utf8(&text[i..i + len])
                .unwrap_or_default()
                .to_string();
            (Tok::Ident(name), len)
        } else if let Some(p) = PUNCTS
            .iter()
            .find(|p| p.as_bytes()[0] == c && text[i..].starts_with(p.as_bytes()))
        {
            (Tok::Punct(p), p.len())
        } else {
            // A byte outside ASCII in the code (a no-break space, a letter of a name), or a
            // backslash (`\u00e9`, a letter of a name): how a compiler reads it is not this
            // scan's to guess.
            if !c.is_ascii() || c == b'\\' || c.is_ascii_control() {
                out.blocked = true;
            }
            (Tok::Other, 1)
        };
        i += len;
        // Digraphs (`%:` is a `#`, `<%` a `{`): not read as what they stand for here; nor
        // `_Pragma("push_macro(…)")`, a directive in disguise.
        if matches!(tok, Tok::Punct("%:" | "<%" | "%>" | "<:" | ":>"))
            || matches!(&tok, Tok::Ident(n) if n == "_Pragma" || n == "__pragma")
        {
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
        end_directive(out, d, function_like);
    }
    Some(())
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

/// The index of the token closing the bracket opened at `open` (None if it never closes).
pub(super) fn closing(toks: &[Tok], open: usize) -> Option<usize> {
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

/// The innermost `(` left open before token `at`, looking no further back than `start` (for
/// a `)` at `at`: the `(` it closes).
pub(super) fn enclosing(toks: &[Tok], start: usize, at: usize) -> Option<usize> {
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
