//! Scalar arguments shown by value when their recorded type is a typedef the value decoding
//! does not know (`typedef float real;`, CLBlast's `real_arg`): the type clang gives the
//! parameter, parsing the program's own text, decides. Why: the driver reports the type as
//! written, so `list` printed such a `2.5f` as `0x00002040`, in memory order.
//!
//! One parse per program (declarations only), kept for the whole listing.
//!
//! When clang cannot tell (the program does not parse here: a header the capture lacks, a
//! construct libclang refuses), the recorded type name is resolved through the program's own
//! text ([`TextTypes`]): object-like macros (`#define index_type int`, pyopencl's spelling)
//! from its sources, captured headers and `-D` options, and `typedef`s, repeatedly. Why:
//! `list` printed such scalars as raw bytes (`N=0x00100000` for 4096).

use crate::values::format_value;
use cltrap_capture::{Capture, Hash, LaunchRecord};
use std::collections::HashMap;

/// Parameter types per program and kernel, resolved on first need.
#[derive(Default)]
pub struct ParamTypes {
    by_program: HashMap<Hash, Option<HashMap<String, Vec<String>>>>,
    /// Macros and typedefs of each program's text, for types clang did not resolve.
    text: HashMap<Hash, TextTypes>,
}

impl ParamTypes {
    /// The value of launch `l`'s scalar argument `index` (recorded type `type_name`, bytes
    /// `b`), and the resolved type when the recorded one was not enough to decode it.
    pub fn decode(
        &mut self,
        capture: &Capture,
        l: &LaunchRecord,
        index: u32,
        type_name: &str,
        b: &[u8],
    ) -> (String, Option<String>) {
        let shown = format_value(type_name, b);
        if !(shown.starts_with("0x") && shown.len() == 2 + 2 * b.len()) {
            return (shown, None);
        }
        let kernels = self
            .by_program
            .entry(l.program.clone())
            .or_insert_with(|| parameter_types(capture, l));
        let by_clang = kernels
            .as_ref()
            .and_then(|k| k.get(&l.kernel))
            .and_then(|t| t.get(index as usize))
            .map(|ty| (format_value(ty, b), ty.clone()))
            .filter(|(v, _)| !v.starts_with("0x"));
        if let Some((v, ty)) = by_clang {
            return (v, Some(ty));
        }
        let text = self
            .text
            .entry(l.program.clone())
            .or_insert_with(|| TextTypes::of_program(capture, l));
        text.resolve(type_name)
            .map(|ty| (format_value(&ty, b), ty))
            .filter(|(v, _)| !v.starts_with("0x"))
            .map_or((shown, None), |(v, ty)| (v, Some(ty)))
    }
}

/// Object-like macros and typedefs of a program's text (sources, captured headers, `-D`
/// options): enough to resolve a parameter's type name written through them, without a
/// compiler. Function-like macros and conditionals are not followed, so a name defined twice
/// in different ways (`#ifdef DOUBLE` … `#else` …) is not resolved at all: a wrong value is
/// worse than raw bytes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TextTypes {
    /// Name → replacement text (`None`: defined differently in several places).
    macros: HashMap<String, Option<String>>,
    /// Name → the type it stands for (`None`: several different ones).
    typedefs: HashMap<String, Option<String>>,
}

/// Adds a definition of `name` to `map`; a different second one makes the name ambiguous.
fn learn(map: &mut HashMap<String, Option<String>>, name: &str, value: String) {
    match map.get_mut(name) {
        Some(known) => {
            if known.as_ref() != Some(&value) {
                *known = None;
            }
        }
        None => {
            map.insert(name.to_string(), Some(value));
        }
    }
}

/// How many names [`TextTypes::resolve`] replaces at most (a cycle ends there).
const MAX_STEPS: usize = 32;

impl TextTypes {
    /// The macros and typedefs of `texts` and of the `-D` options in `options`.
    pub fn scan(texts: &[&str], options: &str) -> TextTypes {
        let mut t = TextTypes::default();
        let words = cltrap_capture::options::split_options(options);
        let mut it = words.iter();
        while let Some(w) = it.next() {
            let def = match w.strip_prefix("-D") {
                Some("") => it.next().map(String::as_str),
                Some(d) => Some(d),
                None => None,
            };
            if let Some((name, value)) = def.map(|d| d.split_once('=').unwrap_or((d, "1"))) {
                learn(&mut t.macros, name, value.to_string());
            }
        }
        for text in texts {
            // Line splices joined first: a definition may continue over several lines.
            let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
            for line in joined.lines() {
                t.define(line);
            }
            t.typedefs_of(&joined);
        }
        t
    }

    /// The macros and typedefs of `l`'s program: its sources and captured headers, and its
    /// build options (empty when the program cannot be read).
    fn of_program(capture: &Capture, l: &LaunchRecord) -> TextTypes {
        let Ok(record) = capture.program(&l.program) else {
            return TextTypes::default();
        };
        let mut texts: Vec<String> = crate::variant::program_source(capture, &record)
            .into_iter()
            .collect();
        // Every captured header, each read once, within one budget (best effort: one that
        // cannot be read is left out; past the budget, the rest are).
        let mut seen = std::collections::HashSet::new();
        let mut budget = cltrap_capture::reader::TextBudget::default();
        for h in (record.includes.files.iter()).filter_map(|f| f.content.as_deref()) {
            if !seen.insert(h) {
                continue;
            }
            match capture.source_texts_in([h], &mut budget) {
                Ok(t) => texts.extend(t),
                Err(cltrap_capture::ReadError::TextsTooLarge { .. }) => break,
                Err(_) => {}
            }
        }
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        TextTypes::scan(&refs, &record.options)
    }

