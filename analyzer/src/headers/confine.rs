//! What the compiler opens: the last check of every text handed to it ([`confine_includes`]).
//!
//! The rewriting above finds directives the way the capture's scanner does; what the compiler
//! opens is decided by clang's lexer, which sees more: `??=` and `%:` for `#`, line splices
//! anywhere (inside a directive's name or its file name), comments between `#` and the name,
//! `#import` and `#include_next`, a lone `\r` as a line end, `\"` inside a file name, names
//! made by macros. So the text handed to the compiler (or to libclang) is checked last, on
//! clang's terms, without trusting what the rewriting recognised: every directive that opens
//! a file must name the mirror, the sentinel, or a relative name without `..`, as a plain
//! `"quoted"` or `<angled>` name; anything else is refused in place.

use super::UNRECORDED;
use std::path::{Component, Path};

/// Directives that make clang open the file they name (`embed` from clang 19 on;
/// `__include_macros`, which clang refuses outside its own predefines, checked all the same).
pub(super) const FILE_DIRECTIVES: [&str; 5] = [
    "include",
    "include_next",
    "import",
    "embed",
    "__include_macros",
];

/// Operators of `#if` that look a file up (`open`) where they are evaluated.
pub(super) const FILE_QUERIES: [&str; 3] = ["__has_include", "__has_include_next", "__has_embed"];

/// The spellings of the assembly keyword, which a build for a CPU device defines away
/// (`executor::cpu_code`): a text may not define or undefine them back.
pub const ASM_WORDS: [&str; 3] = ["asm", "__asm", "__asm__"];

/// How every refusal written into a text begins.
pub(super) const REFUSED: &str = "cltrap refuses";

/// Passes of [`confine_includes`] before a text whose refusals keep uncovering more is
/// refused whole.
pub(super) const CONFINE_PASSES: usize = 4;

/// `text` with nothing the compiler would open outside the mirror (`root`; `None`: no
/// mirror, so only relative names and [`UNRECORDED`] pass). Found as clang's lexer reads
/// the text ([`Lexed`]), in every directive whose name is one of [`FILE_DIRECTIVES`]:
/// - a plain `"name"` or `<name>` that is absolute outside `root` or has a `..` is pointed
///   at [`UNRECORDED`] (the build fails there, as for an unrecorded escaping include);
/// - any other operand (a macro the capture did not resolve, a name the line does not
///   close) replaces the directive's `#name` with `#error "cltrap refuses ... on line N:
///   ..."`, so the build stops with that sentence, and no search happens;
/// - `#pragma` naming `dependency` (which opens its file), `include_alias` or `__debug`
///   (which crashes the compiler on request) is refused the same way; `dependency` and
///   `__debug` after `GCC`/`clang` anywhere else (a `_Pragma` string, a macro's
///   arguments) become `error`, which fails the build without opening anything;
/// - `__has_include("...")` (and kin) with an escaping name is pointed at [`UNRECORDED`];
///   with any other operand the operator is renamed, so `#if` fails on it;
/// - `#define` or `#undef` of a spelling of the assembly keyword ([`ASM_WORDS`]) is refused
///   the same way, so the definitions a CPU device's build adds stay.
///
/// Lines keep their numbers: a replaced stretch that held line ends keeps them as splices.
/// Every replacement is checked again; a text that still needs edits after
/// [`CONFINE_PASSES`] passes is replaced whole by one `#error`.
pub(super) fn confine_includes(text: &[u8], root: Option<&Path>) -> Vec<u8> {
    if text.len() >= u32::MAX as usize {
        return refused_whole(text);
    }
    let mut text = std::borrow::Cow::Borrowed(text);
    for _ in 0..CONFINE_PASSES {
        match file_edits(&text, root) {
            Some(edits) if edits.is_empty() => return text.into_owned(),
            Some(edits) => text = std::borrow::Cow::Owned(apply_edits(&text, edits)),
            None => break,
        }
    }
    match file_edits(&text, root) {
        Some(edits) if edits.is_empty() => text.into_owned(),
        _ => refused_whole(&text),
    }
}

/// One `#error` line in place of all of `text`, its line ends kept.
pub(super) fn refused_whole(text: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "#error \"{REFUSED} this source: its include directives could not be confined to the captured headers\""
    )
    .into_bytes();
    out.extend(std::iter::repeat_n(b'\n', line_breaks(text)));
    out
}

