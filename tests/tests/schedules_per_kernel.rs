//! `cltrap replay --schedules` on long captures, end to end on PoCL with real host programs:
//!
//! - `--per-kernel N` classifies the launches of one kernel with the same global and local
//!   sizes once per distinct input (the arguments' contents before the launch), at most N
//!   inputs per kernel and sizes; every other launch gets a line (same inputs as which launch,
//!   or skipped at the limit) and is counted in the summary (tests/apps/repeats.c).
//! - The race check of the launches whose results differ runs on the native engine by
//!   default and names both accesses of the race (tests/kernels/check.cl's `global_race`).
//! - A launch whose accesses the native engine could not all check is never called
//!   race-free: it is checked again on Oclgrind, or reported as incomplete when that cannot
//!   be done (tests/kernels/schedules.cl's `chosen_race`).

use cltrap_e2e::*;
use std::ffi::OsStr;
use std::path::Path;

const ICD: &str = "/usr/lib/oclgrind/liboclgrind-rt-icd.so";

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Captures fixture `app` run with `args`.
fn capture(label: &str, app: &str, args: &[&str]) -> TestDir {
    let exe = fixture(app);
    let dir = fresh_capture_dir(label);
    let out = run_captured(&dir, &[], &exe, args);
    out.assert_no_panic();
    assert!(out.success(), "{}", out.describe());
    dir
}

/// The per-launch lines of a `--schedules` output, in order.
fn launch_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.starts_with("launch ")).collect()
}

#[test]
fn per_kernel_classifies_each_distinct_input_once_and_counts_the_others() {
    // Launches 0..6 of `scale` on inputs a a b a B b B: lowercase over 64 work-items,
    // uppercase over 128, both in groups of 16; equal letters are equal inputs.
    let dir = capture(
        "schedules-per-kernel",
        "repeats",
        &["schedules.cl", "scale", "aabaBbB"],
    );
    let out = cltrap(&[
        "replay",
        path(&dir),
        "--schedules",
        "3",
        "--per-kernel",
        "1",
    ]);
    out.assert_no_panic();
    let text = out.stdout_text();
    assert_eq!(out.code, Some(0), "{}", out.describe());
    let same = |id: u64, first: u64| {
        format!(
            "launch {id} scale: same kernel, sizes and inputs as launch #{first}: not classified again (launch #{first}: deterministic)"
        )
    };
    let limit = |id: u64| {
        format!(
            "launch {id} scale: skipped: per-kernel limit 1 reached (scale with global 64, local 16: inputs of launch(es) #0 classified, this launch's differ)"
        )
    };
    let want = [
        "launch 0 scale: deterministic (3 schedules, 3 repeats)".to_string(),
        same(1, 0),
        limit(2),
        same(3, 0),
        // Another global size: another class, with its own limit.
        "launch 4 scale: deterministic (3 schedules, 3 repeats)".to_string(),
        limit(5),
        same(6, 4),
    ];
    assert_eq!(launch_lines(&text), want, "{text}");
    assert!(
        text.contains("schedules: 7 launch(es): 2 deterministic, 0 schedule-dependent, 0 nondeterministic, 0 skipped, 0 failed; --per-kernel 1: 3 not classified again (same kernel, sizes and inputs as a classified launch), 2 skipped at the per-kernel limit;"),
        "{text}"
    );

    // Two inputs per kernel and sizes: b is classified too, and its repeat refers to it.
    let out = cltrap(&[
        "replay",
        path(&dir),
        "--schedules",
        "3",
        "--per-kernel",
        "2",
    ]);
    let text = out.stdout_text();
    assert_eq!(out.code, Some(0), "{}", out.describe());
    let lines = launch_lines(&text);
    assert_eq!(lines.len(), 7, "{text}");
    assert_eq!(
        lines[2],
        "launch 2 scale: deterministic (3 schedules, 3 repeats)"
    );
    assert_eq!(lines[5], same(5, 2));
    assert!(
        text.contains("3 deterministic, 0 schedule-dependent, 0 nondeterministic, 0 skipped, 0 failed; --per-kernel 2: 4 not classified again (same kernel, sizes and inputs as a classified launch), 0 skipped at the per-kernel limit;"),
        "{text}"
    );

    // Without --per-kernel every launch is classified, as before.
    let out = cltrap(&["replay", path(&dir), "--schedules", "3"]);
    let text = out.stdout_text();
    assert_eq!(out.code, Some(0), "{}", out.describe());
    assert!(
        text.contains("schedules: 7 launch(es): 7 deterministic, 0 schedule-dependent, 0 nondeterministic, 0 skipped, 0 failed; 0 identity run(s)"),
        "{text}"
    );
    assert!(!text.contains("not classified"), "{text}");

    // A limit of 0 classifies nothing: refused in one sentence.
    let out = cltrap(&[
        "replay",
        path(&dir),
        "--schedules",
        "3",
        "--per-kernel",
        "0",
    ]);
    out.assert_no_panic();
    assert_eq!(out.code, Some(2), "{}", out.describe());
    assert!(out.stderr.contains("--per-kernel"), "{}", out.describe());
}

