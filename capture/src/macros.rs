//! Just enough of the C preprocessor's macro expansion to follow `#include MACRO(...)`.
//!
//! Why: real kernels name their headers through macros. hashcat, for one, writes every
//! include as `#include M2S(INCLUDE_PATH/inc_vendor.h)` with `-D XM2S(x)=#x -D M2S(x)=XM2S(x)
//! -D INCLUDE_PATH=/usr/share/hashcat/OpenCL` in its build options; without expanding them a
//! capture carries none of hashcat's headers, and a replay on a machine without hashcat
//! cannot build the program. The shim must not link libclang, so this is a small expander of
//! its own: object-like and function-like macros (variadic too), `#` stringification, `##`
//! pasting and the rescan rule with hide sets (C11 6.10.3, Prosser's algorithm). What it does
//! not do: conditionals (the scan follows every branch), `defined`, `__FILE__`-style built-in
//! macros. A name it cannot expand to `"file"` or `<file>` is recorded as not followed, as
//! before.
//!
//! Definitions come from the build options (`-D`, `-U`, in order) and from the `#define` /
//! `#undef` lines the include scan meets, in the order it reads them.

use crate::model::IncludeForm;
use std::collections::{HashMap, VecDeque};

/// Expansion stops growing past this many tokens (a runaway or hostile definition).
const MAX_TOKENS: usize = 4096;
/// ... or after this many macro replacements.
const MAX_STEPS: usize = 10_000;

/// One preprocessing token.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tok {
    /// Its spelling.
    text: String,
    /// What kind of token it is.
    kind: Kind,
    /// Whether white space came before it (stringification keeps one space there).
    space: bool,
    /// The macros whose expansion produced it and must not expand it again.
    hide: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ident,
    /// A string or character literal, with its quotes.
    Literal,
    /// A number or anything else.
    Other,
    Punct,
}

impl Tok {
    fn is(&self, p: &str) -> bool {
        self.kind == Kind::Punct && self.text == p
    }
}

/// Splits a line of text into preprocessing tokens (comments are white space).
fn lex(text: &str) -> Vec<Tok> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut space = false;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let kind = match c {
            b' ' | b'\t' | b'\r' | b'\n' | b'\x0b' | b'\x0c' => {
                space = true;
                i += 1;
                continue;
            }
            b'\\' if b.get(i + 1) == Some(&b'\n') => {
                i += 2;
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => break,
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                space = true;
                continue;
            }
            b'"' | b'\'' => {
                i += 1;
                while i < b.len() && b[i] != c {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(b.len());
                Kind::Literal
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                Kind::Ident
            }
            c if c.is_ascii_digit() => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'.' | b'_')) {
                    i += 1;
                }
                Kind::Other
            }
            b'#' if b.get(i + 1) == Some(&b'#') => {
                i += 2;
                Kind::Punct
            }
            b'.' if b.get(i + 1) == Some(&b'.') && b.get(i + 2) == Some(&b'.') => {
                i += 3;
                Kind::Punct
            }
            _ => {
                // One character (whole UTF-8 sequence) per punctuator is enough here.
                i += text[i..].chars().next().map_or(1, char::len_utf8);
                Kind::Punct
            }
        };
        out.push(Tok {
            text: text[start..i].to_string(),
            kind,
            space,
            hide: Vec::new(),
        });
        space = false;
    }
    out
}

/// A macro definition.
#[derive(Debug, Clone)]
struct Def {
    /// `None`: object-like; else the parameter names (`__VA_ARGS__` last when variadic).
    params: Option<Vec<String>>,
    body: Vec<Tok>,
}

/// The macros defined at some point of a build: from its options, then its `#define`s.
#[derive(Debug, Clone, Default)]
pub struct Macros {
    defs: HashMap<String, Def>,
}