    /// Takes `line` when it is an object-like `#define NAME VALUE`.
    fn define(&mut self, line: &str) {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            return;
        };
        let Some(rest) = rest.trim_start().strip_prefix("define") else {
            return;
        };
        if !rest.starts_with([' ', '\t']) {
            return;
        }
        let rest = rest.trim_start();
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let (name, value) = rest.split_at(end);
        // `NAME(` is a function-like macro: not a type name.
        if name.is_empty() || value.starts_with('(') {
            return;
        }
        let value = strip_comments(value).trim().to_string();
        learn(&mut self.macros, name, value);
    }

    /// Takes every `typedef TYPE NAME;` of `text` whose TYPE is a plain type name (no
    /// struct body, pointer, array or function).
    fn typedefs_of(&mut self, text: &str) {
        let text = strip_comments(text);
        let mut rest = text.as_str();
        while let Some(at) = rest.find("typedef") {
            let before = rest[..at].chars().next_back();
            let after = &rest[at + "typedef".len()..];
            rest = after;
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                || !after.starts_with(|c: char| c.is_whitespace())
            {
                continue;
            }
            let Some(end) = after.find(';') else { break };
            let decl = &after[..end];
            if decl.contains(['{', '}', '(', '*', '[', '#']) {
                continue;
            }
            let words: Vec<&str> = decl.split_whitespace().collect();
            if let Some((name, ty)) = words.split_last() {
                if !ty.is_empty() {
                    learn(&mut self.typedefs, name, ty.join(" "));
                }
            }
        }
    }

    /// `type_name` with its macros and typedefs replaced until it names a type
    /// [`format_value`] decodes; `None` when it never does.
    pub fn resolve(&self, type_name: &str) -> Option<String> {
        let mut words: Vec<String> = type_name.split_whitespace().map(String::from).collect();
        for _ in 0..MAX_STEPS {
            let ty = words.join(" ");
            if crate::values::parse_value_type(&ty).is_some() {
                return Some(ty);
            }
            let at = words
                .iter()
                .position(|w| self.macros.contains_key(w) || self.typedefs.contains_key(w))?;
            let w = &words[at];
            let with = self
                .macros
                .get(w)
                .or_else(|| self.typedefs.get(w))?
                .as_ref()?
                .split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>();
            words.splice(at..=at, with);
        }
        None
    }
}

/// `text` with its `/* */` and `//` comments replaced by a space (string literals are not
/// looked at: type declarations hold none).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let line = rest.find("//");
        let block = rest.find("/*");
        match (line, block) {
            (Some(l), b) if b.is_none_or(|b| l < b) => {
                out.push_str(&rest[..l]);
                out.push(' ');
                rest = rest[l..].find('\n').map_or("", |n| &rest[l + n..]);
            }
            (_, Some(b)) => {
                out.push_str(&rest[..b]);
                out.push(' ');
                rest = rest[b + 2..]
                    .find("*/")
                    .map_or("", |e| &rest[b + 2 + e + 2..]);
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// The parameter types of every function of `l`'s program as clang resolves them (typedefs
/// and macros expanded, the address space dropped), parsing the program's one source unit
/// against its captured headers; `None` when it has no such unit or does not parse here.
fn parameter_types(capture: &Capture, l: &LaunchRecord) -> Option<HashMap<String, Vec<String>>> {
    let record = capture.program(&l.program).ok()?;
    let headers = crate::headers::Headers::from_capture(capture, &record.includes).ok()?;
    let source = headers.parse_source(&crate::variant::program_source(capture, &record).ok()?);
    let options = crate::variant::parse_options(&headers, &record);
    let program = cltrap_kernel::parse_declarations(&source, &options).ok()?;
    let types = |f: &cltrap_kernel::model::Function| -> Vec<String> {
        f.params
            .iter()
            .map(|p| {
                // `__private float` → `float` (address spaces are `__`-words in clang's
                // spelling).
                p.ty.split_whitespace()
                    .filter(|w| !w.starts_with("__"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    };
    Some(
        program
            .functions
            .iter()
            .map(|f| (f.name.clone(), types(f)))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macro_and_typedef_type_names_resolve_to_what_they_stand_for() {
        let src = "#define index_type int // pyopencl\n#define SCALE_T scale_t\ntypedef float scale_t;\n/* typedef double not_this; */\ntypedef struct { int a; } pair;\n#define F(x) x\nkernel void k(index_type n, const SCALE_T s, pair p, MY u) {}\n";
        let t = TextTypes::scan(&[src], "-D MY=unsigned -DOTHER");
        assert_eq!(t.resolve("index_type").as_deref(), Some("int"));
        assert_eq!(t.resolve("const index_type").as_deref(), Some("const int"));
        assert_eq!(t.resolve("SCALE_T").as_deref(), Some("float"));
        assert_eq!(t.resolve("scale_t").as_deref(), Some("float"));
        assert_eq!(t.resolve("MY").as_deref(), Some("unsigned"));
        assert_eq!(t.resolve("not_this"), None);
        assert_eq!(t.resolve("pair"), None);
        assert_eq!(t.resolve("F"), None);
        assert_eq!(
            format_value(&t.resolve("index_type").unwrap(), &[0, 0x10, 0, 0]),
            "4096"
        );
        assert_eq!(
            format_value(&t.resolve("SCALE_T").unwrap(), &[0, 0, 0x80, 0x3f]),
            "1.0"
        );
        // Defined two ways under conditionals: not guessed.
        let t = TextTypes::scan(
            &["#ifdef D\ntypedef double real;\n#else\ntypedef float real;\n#endif\n"],
            "",
        );
        assert_eq!(t.resolve("real"), None);
        // A cycle ends.
        let t = TextTypes::scan(&["#define A B\n#define B A\n"], "");
        assert_eq!(t.resolve("A"), None);
    }
}