/// A replacement of `range` of a text.
#[derive(Debug)]
pub(super) struct Edit {
    range: std::ops::Range<usize>,
    with: String,
}

/// `text` with `edits` made (overlapping ones merged into the first), each replaced
/// stretch's line ends kept as line splices after its replacement.
fn apply_edits(text: &[u8], mut edits: Vec<Edit>) -> Vec<u8> {
    edits.sort_by_key(|e| (e.range.start, e.range.end));
    let mut out = Vec::with_capacity(text.len() + 128 * edits.len());
    let mut at = 0;
    let mut i = 0;
    while i < edits.len() {
        let (start, mut end) = (edits[i].range.start.max(at), edits[i].range.end);
        let with = edits[i].with.as_bytes();
        i += 1;
        while i < edits.len() && edits[i].range.start < end {
            end = end.max(edits[i].range.end);
            i += 1;
        }
        let end = end.max(start);
        out.extend_from_slice(&text[at..start]);
        out.extend_from_slice(with);
        for _ in 0..line_breaks(&text[start..end]) {
            out.extend_from_slice(b"\\\n");
        }
        at = end;
    }
    out.extend_from_slice(&text[at..]);
    out
}

/// Line ends in `text` (`\n`, `\r\n`, or a lone `\r`).
pub(super) fn line_breaks(text: &[u8]) -> usize {
    text.iter()
        .enumerate()
        .filter(|&(i, &b)| b == b'\n' || (b == b'\r' && text.get(i + 1) != Some(&b'\n')))
        .count()
}

/// The 1-based line of byte `at` of `text` (line ends as [`line_breaks`] counts them).
fn line_number(text: &[u8], at: usize) -> usize {
    line_breaks(&text[..at.min(text.len())]) + 1
}

/// A text as clang's lexer reads it: trigraphs replaced (also one split by splices, which
/// clang does not do), backslash-newline splices removed (blanks allowed between the two, as
/// clang allows); each character with the stretch of the text it came from.
pub(super) struct Lexed {
    pub(super) chars: Vec<u8>,
    from: Vec<u32>,
    to: Vec<u32>,
}

impl Lexed {
    pub(super) fn new(text: &[u8]) -> Lexed {
        let mut l = Lexed {
            chars: Vec::with_capacity(text.len()),
            from: Vec::with_capacity(text.len()),
            to: Vec::with_capacity(text.len()),
        };
        let mut i = 0;
        while i < text.len() {
            let c = text[i];
            if c == b'\\' {
                let s = splice_len(text, i + 1);
                if s > 0 {
                    i += 1 + s;
                    continue;
                }
            }
            if c == b'?' {
                if let Some((j, b'?')) = past_splices(text, i + 1) {
                    if let Some((k, t)) = past_splices(text, j + 1) {
                        if let Some(m) = trigraph(t) {
                            let s = if m == b'\\' {
                                splice_len(text, k + 1)
                            } else {
                                0
                            };
                            if s > 0 {
                                i = k + 1 + s;
                            } else {
                                l.push(m, i, k + 1);
                                i = k + 1;
                            }
                            continue;
                        }
                    }
                }
            }
            l.push(c, i, i + 1);
            i += 1;
        }
        l
    }

    fn push(&mut self, c: u8, from: usize, to: usize) {
        self.chars.push(c);
        self.from.push(from as u32);
        self.to.push(to as u32);
    }

    /// The stretch of the text characters `a..b` came from (`a < b`).
    fn span(&self, a: usize, b: usize) -> std::ops::Range<usize> {
        self.from[a] as usize..self.to[b - 1] as usize
    }
}

/// After a backslash at `i - 1`: the length of blanks and one line end (`\n`, `\r`, `\r\n`
/// or `\n\r`), or 0 when that is not a line splice.
fn splice_len(text: &[u8], i: usize) -> usize {
    let mut j = i;
    while j < text.len() && matches!(text[j], b' ' | b'\t' | 0x0b | 0x0c) {
        j += 1;
    }
    match text.get(j) {
        Some(&e @ (b'\n' | b'\r')) => {
            let pair = matches!(text.get(j + 1), Some(&o @ (b'\n' | b'\r')) if o != e);
            j + 1 + usize::from(pair) - i
        }
        _ => 0,
    }
}