impl Macros {
    /// The macros a build's options define (`-D NAME`, `-DNAME=VALUE`, `-D 'F(x)=BODY'`,
    /// `-U NAME`, applied in order, as the driver does).
    pub fn from_options(options: &str) -> Macros {
        let words = crate::options::split_options(options);
        let mut m = Macros::default();
        let mut i = 0;
        while i < words.len() {
            let (flag, arg) = match words[i].as_str() {
                "-D" | "-U" => {
                    i += 1;
                    (words[i - 1].clone(), words.get(i).cloned())
                }
                w if w.starts_with("-D") || w.starts_with("-U") => {
                    (w[..2].to_string(), Some(w[2..].to_string()))
                }
                _ => {
                    i += 1;
                    continue;
                }
            };
            i += 1;
            let Some(arg) = arg else { continue };
            if flag == "-U" {
                m.defs.remove(arg.trim());
                continue;
            }
            // `-D NAME=VALUE` is `#define NAME VALUE`; `-D NAME` is `#define NAME 1`.
            match arg.split_once('=') {
                Some((head, value)) => m.define(&format!("{head} {value}")),
                None => m.define(&format!("{arg} 1")),
            }
        }
        m
    }

    /// Applies a `#define` line (the text after `define`). A malformed one is ignored, as it
    /// would fail the driver's build anyway.
    pub fn define(&mut self, line: &str) {
        let toks = lex(line);
        let Some(name) = toks.first().filter(|t| t.kind == Kind::Ident) else {
            return;
        };
        let name = name.text.clone();
        // A function-like macro's `(` follows its name without white space.
        let function_like = toks.get(1).is_some_and(|t| t.is("(") && !t.space);
        if !function_like {
            let mut body: Vec<Tok> = toks[1..].to_vec();
            if let Some(first) = body.first_mut() {
                first.space = false;
            }
            self.defs.insert(name, Def { params: None, body });
            return;
        }
        let mut params = Vec::new();
        let mut i = 2;
        loop {
            let Some(t) = toks.get(i) else { return };
            i += 1;
            match t.text.as_str() {
                ")" => break,
                "," => {}
                "..." => params.push("__VA_ARGS__".to_string()),
                _ if t.kind == Kind::Ident => params.push(t.text.clone()),
                _ => return,
            }
        }
        let mut body: Vec<Tok> = toks[i..].to_vec();
        if let Some(first) = body.first_mut() {
            first.space = false;
        }
        self.defs.insert(
            name,
            Def {
                params: Some(params),
                body,
            },
        );
    }

    /// Applies an `#undef NAME` line (the text after `undef`).
    pub fn undef(&mut self, line: &str) {
        if let Some(t) = lex(line).first() {
            self.defs.remove(&t.text);
        }
    }

