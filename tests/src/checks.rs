//! The assertions the tests share: same behaviour with and without the shim, every launch
//! listed and replayed `ok`, and nothing added to the application's output.

use crate::fixtures::fixture;
use crate::paths::{fresh_capture_dir, TestDir};
use crate::process::{cltrap, run_captured, run_captured_with_stats, run_native, Outcome};
use crate::records::{content_sides, contents, open_capture, rewrite_launch};
use cltrap_capture::{ArgRecord, Capture, Content};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::Path;

/// The transparency contract: the application ended the same way and printed exactly the
/// same stdout with and without the shim.
pub fn assert_same_behaviour(native: &Outcome, captured: &Outcome) {
    assert_eq!(
        native.ending(),
        captured.ending(),
        "the application ended differently under the shim\n=== native ===\n{}\n=== captured ===\n{}",
        native.describe(),
        captured.describe()
    );
    assert!(
        native.stdout == captured.stdout,
        "stdout differs under the shim\n=== native ===\n{}\n=== captured ===\n{}",
        native.describe(),
        captured.describe()
    );
}

/// Lines of `cltrap replay` output that report a launch as `ok`: the verdict is the line's
/// last word (`launch 3 vadd: ok`); a summary line that counts `N ok` is not one.
pub fn ok_lines(text: &str) -> usize {
    text.lines()
        .filter(|l| words(l).last() == Some("ok"))
        .count()
}

