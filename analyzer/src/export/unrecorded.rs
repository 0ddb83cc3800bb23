//! Whether a program's exported text still needs a header the capture did not record.
//!
//! An export inlines every header the capture holds ([`super::inline_captured`]); an
//! `#include` left in the text names a file the capture has no bytes of (the application's
//! build found it where the include scan did not look, or the capture predates header
//! recording). A reproducer with such a line does not compile on another machine, unless the
//! build never reaches it: the include scan follows every branch of every conditional, so a
//! left-over line may sit in a branch the build skips. Which it is, only a preprocessor can
//! tell: the text is preprocessed by the clang binary, with the program's `-D`, `-U` and
//! `-cl-std` options only, no include search path but clang's own headers (`-nostdlibinc`),
//! in an empty private folder, and every left-over include renamed to a placeholder first —
//! so clang reads no file of the analyst's, and the first placeholder it cannot find is a
//! header the build reaches.

use cltrap_capture::includes::directives;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The placeholder file name a left-over include is renamed to (`NAME<k>.h`).
const PLACEHOLDER: &str = "cltrap-unrecorded-";

/// Longest a preprocessing may take (a hostile text's macros may explode).
const TIMEOUT: Duration = Duration::from_secs(30);

/// The first header `text` includes that is not in it (not inlined) and that a build with
/// `options` reaches, as written in the directive; `None` when every include the build
/// reaches was inlined. Without a clang binary, the first left-over include counts as
/// reached (a reproducer that may not compile is not written), and the reason says so.
pub fn first_reached(text: &str, options: &str) -> Option<(String, Option<&'static str>)> {
    let left = directives(text.as_bytes());
    if left.is_empty() {
        return None;
    }
    let Ok(clang) = cltrap_kernel::tce::clang_available() else {
        return Some((
            left[0].name.clone(),
            Some("no clang binary was found to tell whether the build reaches it"),
        ));
    };
    // Each left-over include becomes `"cltrap-unrecorded-<k>.h"`: nothing to find anywhere.
    let mut renamed = String::with_capacity(text.len());
    let mut at = 0;
    for (k, d) in left.iter().enumerate() {
        renamed.push_str(&text[at..d.range.start]);
        renamed.push_str(&format!("\"{PLACEHOLDER}{k}.h\""));
        at = d.range.end;
    }
    renamed.push_str(&text[at..]);
    // What the scan does not see as an include (a digraph `%:include`, `#import`, a name
    // split by a line splice) must not make clang open a file either.
    let renamed = crate::headers::without_escaping_includes(&renamed);
    let stderr = preprocess(&clang.program, &renamed, &macro_options(options))?;
    let k: usize = stderr
        .split(PLACEHOLDER)
        .nth(1)?
        .split(".h")
        .next()?
        .parse()
        .ok()?;
    left.get(k).map(|d| (d.name.clone(), None))
}

/// The options of `options` that change what the preprocessor keeps: `-D`, `-U`, `-cl-std=`.
fn macro_options(options: &str) -> Vec<String> {
    let words = cltrap_capture::options::split_options(options);
    let mut out = Vec::new();
    let mut it = words.into_iter();
    while let Some(w) = it.next() {
        if w == "-D" || w == "-U" {
            if let Some(v) = it.next() {
                out.push(format!("{w}{v}"));
            }
        } else if w.starts_with("-D") || w.starts_with("-U") || w.starts_with("-cl-std=") {
            out.push(w);
        }
    }
    out
}

/// Runs `clang -E` on `text` in an empty private folder; its stderr when it failed, `None`
/// when it succeeded, could not run or ran out of time.
fn preprocess(clang: &std::path::Path, text: &str, options: &[String]) -> Option<String> {
    let folder = tempfile::Builder::new()
        .prefix("cltrap-export-")
        .tempdir()
        .ok()?;
    let mut child = Command::new(clang)
        .args([
            "-E",
            "-P",
            "-w",
            "-nostdlibinc",
            "-x",
            "cl",
            "-o",
            "/dev/null",
        ])
        .args(options)
        .arg("-")
        .current_dir(folder.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let mut stderr = child.stderr.take()?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        // At most 1 MiB of messages: the first fatal error is near the start.
        let _ = (&mut stderr).take(1 << 20).read_to_string(&mut s);
        s
    });
    if let Some(mut input) = child.stdin.take() {
        // A write error means clang exited early; its status tells why.
        let _ = input.write_all(text.as_bytes());
    }
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if started.elapsed() < TIMEOUT => {
                std::thread::sleep(Duration::from_millis(10))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let messages = reader.join().unwrap_or_default();
    match status {
        Some(s) if !s.success() => Some(messages),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_includes_the_build_reaches_count() {
        if cltrap_kernel::tce::clang_available().is_err() {
            return;
        }
        let text = "#ifdef NEVER\n#include \"skipped.h\"\n#endif\n#include \"reached.h\"\nkernel void k() {}\n";
        assert_eq!(
            first_reached(text, "").map(|r| r.0),
            Some("reached.h".into())
        );
        let text = "#ifdef USE_IT\n#include \"/etc/passwd\"\n#endif\nkernel void k() {}\n";
        assert_eq!(first_reached(text, ""), None);
        assert_eq!(
            first_reached(text, "-D USE_IT").map(|r| r.0),
            Some("/etc/passwd".into())
        );
        assert_eq!(first_reached("kernel void k() {}\n", ""), None);
    }
}