    /// The header an `#include` with `text` after it names once macros are expanded:
    /// `("file", Quoted)` or `("file", Angled)`; `None` when it does not expand to one.
    pub fn include_target(&self, text: &str) -> Option<(String, IncludeForm)> {
        let toks = self.expand(lex(text))?;
        let first = toks.first()?;
        if first.kind == Kind::Literal && first.text.starts_with('"') && toks.len() == 1 {
            // An unterminated literal (`"` alone, `"a.h`) names no file.
            let inner = first
                .text
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))?;
            return (!inner.is_empty()).then(|| (inner.to_string(), IncludeForm::Quoted));
        }
        if first.is("<") && toks.last()?.is(">") && toks.len() > 2 {
            let mut name = String::new();
            for (k, t) in toks[1..toks.len() - 1].iter().enumerate() {
                if k > 0 && t.space {
                    name.push(' ');
                }
                name.push_str(&t.text);
            }
            return Some((name, IncludeForm::Angled));
        }
        None
    }

    /// Expands `toks` completely; `None` past the limits.
    fn expand(&self, toks: Vec<Tok>) -> Option<Vec<Tok>> {
        let mut steps = 0;
        self.expand_counted(toks, &mut steps)
    }

    fn expand_counted(&self, toks: Vec<Tok>, steps: &mut usize) -> Option<Vec<Tok>> {
        let mut input: VecDeque<Tok> = toks.into();
        let mut out = Vec::new();
        while let Some(t) = input.pop_front() {
            if input.len() + out.len() > MAX_TOKENS || *steps > MAX_STEPS {
                return None;
            }
            let def = match self.defs.get(&t.text) {
                Some(d) if t.kind == Kind::Ident && !t.hide.contains(&t.text) => d,
                _ => {
                    out.push(t);
                    continue;
                }
            };
            *steps += 1;
            let replaced = match &def.params {
                None => {
                    let mut hide = t.hide.clone();
                    hide.push(t.text.clone());
                    self.substitute(def, &[], &hide, steps)?
                }
                Some(params) => {
                    if !input.front().is_some_and(|n| n.is("(")) {
                        out.push(t);
                        continue;
                    }
                    let (args, close) = take_arguments(&mut input, params)?;
                    // Hide set: what both the name and the closing parenthesis carry, plus
                    // the name itself.
                    let mut hide: Vec<String> = t
                        .hide
                        .iter()
                        .filter(|h| close.hide.contains(h))
                        .cloned()
                        .collect();
                    hide.push(t.text.clone());
                    self.substitute(def, &args, &hide, steps)?
                }
            };
            let mut replaced = replaced;
            if let Some(first) = replaced.first_mut() {
                first.space = t.space;
            }
            for r in replaced.into_iter().rev() {
                input.push_front(r);
            }
        }
        Some(out)
    }

    /// A definition's body with its parameters replaced by `args` (`#` and `##` applied),
    /// every token hidden from the macros in `hide`.
    fn substitute(
        &self,
        def: &Def,
        args: &[Vec<Tok>],
        hide: &[String],
        steps: &mut usize,
    ) -> Option<Vec<Tok>> {
        let params: &[String] = def.params.as_deref().unwrap_or(&[]);
        let param = |t: &Tok| {
            (t.kind == Kind::Ident)
                .then(|| params.iter().position(|p| *p == t.text))
                .flatten()
        };
        let body = &def.body;
        let mut out: Vec<Tok> = Vec::new();
        let mut i = 0;
        while i < body.len() {
            let t = &body[i];
            if t.is("#") && def.params.is_some() {
                if let Some(p) = body.get(i + 1).and_then(param) {
                    out.push(Tok {
                        text: stringify(&args[p]),
                        kind: Kind::Literal,
                        space: t.space,
                        hide: Vec::new(),
                    });
                    i += 2;
                    continue;
                }
            }
            if t.is("##") {
                // Paste the last token out with the next one (an argument: its first token,
                // unexpanded).
                let Some(next) = body.get(i + 1) else { break };
                let mut right: Vec<Tok> = match param(next) {
                    Some(p) => args[p].clone(),
                    None => vec![next.clone()],
                };
                i += 2;
                if right.is_empty() {
                    continue;
                }
                let first = right.remove(0);
                match out.pop() {
                    Some(left) => {
                        let mut pasted = lex(&format!("{}{}", left.text, first.text));
                        if let Some(p) = pasted.first_mut() {
                            p.space = left.space;
                        }
                        out.extend(pasted);
                    }
                    None => out.push(first),
                }
                out.extend(right);
                continue;
            }
            match param(t) {
                Some(p) => {
                    let before_paste = body.get(i + 1).is_some_and(|n| n.is("##"));
                    let mut arg = if before_paste {
                        args[p].clone()
                    } else {
                        self.expand_counted(args[p].clone(), steps)?
                    };
                    if let Some(first) = arg.first_mut() {
                        first.space = t.space;
                    }
                    out.extend(arg);
                }
                None => out.push(t.clone()),
            }
            i += 1;
        }
        for t in &mut out {
            for h in hide {
                if !t.hide.contains(h) {
                    t.hide.push(h.clone());
                }
            }
        }
        Some(out)
    }
}

/// Takes a function-like macro's arguments from `input` (which starts at its `(`): one token
/// list per parameter (the variadic one takes the rest, commas included) and the `)`.
fn take_arguments(input: &mut VecDeque<Tok>, params: &[String]) -> Option<(Vec<Vec<Tok>>, Tok)> {
    input.pop_front()?; // (
    let variadic = params.last().is_some_and(|p| p == "__VA_ARGS__");
    let mut args: Vec<Vec<Tok>> = vec![Vec::new()];
    let mut depth = 0usize;
    loop {
        let t = input.pop_front()?;
        if t.is(")") && depth == 0 {
            if params.is_empty() && args.len() == 1 && args[0].is_empty() {
                args.clear();
            }
            while args.len() < params.len() {
                args.push(Vec::new());
            }
            return (args.len() == params.len()).then_some((args, t));
        }
        if t.is("(") {
            depth += 1;
        } else if t.is(")") {
            depth -= 1;
        } else if t.is(",") && depth == 0 && !(variadic && args.len() == params.len()) {
            args.push(Vec::new());
            continue;
        }
        args.last_mut()?.push(t);
    }
}