fn words(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

fn numbers(line: &str) -> Vec<u64> {
    line.split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// Replays every launch of the capture and checks that each one is reported `ok`, that
/// there are exactly `expected` of them, and that the replay exits 0. The tests replay only
/// captures they made, so they trust them: a program the application loaded from a binary
/// replays on PoCL too (`CLTRAP_TRUST_BINARIES`; without it such launches are skipped on a
/// CPU device).
pub fn assert_replays_ok(dir: &Path, expected: usize) -> Outcome {
    let t = crate::paths::tools();
    let out = crate::process::run_with_env(
        &t.cltrap,
        &[OsStr::new("replay"), dir.as_os_str()],
        &[
            ("CLTRAP_SHIM", t.shim.as_os_str()),
            ("CLTRAP_TRUST_BINARIES", OsStr::new("1")),
        ],
        None,
    );
    out.assert_no_panic();
    assert!(out.success(), "cltrap replay failed\n{}", out.describe());
    let ok = ok_lines(&out.stdout_text());
    assert_eq!(
        ok,
        expected,
        "expected {expected} launches replayed ok\n{}",
        out.describe()
    );
    out
}

/// Replays the given launch ids (`cltrap replay DIR ID...`) and checks each is reported `ok`.
pub fn assert_replay_ids_ok(dir: &Path, ids: &[u64]) -> Outcome {
    let mut args: Vec<std::ffi::OsString> = vec!["replay".into(), dir.into()];
    args.extend(ids.iter().map(|i| i.to_string().into()));
    let out = cltrap(&args);
    out.assert_no_panic();
    assert!(
        out.success(),
        "cltrap replay of ids {ids:?} failed\n{}",
        out.describe()
    );
    assert_eq!(
        ok_lines(&out.stdout_text()),
        ids.len(),
        "ids {ids:?}\n{}",
        out.describe()
    );
    out
}

/// `cltrap list DIR` must show one line per launch naming its id, kernel and global size.
pub fn assert_list_shows(dir: &Path, capture: &Capture) -> Outcome {
    let out = cltrap(&[OsStr::new("list"), dir.as_os_str()]);
    out.assert_no_panic();
    assert!(out.success(), "cltrap list failed\n{}", out.describe());
    let text = out.stdout_text();
    // Index the lines by every number they hold, so big captures are checked in linear time.
    let lines: Vec<(Vec<u64>, &str)> = text.lines().map(|l| (numbers(l), l)).collect();
    let mut by_number: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, (nums, _)) in lines.iter().enumerate() {
        for n in nums {
            by_number.entry(*n).or_default().push(i);
        }
    }
    for l in &capture.launches {
        let candidates = by_number.get(&l.id).map(Vec::as_slice).unwrap_or(&[]);
        let shown = candidates.iter().any(|&i| {
            let (nums, line) = &lines[i];
            words(line).any(|w| w == l.kernel) && l.global_size.iter().all(|g| nums.contains(g))
        });
        assert!(
            shown,
            "cltrap list does not show launch {} ({} global {:?})\n{}",
            l.id,
            l.kernel,
            l.global_size,
            out.describe()
        );
    }
    out
}

/// A capture that went well adds nothing to the application's stderr but the launcher's
/// one summary line (the driver's compiler chatter aside: it depends on PoCL's kernel cache).
pub fn assert_quiet_capture(native: &Outcome, captured: &Outcome) {
    let mut extra: Vec<&str> = meaningful_stderr_lines(&captured.stderr)
        .into_iter()
        .filter(|l| !is_binary_program_notice(l) && !is_launcher_line(l))
        .collect();
    let summary = extra.pop();
    assert!(
        summary.is_some_and(|l| l.starts_with("cltrap:")),
        "`cltrap run` ends with its summary line\n{}",
        captured.describe()
    );
    assert_eq!(
        extra,
        meaningful_stderr_lines(&native.stderr),
        "the capture wrote to the application's stderr\n{}",
        captured.describe()
    );
}

/// Lines `cltrap run` itself says besides its summary: the disk budget at the start of a
/// `full` capture, and the compaction of its spool after the application exited.
pub fn is_launcher_line(line: &str) -> bool {
    let l = line.trim_start();
    l.starts_with("cltrap: capture budget:") || l.starts_with("cltrap: compacted the spool")
}

/// The shim's one documented notice for launches of programs created from binaries (said
/// once per process: their code cannot be analysed; `--refuse-binaries` is the way out).
pub fn is_binary_program_notice(line: &str) -> bool {
    line.starts_with("cltrap: kernel '")
        && line.contains("comes from a program created from a binary")
}

/// The whole round trip for one fixture: run it natively (it must succeed), run it under
/// `cltrap run` (same ending, same stdout), read the capture, check that `cltrap list`
/// shows every launch and that `cltrap replay` reports every launch `ok`. The returned
/// capture's launches are sorted in enqueue order (`seq`), whatever order they completed in.
pub fn round_trip(name: &str, args: &[&str], flags: &[&str]) -> (TestDir, Capture) {
    let exe = fixture(name);
    let native = run_native(&exe, args).expect_success();
    let dir = fresh_capture_dir(name);
    let captured = run_captured(&dir, flags, &exe, args);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    assert_quiet_capture(&native, &captured);
    let mut cap = open_capture(&dir);
    // Records are numbered in order of completion; tests read them in enqueue order.
    cap.launches.sort_by_key(|l| l.seq);
    if flags.is_empty() {
        assert_full_contents(&cap);
    }
    assert!(
        !cap.launches.is_empty(),
        "the capture of {name} holds no launches\n{}",
        captured.describe()
    );
    assert_list_shows(&dir, &cap);
    assert_replays_ok(&dir, cap.launches.len());
    (dir, cap)
}

/// Captures fixture `name` (no arguments) with `flags` plus `--stats` into a fresh folder
/// labelled `label`, checks it behaves as natively and says nothing, and returns the capture
/// (launches in enqueue order) and the shim's counters.
pub fn capture_with_stats(
    name: &str,
    label: &str,
    flags: &[&str],
) -> (TestDir, Capture, serde_json::Value) {
    let exe = fixture(name);
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let dir = fresh_capture_dir(label);
    let (captured, counters) = run_captured_with_stats(&dir, flags, &exe, &[] as &[&str]);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    assert_quiet_capture(&native, &captured);
    let mut cap = open_capture(&dir);
    cap.launches.sort_by_key(|l| l.seq);
    (dir, cap, counters)
}

/// Asserts that two captures of the same deterministic application (`name`) hold the same
/// contents, side by side, except the contents before of the `uninitialised` (enqueue,
/// argument) pairs: buffers the application never wrote before their first kernel, whose
/// bytes are whatever the allocator left.
pub fn assert_same_contents(
    name: &str,
    reference: &Capture,
    cap: &Capture,
    uninitialised: &[(u64, u32)],
) {
    let (a, b) = (content_sides(reference), content_sides(cap));
    assert_eq!(a.len(), b.len(), "{name}");
    for ((seq, arg, side, x), (_, _, _, y)) in a.iter().zip(&b) {
        if *side != "before" || !uninitialised.contains(&(*seq, *arg)) {
            assert_eq!(x, y, "{name}: enqueue {seq} argument {arg} {side}");
        }
    }
}

/// Makes every digest recorded for launch `id`'s contents after `wrong` and replays it: the
/// replay must find the launch mismatched (exit status 1), which shows that it compares
/// outputs with the recorded digests. Returns the replay's outcome.
pub fn assert_wrong_digest_mismatches(dir: &Path, id: u64, wrong: &str) -> Outcome {
    rewrite_launch(dir, id, |l| {
        for a in &mut l.args {
            if let ArgRecord::Buffer {
                after: Content::Digest { hash, .. },
                ..
            } = a
            {
                *hash = wrong.to_string();
            }
        }
    });
    let out = cltrap(&[
        OsStr::new("replay"),
        dir.as_os_str(),
        OsStr::new(&id.to_string()),
    ]);
    out.assert_no_panic();
    assert_eq!(out.code, Some(1), "{}", out.describe());
    out
}

/// In the default buffer mode every buffer and image argument of a replayable launch has
/// its contents before and after stored, so that replay really compares something.
pub fn assert_full_contents(cap: &Capture) {
    for l in cap.launches.iter().filter(|l| l.not_replayable.is_empty()) {
        for a in &l.args {
            if let Some((before, after)) = contents(a) {
                assert!(
                    matches!(before, Content::Blob { .. }) && matches!(after, Content::Blob { .. }),
                    "launch {} ({}) argument {} lacks stored contents: before {before:?}, after {after:?}",
                    l.id,
                    l.kernel,
                    a.info().index
                );
            }
        }
    }
}

/// Says on the real stderr (not swallowed by the test harness's output capture) that a test
/// skipped its work and why; only for reasons outside cltrap (a program not installed,
/// PyPI unreachable).
pub fn skip(test: &str, reason: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIP {test}: {reason}");
}

/// Lines of `text` that the shim or CLI wrote (they start with `cltrap:`).
pub fn cltrap_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.trim_start().starts_with("cltrap:"))
        .collect()
}

