//! Reading an OpenCL build options string: how its words split, and which directories its
//! `-I` options name. Shared by the shim (which resolves includes at build time), the analyzer
//! and the kernel front-end, so all three read `-I "a b"` the same way.

use std::path::{Path, PathBuf};

/// Longest build options string, in bytes.
pub const MAX_OPTIONS: usize = 1 << 16;

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

/// Checks a build options string from a capture against the allow-list of OpenCL build
/// options before any compiler sees it (the driver, PoCL's clang, Oclgrind, libclang):
/// `-D`/`-U` macros, `-I` directories (which every consumer mirrors into its private header
/// folder), `-cl-*` (the OpenCL compiler and math options, `-cl-std=`, `-cl-kernel-arg-info`),
/// `-w`, `-W<name>` (warnings; never `-Wl,`/`-Wp,`/`-Wa,`, which hand words to other tools),
/// `-g`, `-O0` to `-O3`, `-x cl`/`-x clc`, and `clLinkProgram`'s `-create-library` and
/// `-enable-link-options`. Why: a capture is untrusted, and `-include /etc/shadow`,
/// `-Xclang -load -Xclang x.so`, `-fplugin=` or a bare file name make a compiler read or load
/// what the capture names. Err: the refused word, named, in one sentence part.
pub fn check_build_options(options: &str) -> Result<(), String> {
    const MAX: usize = MAX_OPTIONS;
    if options.len() > MAX {
        return Err(format!(
            "the build options are {} bytes long (at most {MAX})",
            options.len()
        ));
    }
    if options.contains('\0') {
        return Err("the build options hold a NUL byte".into());
    }
    if !closes_quotes(options) {
        // Drivers split such a string in different ways: words cltrap appends (a CPU
        // device's `-D` guards) could end up inside the open quote.
        return Err("the build options leave a quote open or end with a backslash".into());
    }
    let words = split_options(options);
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        let start = i;
        let ok = match w {
            // An option whose value is the next word.
            "-D" | "-U" | "-I" | "-x" => {
                let Some(value) = words.get(i + 1) else {
                    return Err(format!("build option `{w}` has no value"));
                };
                i += 1;
                w != "-x" || matches!(value.as_str(), "cl" | "clc")
            }
            "-w" | "-g" | "-create-library" | "-enable-link-options" => true,
            _ if w.starts_with("-cl-") => true,
            _ if w.starts_with("-D") || w.starts_with("-U") || w.starts_with("-I") => true,
            _ if w.starts_with("-O") => matches!(&w[2..], "" | "0" | "1" | "2" | "3"),
            _ if w.starts_with("-W") => {
                w.len() > 2
                    && w[2..]
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'=' || b == b'_')
            }
            _ => false,
        };
        if !ok {
            return Err(format!(
                "build option `{}` is not one cltrap passes on from a capture (allowed: -D, -U, -I, -cl-*, -w, -W<warning>, -g, -O0..-O3, -x cl)",
                words[start..=i].join(" ").chars().take(80).collect::<String>()
            ));
        }
        i += 1;
    }
    Ok(())
}

/// Whether `options` closes every quote it opens and does not end with an escaping
/// backslash, read as [`split_options`] reads it.
fn closes_quotes(options: &str) -> bool {
    let mut quote: Option<char> = None;
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"') | None, '\\') => {
                if chars.next().is_none() {
                    return false;
                }
            }
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, _) => {}
        }
    }
    quote.is_none()
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
    fn build_options_outside_the_allow_list_are_refused_and_named() {
        for good in [
            "",
            "-D A=1 -DB=\"x y\" -U C -I inc -I/abs -I ../../.. -cl-std=CL2.0 -cl-fast-relaxed-math",
            "-w -Werror -Wall -g -O2 -cl-kernel-arg-info -x cl -create-library",
        ] {
            assert_eq!(check_build_options(good), Ok(()), "{good}");
        }
        for (bad, named) in [
            ("-include /etc/shadow", "-include"),
            ("-DA -Xclang -load -Xclang x.so", "-Xclang"),
            ("-fplugin=/tmp/x.so", "-fplugin"),
            ("-Wl,-rpath,/tmp", "-Wl,"),
            ("-Wp,-include,/etc/shadow", "-Wp,"),
            ("/etc/shadow", "/etc/shadow"),
            ("-x c++", "-x"),
            ("-o /tmp/out", "-o"),
            ("-D", "-D"),
            ("-Ofast", "-Ofast"),
        ] {
            let e = check_build_options(bad).unwrap_err();
            assert!(e.contains(&format!("`{named}")), "{bad}: {e}");
        }
    }

    /// An open quote or a last backslash could swallow the words cltrap appends, in a driver
    /// that splits options as a shell does.
    #[test]
    fn options_that_leave_a_quote_open_are_refused() {
        for bad in ["-DX=\"", "-DX='a b", "-DX=\\", "-DX=\"a\\\""] {
            let e = check_build_options(bad).unwrap_err();
            assert!(e.contains("leave a quote open"), "{bad}: {e}");
        }
        for good in ["-DX=\"a\\\"b\"", "-DX='a\"b'", "-DX=a\\ b", "-DX=\"\""] {
            assert_eq!(check_build_options(good), Ok(()), "{good}");
        }
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