/// `#arg`: the argument's spelling as a string literal (one space where white space was,
/// quotes and backslashes inside literals escaped).
fn stringify(arg: &[Tok]) -> String {
    let mut s = String::from("\"");
    for (k, t) in arg.iter().enumerate() {
        if k > 0 && t.space {
            s.push(' ');
        }
        if t.kind == Kind::Literal {
            for c in t.text.chars() {
                if c == '"' || c == '\\' {
                    s.push('\\');
                }
                s.push(c);
            }
        } else {
            s.push_str(&t.text);
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(options: &str, defines: &[&str], text: &str) -> Option<(String, IncludeForm)> {
        let mut m = Macros::from_options(options);
        for d in defines {
            m.define(d);
        }
        m.include_target(text)
    }

    #[test]
    fn hashcats_stringified_include_path_expands_to_the_header() {
        let opts = "-D KERNEL_STATIC -D INCLUDE_PATH=/usr/share/hashcat/OpenCL \
                    -D XM2S(x)=#x -D M2S(x)=XM2S(x) -D VECT_SIZE=16 -w";
        assert_eq!(
            target(opts, &[], "M2S(INCLUDE_PATH/inc_vendor.h)"),
            Some((
                "/usr/share/hashcat/OpenCL/inc_vendor.h".into(),
                IncludeForm::Quoted
            ))
        );
        // A macro defined in the file to such an invocation (hashcat's COMPARE_M).
        assert_eq!(
            target(
                opts,
                &["COMPARE_M M2S(INCLUDE_PATH/inc_comp_multi.cl)"],
                "COMPARE_M"
            ),
            Some((
                "/usr/share/hashcat/OpenCL/inc_comp_multi.cl".into(),
                IncludeForm::Quoted
            ))
        );
    }

    #[test]
    fn object_like_angled_pasted_and_variadic_names_expand() {
        assert_eq!(
            target("-DHDR='\"cfg.h\"'", &[], "HDR"),
            Some(("cfg.h".into(), IncludeForm::Quoted))
        );
        assert_eq!(
            target("", &["SYS <sys/ types.h>"], "SYS // comment"),
            Some(("sys/ types.h".into(), IncludeForm::Angled))
        );
        assert_eq!(
            target(
                "",
                &[
                    "STR(x) #x",
                    "XSTR(x) STR(x)",
                    "CAT(a,b) a##b",
                    "V(...) XSTR(__VA_ARGS__)"
                ],
                "XSTR(CAT(kern,_v2).h)"
            ),
            Some(("kern_v2.h".into(), IncludeForm::Quoted))
        );
        assert_eq!(
            target("", &["STR(...) #__VA_ARGS__"], "STR(a.h)"),
            Some(("a.h".into(), IncludeForm::Quoted))
        );
        // Stringification keeps one space where there was white space, no more.
        assert_eq!(
            target("", &["S(x) #x"], "S(my   file.h)"),
            Some(("my file.h".into(), IncludeForm::Quoted))
        );
    }

    #[test]
    fn undefined_self_referential_and_malformed_macros_name_nothing() {
        assert_eq!(target("", &[], "NOT_DEFINED"), None);
        assert_eq!(target("-DH='\"a.h\"' -UH", &[], "H"), None);
        // Hide sets stop the recursion: X expands to X once and stops.
        assert_eq!(target("", &["X X"], "X"), None);
        assert_eq!(target("", &["A B", "B A"], "A"), None);
        // A function-like macro without its arguments, or with too many.
        assert_eq!(target("", &["F(x) #x"], "F"), None);
        assert_eq!(target("", &["F(x) #x"], "F(a, b)"), None);
        assert_eq!(target("", &["F(x) #x"], "F(a"), None);
        // An unterminated string literal, alone or with a name, is no file name.
        assert_eq!(target("", &["Q \""], "Q"), None);
        assert_eq!(target("", &["Q \"a.h"], "Q"), None);
        // Exponential growth is cut off, not followed forever.
        let defs = [
            "A0 x",
            "A1 A0 A0",
            "A2 A1 A1",
            "A3 A2 A2",
            "A4 A3 A3",
            "A5 A4 A4",
            "A6 A5 A5",
            "A7 A6 A6",
            "A8 A7 A7",
            "A9 A8 A8",
            "B A9 A9 A9 A9 A9 A9 A9 A9 A9 A9 A9 A9 A9 A9 A9 A9 A9 A9",
        ];
        assert_eq!(target("", &defs, "B"), None);
    }
}