/// The first `cltrap:` line of `out`'s stderr that contains `needle` (the test fails if
/// there is none).
pub fn cltrap_line(out: &Outcome, needle: &str) -> String {
    cltrap_lines(&out.stderr)
        .into_iter()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?}\n{}", out.describe()))
        .to_string()
}

/// The `cltrap replay --timing` summary line of `out`'s stderr (`replay timing: ...`).
pub fn replay_timing_line(out: &Outcome) -> String {
    cltrap_line(out, "replay timing:")
}

/// The `cltrap: replay device waits: N for M launch(es)` line of a `cltrap replay --timing`'s
/// stderr (the test fails if there is none).
pub fn replay_waits_line(out: &Outcome) -> String {
    cltrap_line(out, "replay device waits:")
}

/// The count written just before `word` in `line` (`12 bound on the device` → 12).
pub fn count_before(line: &str, word: &str) -> u64 {
    line.split(word)
        .next()
        .and_then(|b| b.split_whitespace().last())
        .map(|n| n.trim_start_matches('('))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count before {word:?} in {line}"))
}

/// The `cltrap:` lines of a `cltrap run`'s stderr that came from the shim: all but the
/// launcher's own summary, which `cltrap run` prints as its last line after the app exits.
pub fn shim_lines_of_launcher_run(stderr: &str) -> Vec<&str> {
    let mut lines = cltrap_lines(stderr);
    lines.retain(|l| !is_launcher_line(l));
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    if last.is_some() && lines.last().copied() == last {
        lines.pop();
    }
    lines
}

/// Non-empty lines of stderr, ignoring the compiler chatter PoCL prints while building
/// kernels ("2 warnings generated."), which is not cltrap's.
pub fn meaningful_stderr_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| !(l.ends_with("generated.") && (l.contains("warning") || l.contains("error"))))
        .collect()
}

/// The program's path, or None after saying (SKIP) which Debian package provides it.
pub fn installed(prog: &str, package: &str) -> Option<std::path::PathBuf> {
    let out = run_native("sh", &["-c", &format!("command -v {prog}")]);
    let path = out.stdout_text().trim().to_string();
    if out.success() && !path.is_empty() {
        Some(std::path::PathBuf::from(path))
    } else {
        skip(
            prog,
            &format!("{prog} is not installed (apt-get install {package})"),
        );
        None
    }
}

/// Asserts that no wait of a capture run under a spool bound ended through the writer's
/// stall check (the compactor made room, or let go of its lock, as it should), and, given the
/// run's `CLTRAP_STATS`, that it waited at all: otherwise the bound was never reached and the
/// case was not tested.
pub fn assert_waited_for_compaction(captured: &Outcome, stats: Option<&serde_json::Value>) {
    if let Some(stats) = stats {
        assert!(
            stats["spool"]["waits"].as_u64().unwrap_or(0) >= 1,
            "the application never waited for compaction, so the case was not tested: {stats}"
        );
    }
    assert!(
        !captured.stderr.contains("showed no progress"),
        "rescued by the writer's stall check rather than by the compactor: {}",
        captured.describe()
    );
}
