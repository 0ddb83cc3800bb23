//! Reading an OpenCL build options string: how its words split, and which directories its
//! `-I` options name. Shared by the shim (which resolves includes at build time), the analyzer
//! and the kernel front-end, so all three read `-I "a b"` the same way.

use std::path::{Path, PathBuf};

/// Splits an options string like a shell would (quotes and backslashes), which is how OpenCL
/// implementations read `-D NAME="a b"`.
pub fn split_options(options: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                    in_word = true;
                }
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// The directories named by `-I DIR` / `-IDIR` in `options`, in order, resolved against `cwd`
/// (the application's working directory at build time) when relative.
pub fn include_dirs(options: &str, cwd: &Path) -> Vec<PathBuf> {
    let words = split_options(options);
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let dir = if words[i] == "-I" {
            i += 1;
            words.get(i).cloned()
        } else {
            words[i].strip_prefix("-I").map(str::to_string)
        };
        if let Some(d) = dir.filter(|d| !d.is_empty()) {
            out.push(cwd.join(d));
        }
        i += 1;
    }
    out
}

/// `options` with every `-I DIR` replaced by `-I NEW` (`map(DIR)`), other words kept as they
/// were, and `prefix` words put first; words are quoted again where needed, so the result
/// splits back into the same words.
pub fn rewrite_include_dirs(
    options: &str,
    prefix: &[String],
    map: impl Fn(&str) -> String,
) -> String {
    let words = split_options(options);
    let mut out: Vec<String> = prefix.to_vec();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if w == "-I" {
            if let Some(d) = words.get(i + 1) {
                out.push("-I".into());
                out.push(map(d));
                i += 2;
                continue;
            }
        } else if let Some(d) = w.strip_prefix("-I").filter(|d| !d.is_empty()) {
            out.push("-I".into());
            out.push(map(d));
            i += 1;
            continue;
        }
        out.push(w.clone());
        i += 1;
    }
    out.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// A word as an options string spells it: quoted when it holds a space, a quote or a backslash.
fn quote(w: &str) -> String {
    if !w.is_empty() && !w.contains([' ', '\t', '\n', '"', '\'', '\\']) {
        return w.to_string();
    }
    let mut s = String::from("\"");
    for c in w.chars() {
        if c == '"' || c == '\\' {
            s.push('\\');
        }
        s.push(c);
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_quotes_like_a_shell() {
        assert_eq!(
            split_options(r#" -DA='x y'  -DB=\"q\" "#),
            ["-DA=x y", "-DB=\"q\""]
        );
        assert!(split_options("   ").is_empty());
    }

    #[test]
    fn include_dirs_are_found_in_both_spellings_and_resolved_against_the_build_dir() {
        let d = include_dirs(
            "-DX=1 -I inc -I/abs/x -I \"with space\" -Ifoo",
            Path::new("/app"),
        );
        assert_eq!(
            d,
            [
                PathBuf::from("/app/inc"),
                "/abs/x".into(),
                "/app/with space".into(),
                "/app/foo".into()
            ]
        );
    }

    #[test]
    fn rewritten_options_split_back_into_the_same_words() {
        let r = rewrite_include_dirs(
            "-DM=\"a b\" -I inc -Ix -cl-std=CL1.2",
            &["-I".into(), "/t/app dir".into()],
            |d| format!("/t/{d}"),
        );
        assert_eq!(
            split_options(&r),
            [
                "-I",
                "/t/app dir",
                "-DM=a b",
                "-I",
                "/t/inc",
                "-I",
                "/t/x",
                "-cl-std=CL1.2"
            ]
        );
    }
}