/// The first byte at or after `i` that is not part of a line splice, and where it is.
fn past_splices(text: &[u8], mut i: usize) -> Option<(usize, u8)> {
    loop {
        let c = *text.get(i)?;
        if c == b'\\' {
            let s = splice_len(text, i + 1);
            if s > 0 {
                i += 1 + s;
                continue;
            }
        }
        return Some((i, c));
    }
}

/// The character the trigraph `??c` stands for.
fn trigraph(c: u8) -> Option<u8> {
    Some(match c {
        b'=' => b'#',
        b'/' => b'\\',
        b'\'' => b'^',
        b'(' => b'[',
        b')' => b']',
        b'!' => b'|',
        b'<' => b'{',
        b'>' => b'}',
        b'-' => b'~',
        _ => return None,
    })
}

/// The length of the blank at `i` (0: none): space, tab, form feed, vertical tab, NUL (clang
/// ignores it), or a Unicode space (clang treats some as blanks; all of these are taken).
fn blank_len(c: &[u8], i: usize) -> usize {
    let at = |k: usize| c.get(i + k).copied();
    match (at(0), at(1), at(2)) {
        (Some(b' ' | b'\t' | 0x0b | 0x0c | 0), _, _) => 1,
        (Some(0xC2), Some(0x85 | 0xA0), _) => 2,
        (Some(0xE1), Some(0x9A), Some(0x80))
        | (Some(0xE1), Some(0xA0), Some(0x8E))
        | (Some(0xE2), Some(0x80), Some(0x80..=0x8D | 0xA8 | 0xA9 | 0xAF))
        | (Some(0xE2), Some(0x81), Some(0x9F | 0xA0))
        | (Some(0xE3), Some(0x80), Some(0x80))
        | (Some(0xEF), Some(0xBB), Some(0xBF)) => 3,
        _ => 0,
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Where the word (ASCII letters, digits, `_`) at `i` ends.
fn word_end(c: &[u8], mut i: usize) -> usize {
    while i < c.len() && is_word_byte(c[i]) {
        i += 1;
    }
    i
}

/// The characters of a [`Lexed`] text and where its comments close; the steps its scans
/// may still take (a text made to send them over the same stretch again and again runs out,
/// and is refused whole).
struct Scan<'a> {
    c: &'a [u8],
    /// Every `*/`, in order.
    closes: Vec<usize>,
    budget: std::cell::Cell<usize>,
}

impl<'a> Scan<'a> {
    fn new(c: &'a [u8]) -> Scan<'a> {
        let closes = c
            .windows(2)
            .enumerate()
            .filter(|(_, w)| *w == b"*/")
            .map(|(i, _)| i)
            .collect();
        Scan {
            c,
            closes,
            budget: std::cell::Cell::new(c.len().saturating_mul(16).saturating_add(1 << 20)),
        }
    }

    /// Takes one step: false when none are left.
    fn step(&self) -> bool {
        let left = self.budget.get();
        self.budget.set(left.saturating_sub(1));
        left > 0
    }

    fn exhausted(&self) -> bool {
        self.budget.get() == 0
    }

    /// The first `*/` at or after `i`.
    fn close_from(&self, i: usize) -> Option<usize> {
        self.closes
            .get(self.closes.partition_point(|&q| q < i))
            .copied()
    }

    fn is(&self, i: usize, s: &[u8]) -> bool {
        self.c.get(i..i + s.len()) == Some(s)
    }

    /// Past blanks and block comments (which may span lines) from `i`.
    fn blank(&self, mut i: usize) -> usize {
        while self.step() {
            let b = blank_len(self.c, i);
            if b > 0 {
                i += b;
            } else if self.is(i, b"/*") {
                match self.close_from(i + 2) {
                    Some(q) => i = q + 2,
                    None => return self.c.len(),
                }
            } else {
                return i;
            }
        }
        i
    }

    /// Past blanks and block comments from `i`, staying before `end` (a line's end): `None`
    /// when a comment runs past it.
    fn blank_in_line(&self, mut i: usize, end: usize) -> Option<usize> {
        while self.step() {
            let b = blank_len(self.c, i);
            if i < end && b > 0 {
                i += b;
            } else if i < end && self.is(i, b"/*") {
                match self.close_from(i + 2) {
                    Some(q) if q + 2 <= end => i = q + 2,
                    _ => return None,
                }
            } else {
                return Some(i);
            }
        }
        None
    }

    /// `"..."` or `<...>` at `i` as clang lexes a file name (a backslash keeps the next
    /// character inside; the line must close it): its range, delimiters included.
    fn literal(&self, i: usize) -> Option<std::ops::Range<usize>> {
        let close = match self.c.get(i)? {
            b'"' => b'"',
            b'<' => b'>',
            _ => return None,
        };
        let mut j = i + 1;
        while self.step() {
            match *self.c.get(j)? {
                b'\n' | b'\r' => return None,
                b'\\' => {
                    if matches!(self.c.get(j + 1), None | Some(b'\n' | b'\r')) {
                        return None;
                    }
                    j += 2;
                }
                b if b == close => return Some(i..j + 1),
                _ => j += 1,
            }
        }
        None
    }

    /// The words of a directive from `i` to its end (the first line end outside a block
    /// comment), outside comments and string or character literals.
    fn directive_words(&self, mut i: usize) -> Vec<&'a [u8]> {
        let c = self.c;
        let mut words = Vec::new();
        while i < c.len() && self.step() {
            match c[i] {
                b'\n' | b'\r' => break,
                b'/' if self.is(i, b"/*") => match self.close_from(i + 2) {
                    Some(q) => i = q + 2,
                    None => break,
                },
                b'/' if self.is(i, b"//") => break,
                q @ (b'"' | b'\'') => {
                    i += 1;
                    while i < c.len() && c[i] != q && c[i] != b'\n' && c[i] != b'\r' && self.step()
                    {
                        i += if c[i] == b'\\' { 2 } else { 1 };
                    }
                    i += 1;
                }
                b if is_word_byte(b) => {
                    let e = word_end(c, i);
                    words.push(&c[i..e]);
                    i = e;
                }
                _ => i += 1,
            }
        }
        words
    }

    /// The word before `i`, past anything that is not a word (blanks, line ends, quotes,
    /// backslashes, punctuation, block comments) when `loose`, else past blanks, line ends,
    /// `(` and block comments only; and where it starts.
    fn word_before(&self, mut i: usize, loose: bool) -> Option<(usize, &'a [u8])> {
        let c = self.c;
        while self.step() {
            if i >= 3 && self.is(i - 2, b"*/") {
                // Back to the `/*` that this closes (the last one before it), if any.
                let mut open = i - 3;
                while !self.is(open, b"/*") && open > 0 && self.step() {
                    open -= 1;
                }
                if self.is(open, b"/*") {
                    i = open;
                    continue;
                }
            }
            let b = *c.get(i.checked_sub(1)?)?;
            let skip = if loose {
                !is_word_byte(b)
            } else {
                matches!(b, b' ' | b'\t' | 0x0b | 0x0c | 0 | b'\n' | b'\r' | b'(') || b >= 0x80
            };
            if !skip {
                break;
            }
            i -= 1;
        }
        let end = i;
        while i > 0 && is_word_byte(c[i - 1]) {
            i -= 1;
        }
        (i < end).then(|| (i, &c[i..end]))
    }
}

/// `#` or the digraph `%:` at `i`: its length.
fn hash_len(c: &[u8], i: usize) -> Option<usize> {
    match (c.get(i), c.get(i + 1)) {
        (Some(b'#'), _) => Some(1),
        (Some(b'%'), Some(b':')) => Some(2),
        _ => None,
    }
}

/// Whether clang may open the file `name` (as written between its delimiters): the
/// sentinel, a copy below `root` (no `..` after it), or a relative name without `..`
/// (searched in the mirrored directories).
pub(super) fn confined(name: &[u8], root: Option<&Path>) -> bool {
    use std::os::unix::ffi::OsStrExt;
    if name == UNRECORDED.as_bytes() {
        return true;
    }
    let path = Path::new(std::ffi::OsStr::from_bytes(name));
    let climbs = |p: &Path| p.components().any(|c| c == Component::ParentDir);
    if !path.is_absolute() {
        return !climbs(path);
    }
    match root.map(|r| path.strip_prefix(r)) {
        Some(Ok(rest)) => !climbs(rest) && rest.components().next().is_some(),
        _ => false,
    }
}

/// The edits [`confine_includes`] makes to `text` in one pass (`None`: the scan ran out of
/// steps; the text is refused whole).
pub(super) fn file_edits(text: &[u8], root: Option<&Path>) -> Option<Vec<Edit>> {
    let lx = Lexed::new(text);
    let c = &lx.chars[..];
    let scan = Scan::new(c);
    let mut edits = Vec::new();
    let sentinel = |range| Edit {
        range,
        with: format!("\"{UNRECORDED}\""),
    };
    // Directives. A `#` opens one where the line starts, past blanks and comments; the line
    // may also start inside a block comment (as far as this scan, which does not follow
    // comments from line to line, knows), so a `#` after the line's first `*/` counts too.
    let mut start = 0;
    while start <= c.len() {
        let end = c[start..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
            .map_or(c.len(), |p| start + p);
        let mut hashes = Vec::with_capacity(2);
        hashes.extend(scan.blank_in_line(start, end));
        if let Some(q) = scan.close_from(start).filter(|&q| q + 2 <= end) {
            hashes.extend(
                scan.blank_in_line(q + 2, end)
                    .filter(|p| !hashes.contains(p)),
            );
        }
        for p in hashes {
            let Some(h) = hash_len(c, p) else { continue };
            let name_at = scan.blank(p + h);
            let name_end = word_end(c, name_at);
            let name = &c[name_at..name_end];
            let refuse = |what: &str, why: &str| Edit {
                range: lx.span(p, name_end),
                with: format!(
                    "#error \"{REFUSED} the {what} directive on line {}: {why}\"",
                    line_number(text, lx.from[p] as usize)
                ),
            };
            if let Some(d) = FILE_DIRECTIVES.iter().find(|d| d.as_bytes() == name) {
                match scan.literal(scan.blank(name_end)) {
                    Some(lit) => {
                        if !confined(&c[lit.start + 1..lit.end - 1], root) {
                            edits.push(sentinel(lx.span(lit.start, lit.end)));
                        }
                    }
                    None => edits.push(refuse(
                        d,
                        "its file is named by a macro or other text, not by a plain quoted or \
                         angled name of a header the capture recorded",
                    )),
                }
            } else if (name == b"define" || name == b"undef")
                && ASM_WORDS.iter().any(|w| {
                    let at = scan.blank(name_end);
                    w.as_bytes() == &c[at..word_end(c, at)]
                })
            {
                edits.push(refuse(
                    std::str::from_utf8(name).unwrap_or("define"),
                    "it redefines the assembly keyword, which a build for a CPU device defines \
                     away (its kernels run in cltrap's own process)",
                ));
            } else if name == b"pragma"
                && scan
                    .directive_words(name_end)
                    .iter()
                    .any(|w| matches!(*w, b"dependency" | b"include_alias" | b"__debug"))
            {
                edits.push(refuse(
                    "pragma",
                    "it names a file outside the captured headers (GCC dependency, \
                     include_alias) or drives the compiler (clang __debug)",
                ));
            }
        }
        start = end + 1;
    }
    // Words anywhere (a macro's body, a `_Pragma` string, a macro's arguments).
    let mut i = 0;
    while i < c.len() {
        if !is_word_byte(c[i]) {
            i += 1;
            continue;
        }
        let e = word_end(c, i);
        let w = &c[i..e];
        if let Some(q) = FILE_QUERIES.iter().find(|q| q.as_bytes() == w) {
            let tested = matches!(
                scan.word_before(i, false),
                Some((
                    _,
                    b"defined" | b"ifdef" | b"ifndef" | b"elifdef" | b"elifndef"
                ))
            );
            let open = scan.blank(e);
            let lit = (c.get(open) == Some(&b'(')).then(|| scan.literal(scan.blank(open + 1)));
            match lit {
                _ if tested => {}
                Some(Some(lit)) => {
                    if !confined(&c[lit.start + 1..lit.end - 1], root) {
                        edits.push(sentinel(lx.span(lit.start, lit.end)));
                    }
                }
                _ => edits.push(Edit {
                    range: lx.span(i, e),
                    with: format!("cltrap_refuses_a_computed_{q}"),
                }),
            }
        } else if w == b"dependency" || w == b"__debug" {
            if let Some((at, before)) = scan.word_before(i, true) {
                if before == b"GCC" || before == b"clang" {
                    if w == b"__debug" {
                        edits.push(Edit {
                            range: lx.span(at, at + before.len()),
                            with: "GCC".into(),
                        });
                    }
                    edits.push(Edit {
                        range: lx.span(i, e),
                        with: "error".into(),
                    });
                }
            }
        }
        i = e;
    }
    (!scan.exhausted()).then_some(edits)
}