#[test]
fn the_native_race_check_names_both_accesses_and_repeats_are_not_checked_again() {
    // global_race: the last work-item of each group reads the first element of the next
    // group's slice, which that group writes. Launched twice on the same inputs.
    let dir = capture(
        "schedules-native-race",
        "check",
        &["global_race", "global_race_fixed", "global_race"],
    );
    let out = cltrap(&[
        "replay",
        path(&dir),
        "--schedules",
        "6",
        "--per-kernel",
        "1",
    ]);
    out.assert_no_panic();
    let text = out.stdout_text();
    assert_eq!(out.code, Some(1), "{}", out.describe());
    let lines = launch_lines(&text);
    // A real race shows either under permuted schedules or already between repeats of the
    // identity schedule, as the threads of the CPU device happen to interleave: both
    // verdicts are right, and launch 2 repeats whichever launch 0 got.
    let verdict = racy_verdict(
        lines[0],
        "launch 0 global_race: ",
        "argument 0 (out)",
        &text,
    );
    assert!(
        lines[1].starts_with("launch 1 global_race_fixed: deterministic"),
        "{text}"
    );
    assert_eq!(
        lines[2],
        format!("launch 2 global_race: same kernel, sizes and inputs as launch #0: not classified again (launch #0: {verdict})"),
        "{text}"
    );
    let section = text
        .split_once("race check of the 1 launch(es) whose results differ (native engine")
        .map(|x| x.1)
        .unwrap_or_else(|| panic!("no native race check of launch 0 alone: {text}"));
    // Both accesses, each on its line with a caret, whichever the engine saw first.
    for (line, code) in [
        (25, "    out[g] = in[g];"),
        (28, "        out[g] += out[g + 1];"),
    ] {
        assert!(section.contains(&format!("{line} | {code}\n")), "{text}");
    }
    assert!(section.contains("^ first access, by "), "{text}");
    assert!(section.contains("^ second access, by "), "{text}");
    assert!(
        section.contains("checked 1 of 1 launch(es) on native: 1 finding(s)"),
        "{text}"
    );
    assert!(
        section.contains("race check: launch 0 global_race: 1 race(s) found (native)"),
        "{text}"
    );
    assert!(!section.contains("launch 2"), "{text}");
}

/// The verdict of a launch with a real race, `schedule-dependent` or `nondeterministic`
/// (the race may already show between repeats of the identity schedule, depending on how
/// the device's threads interleave), checked to start with `prefix` and to name `what`.
fn racy_verdict(line: &str, prefix: &str, what: &str, text: &str) -> &'static str {
    let rest = line
        .strip_prefix(prefix)
        .unwrap_or_else(|| panic!("no line starting {prefix:?}: {text}"));
    for verdict in ["schedule-dependent", "nondeterministic"] {
        if let Some(detail) = rest.strip_prefix(verdict) {
            assert!(detail.starts_with(&format!(": {what}")), "{text}");
            return verdict;
        }
    }
    panic!("a racy launch classified neither schedule-dependent nor nondeterministic: {text}")
}

/// The verdict line of launch 0 in a `--schedules` output.
fn race_verdict(text: &str) -> &str {
    text.lines()
        .find(|l| l.starts_with("race check: launch 0 chosen_race: "))
        .unwrap_or_else(|| panic!("no race-check verdict for launch 0: {text}"))
}

#[test]
fn a_launch_with_accesses_the_native_engine_did_not_check_is_not_called_race_free() {
    // chosen_race races like global_race, through a pointer that may be either argument:
    // the native engine cannot tell which object it points into and checks none of those
    // accesses.
    let dir = capture(
        "schedules-unchecked",
        "check_kernels",
        &["schedules.cl", "chosen_race"],
    );
    // Without Oclgrind to check it again: incomplete, with what was not checked.
    let out = run_with_env(
        &tools().cltrap,
        &["replay", path(&dir), "--schedules", "6"],
        &[(
            "CLTRAP_OCLGRIND_ICD",
            OsStr::new("/nonexistent/oclgrind.so"),
        )],
        None,
    );
    out.assert_no_panic();
    let text = out.stdout_text();
    assert_eq!(out.code, Some(1), "{}", out.describe());
    let line = launch_lines(&text)[0];
    racy_verdict(line, "launch 0 chosen_race: ", "", &text);
    assert!(
        text.contains(
            "not checked: line 18:5 in chosen_race: the pointer is not known to point into a kernel argument"
        ),
        "the fixture needs an access the native engine cannot check: {text}"
    );
    let verdict = race_verdict(&text);
    assert!(
        verdict.starts_with(
            "race check: launch 0 chosen_race: incomplete: no race found by the native engine, but 3 of 4 access(es) not checked; Oclgrind: "
        ),
        "{text}"
    );
    assert!(!verdict.contains("every access checked"), "{text}");

    if !Path::new(ICD).is_file() {
        skip(
            "schedules_per_kernel",
            "Oclgrind is not installed: the fallback is not tried",
        );
        return;
    }
    // With Oclgrind: checked again there, which finds the race and names both lines.
    let out = cltrap(&["replay", path(&dir), "--schedules", "6"]);
    out.assert_no_panic();
    let text = out.stdout_text();
    assert_eq!(out.code, Some(1), "{}", out.describe());
    let again = text
        .split_once(
            "the native engine did not check 1 launch(es) whole: checking it again on Oclgrind",
        )
        .map(|x| x.1)
        .unwrap_or_else(|| panic!("no Oclgrind check of launch 0: {text}"));
    assert!(again.contains("18 |     p[g] = in[g];\n"), "{text}");
    assert!(again.contains("20 |         p[g] += p[g + 1];\n"), "{text}");
    assert_eq!(
        race_verdict(&text),
        "race check: launch 0 chosen_race: no race found by the native engine, but 3 of 4 access(es) not checked; on Oclgrind: 1 race(s) found (oclgrind)",
        "{text}"
    );
}
