//! `cltrap check`: findings a user can trust and silence that means "checked".
//!
//! - The native engine's shadows have the granularity of the accesses: neighbouring
//!   work-items writing their own `char`, `short`, `uchar4` or `vstore4` bytes are not a race,
//!   two writing the same element are (tests/kernels/check_granular.cl); a read-only table read by a group of
//!   4 096 work-items is clean. Both engines must agree on every kernel (kind and line pair),
//!   except where `check_agreement_allow.txt` explains why not.
//! - What the native engine could not check is counted in the summary, listed in the HTML
//!   and in SARIF, and makes the exit status 3 (incomplete) instead of 0.
//! - A limit of Oclgrind's simulated device (1 024 work-items per group) on a launch the
//!   captured device ran is the engine's limitation, never an `api-misuse` finding.
//! - What Oclgrind cannot simulate (`Unsupported instruction: freeze` in its uninitialised-value
//!   plugin) is its limitation, never a finding: the launch runs again without that plugin and
//!   is reported as checked in part (tests/kernels/check_constructs.cl).
//! - A `__local` array written inside a macro (not instrumented) gets no uninitialised-read
//!   finding, and the launch says so; other arrays of the kernel still do.
//! - Barrier intervals are those Oclgrind counts: a barrier fencing `__local` memory only does
//!   not order `__global` accesses; barriers written in macro bodies end their intervals; the
//!   accesses of one macro use that are not checked are each counted, per reason too; a race
//!   between groups is named on the lines Oclgrind names (each group's first access).
//! - The Oclgrind vendors folder and the native engine's cache cannot be prepared by another
//!   user: a folder or link planted at a predictable path (`$TMPDIR/cltrap-check-<pid>`) is
//!   not used, and a cached file changed after it was stored is not trusted.

use cltrap_e2e::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const ICD: &str = "/usr/lib/oclgrind/liboclgrind-rt-icd.so";

type Key = (String, String, u64, u64);

fn capture(name: &str, file: &str, kernels: &[&str]) -> TestDir {
    let exe = fixture("check_kernels");
    let dir = fresh_capture_dir(name);
    let mut args = vec![file];
    args.extend_from_slice(kernels);
    let out = run_captured(&dir, &[], &exe, &args);
    out.assert_no_panic();
    assert!(out.success(), "{}", out.describe());
    dir
}

fn check_json(dir: &Path, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec!["check", dir.to_str().expect("utf-8 path"), "--json"];
    args.extend_from_slice(extra);
    let out = cltrap(&args);
    out.assert_no_panic();
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", out.describe()));
    (out.code.unwrap_or(-1), json, out.stderr)
}

/// (kernel, kind, first line, second line or 0) of every finding.
fn findings(json: &Value) -> BTreeSet<Key> {
    json["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            let line = |a: &Value| a["line"].as_u64().unwrap_or(0);
            (
                f["kernel"].as_str().unwrap_or("").to_string(),
                f["kind"].as_str().unwrap_or("").to_string(),
                line(&f["example"]["first"]),
                line(&f["example"]["second"]),
            )
        })
        .collect()
}

fn s(k: &str, kind: &str, a: u64, b: u64) -> Key {
    (k.to_string(), kind.to_string(), a, b)
}

/// Oclgrind's findings the native engine is meant to reproduce (barrier divergence is
/// Oclgrind's alone; an invalid read's value is also an uninitialised value there).
fn comparable(oclgrind: &BTreeSet<Key>) -> BTreeSet<Key> {
    oclgrind
        .iter()
        .filter(|(k, kind, line, _)| {
            kind != "barrier-divergence"
                && !(kind == "uninitialized" && oclgrind.contains(&s(k, "invalid-read", *line, 0)))
        })
        .cloned()
        .collect()
}

/// Kernels whose native and Oclgrind findings are allowed to differ, from the committed
/// allow-list (`FILE KERNEL REASON` per line; `#` comments), by (file, kernel).
fn allowed() -> BTreeSet<(String, String)> {
    let path = fixture_source_dir("kernels").join("check_agreement_allow.txt");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut w = l.split_whitespace();
            let file = w.next().unwrap_or("").to_string();
            let kernel = w.next().unwrap_or("").to_string();
            assert!(w.next().is_some(), "allow-list line without a reason: {l}");
            (file, kernel)
        })
        .collect()
}

/// The reference agreement: per kernel of `file`, the native findings equal Oclgrind's
/// (comparable ones), unless the allow-list names the kernel.
fn assert_engines_agree(file: &str, native: &BTreeSet<Key>, oclgrind: &BTreeSet<Key>) {
    let allow = allowed();
    let reference = comparable(oclgrind);
    let kernels: BTreeSet<&String> = native.iter().chain(&reference).map(|k| &k.0).collect();
    let mut disagree = Vec::new();
    for k in kernels {
        if allow.contains(&(file.to_string(), k.clone())) {
            continue;
        }
        let a: BTreeSet<_> = native.iter().filter(|f| &f.0 == k).collect();
        let b: BTreeSet<_> = reference.iter().filter(|f| &f.0 == k).collect();
        if a != b {
            disagree.push(format!("{k}: native {a:?}, oclgrind {b:?}"));
        }
    }
    assert!(
        disagree.is_empty(),
        "native and Oclgrind disagree on {file}:\n{}",
        disagree.join("\n")
    );
}

const GRANULAR: [&str; 10] = [
    "chars",
    "chars_race",
    "shorts",
    "shorts_race",
    "table",
    "vectors",
    "vectors_race",
    "bytes_pointer",
    "vstores",
    "vstores_race",
];

#[test]
fn neighbours_own_bytes_shorts_and_vectors_are_no_race_and_shared_ones_are() {
    let dir = capture("check-granular", "check_granular.cl", &GRANULAR);
    let (code, native, stderr) = check_json(&dir, &[]);
    assert_eq!(code, 1, "{native:#}\n{stderr}");
    let want: BTreeSet<Key> = [
        s("chars_race", "data-race", 14, 14),
        s("shorts_race", "data-race", 24, 24),
        s("vectors_race", "data-race", 40, 40),
        s("vstores_race", "data-race", 58, 58),
    ]
    .into_iter()
    .collect();
    assert_eq!(findings(&native), want, "{native:#}");
    assert_eq!(native["engine"], "native", "no launch fell back: {stderr}");
    // Every race names both of its accesses, each with a work-item of the same group.
    for f in native["findings"].as_array().expect("findings") {
        let e = &f["example"];
        assert!(e["first"].is_object() && e["second"].is_object(), "{f:#}");
        assert_eq!(e["first"]["group"], e["second"]["group"], "{f:#}");
    }
    // Every access of these kernels is checked (vload4 / vstore4 too): nothing was left out.
    assert_eq!(native["not_checked"], serde_json::json!([]), "{native:#}");
    assert_eq!(native["accesses"]["not_checked"], 0, "{native:#}");
    if !Path::new(ICD).is_file() {
        skip(
            "check_coverage",
            "Oclgrind is not installed: no cross-validation",
        );
        return;
    }
    let (_, reference, _) = check_json(&dir, &["--engine", "oclgrind"]);
    assert_engines_agree(
        "check_granular.cl",
        &findings(&native),
        &findings(&reference),
    );
}

#[test]
fn the_kernels_of_check_cl_agree_between_the_engines() {
    if !Path::new(ICD).is_file() {
        skip(
            "check_coverage",
            "Oclgrind is not installed: no cross-validation",
        );
        return;
    }
    // The kernels check_native.rs does not launch in its default table.
    let dir = capture(
        "check-agreement",
        "check.cl",
        &[
            "pointer_overrun",
            "helper_store",
            "macro_helper_store",
            "group_global_race",
            "group_global_race_fixed",
            "guarded_overrun",
        ],
    );
    let (_, native, _) = check_json(&dir, &[]);
    let (_, reference, _) = check_json(&dir, &["--engine", "oclgrind"]);
    assert_engines_agree("check.cl", &findings(&native), &findings(&reference));
}

#[test]
fn a_read_only_table_in_one_group_of_4096_is_clean_and_oclgrinds_group_limit_is_its_own() {
    let dir = capture("check-big-group", "check_granular.cl", &["table:4096:4096"]);
    let (code, native, stderr) = check_json(&dir, &[]);
    assert_eq!(code, 0, "{native:#}\n{stderr}");
    assert_eq!(native["findings"], serde_json::json!([]), "{native:#}");
    assert_eq!(native["launches"][0]["status"]["status"], "checked");
    if !Path::new(ICD).is_file() {
        skip(
            "check_coverage",
            "Oclgrind is not installed: no engine limit",
        );
        return;
    }
    // Oclgrind's device allows 1 024 work-items per group: the launch is not checked there,
    // which is said as Oclgrind's limit, not as the application's misuse.
    let (code, reference, stderr) = check_json(&dir, &["--engine", "oclgrind"]);
    assert_eq!(
        reference["findings"],
        serde_json::json!([]),
        "{reference:#}"
    );
    let status = &reference["launches"][0]["status"];
    assert_eq!(status["status"], "engine-limit", "{reference:#}\n{stderr}");
    let reason = status["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("1024") && reason.contains("Oclgrind"),
        "{reason}"
    );
    assert_eq!(
        code, 3,
        "not checked is incomplete, not clean: {reference:#}"
    );
}

#[test]
fn unchecked_accesses_are_counted_listed_in_html_and_sarif_and_exit_3() {
    // `macro_helper_store` reads `in` in its body (checked) and stores through helper
    // `put_hidden`, called from inside a macro (not instrumented).
    let dir = capture("check-incomplete", "check.cl", &["macro_helper_store"]);
    let base = dir.parent().expect("parent").to_path_buf();
    let html = base.join("report.html");
    let sarif = base.join("report.sarif");
    let out = cltrap(&[
        "check",
        dir.to_str().expect("utf-8"),
        "--html",
        html.to_str().expect("utf-8"),
        "--sarif",
        sarif.to_str().expect("utf-8"),
    ]);
    out.assert_no_panic();
    assert_eq!(out.code, Some(3), "{}", out.describe());
    let text = out.stdout_text();
    assert!(
        text.contains("checked 1 of 2 accesses; 1 not checked: 1 in helper functions"),
        "{text}"
    );
    assert!(text.contains("incomplete"), "{text}");
    let page = std::fs::read_to_string(&html).expect("html");
    assert!(page.contains("Not checked (1)"), "{page}");
    assert!(page.contains("in helper function `put_hidden`"), "{page}");
    let log: Value =
        serde_json::from_str(&std::fs::read_to_string(&sarif).expect("sarif")).expect("json");
    let notes = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .expect("notifications")
        .clone();
    let helper = notes
        .iter()
        .find(|n| {
            n["message"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("in helper function `put_hidden`"))
        })
        .unwrap_or_else(|| panic!("{log:#}"));
    assert_eq!(
        helper["locations"][0]["physicalLocation"]["region"]["startLine"],
        144
    );
    let (code, json, _) = check_json(&dir, &[]);
    assert_eq!(code, 3);
    assert_eq!(
        json["accesses"],
        serde_json::json!({"checked": 1, "not_checked": 1})
    );
    assert_eq!(json["launches"][0]["unchecked_sites"], 1);
}

#[test]
fn a_local_array_written_inside_a_macro_has_no_uninitialised_read_and_says_so() {
    // CLBlast's `#define Add(c,a,b) c = a + b` ... `Add(lm[lid], ...)`: the write is not
    // instrumented, so `lm`'s reads cannot be judged uninitialised; `never`'s still are.
    let dir = capture(
        "check-macro-write",
        "check_constructs.cl",
        &["macro_write", "macro_write_and_uninit"],
    );
    let (code, native, stderr) = check_json(&dir, &[]);
    let want: BTreeSet<Key> = [s("macro_write_and_uninit", "uninitialized", 25, 0)]
        .into_iter()
        .collect();
    assert_eq!(findings(&native), want, "{native:#}\n{stderr}");
    assert_eq!(code, 1, "{native:#}");
    // The write inside the macro is listed as not checked, and each launch says that
    // uninitialised reads of `lm` are not checked.
    let not_checked = native["not_checked"].as_array().expect("not_checked");
    for (kernel, line) in [("macro_write", 13), ("macro_write_and_uninit", 23)] {
        assert!(
            not_checked
                .iter()
                .any(|n| n["kernel"] == kernel && n["line"] == line),
            "{native:#}"
        );
    }
    for l in native["launches"].as_array().expect("launches") {
        let notes = l["notes"].to_string();
        assert!(
            notes.contains("uninitialised reads of `lm` are not checked"),
            "{l:#}"
        );
        assert!(!notes.contains("`never`"), "{l:#}");
    }
    if !Path::new(ICD).is_file() {
        skip(
            "check_coverage",
            "Oclgrind is not installed: no cross-validation",
        );
        return;
    }
    // Oclgrind: nothing in `macro_write` either.
    let (_, reference, _) = check_json(&dir, &["--engine", "oclgrind"]);
    assert!(
        findings(&reference).iter().all(|f| f.0 != "macro_write"),
        "{reference:#}"
    );
}

#[test]
fn an_instruction_oclgrind_cannot_simulate_is_its_limit_and_its_other_checks_still_run() {
    if !Path::new(ICD).is_file() {
        skip("check_coverage", "Oclgrind is not installed");
        return;
    }
    // A `/` and `%` pair: clang freezes their operands, and Oclgrind's uninitialised-value
    // plugin stops at `freeze`. That is never a finding; the launch is run again without that
    // plugin, its race still found, and the launch is said to be checked in part.
    let dir = capture(
        "check-freeze",
        "check_constructs.cl",
        &["div_rem", "div_rem_race"],
    );
    let (code, reference, stderr) = check_json(&dir, &["--engine", "oclgrind"]);
    let want: BTreeSet<Key> = [s("div_rem_race", "data-race", 41, 41)]
        .into_iter()
        .collect();
    assert_eq!(findings(&reference), want, "{reference:#}\n{stderr}");
    assert_eq!(code, 1, "{reference:#}");
    for l in reference["launches"].as_array().expect("launches") {
        assert_eq!(l["status"]["status"], "checked", "{l:#}");
        let notes = l["notes"].to_string();
        assert!(
            notes.contains("uninitialised values not checked") && notes.contains("freeze"),
            "{l:#}"
        );
    }
    // The clean kernel alone: nothing found, not everything checked (exit status 3).
    let dir = capture("check-freeze-clean", "check_constructs.cl", &["div_rem"]);
    let (code, reference, stderr) = check_json(&dir, &["--engine", "oclgrind"]);
    assert_eq!(
        reference["findings"],
        serde_json::json!([]),
        "{reference:#}\n{stderr}"
    );
    assert_eq!(code, 3, "{reference:#}");
    // Without the uninitialised-value check Oclgrind runs it whole.
    let (code, reference, _) = check_json(&dir, &["--engine", "oclgrind", "--races", "--bounds"]);
    assert_eq!(code, 0, "{reference:#}");
}

/// Runs `cltrap ARGS` from a shell that first runs `prepare` with its own pid as `$$` (the
/// pid `cltrap` then has, since the shell execs it), with `TMPDIR` and `XDG_CACHE_HOME` set.
fn cltrap_after(prepare: &str, args: &[&str], tmp: &Path, cache: &Path) -> Outcome {
    let exe = tools().cltrap.to_str().expect("utf-8").to_string();
    let script = format!("{prepare}\nexec \"$0\" \"$@\"");
    let mut all = vec!["-c", script.as_str(), exe.as_str()];
    all.extend_from_slice(args);
    run_with_env(
        "sh",
        &all,
        &[
            ("TMPDIR", tmp.as_os_str()),
            ("XDG_CACHE_HOME", cache.as_os_str()),
        ],
        None,
    )
}

#[test]
fn a_vendors_folder_or_link_prepared_at_the_old_path_is_not_used() {
    if !Path::new(ICD).is_file() {
        skip("check_coverage", "Oclgrind is not installed");
        return;
    }
    let dir = capture("check-vendors", "check_granular.cl", &["chars"]);
    let base = dir.parent().expect("parent").to_path_buf();
    let tmp = base.join("tmp");
    let cache = base.join("cache");
    let victim = base.join("victim");
    std::fs::create_dir_all(&tmp).expect("tmp");
    std::fs::create_dir_all(&victim).expect("victim");
    let d = dir.to_str().expect("utf-8");
    // A folder with another user's vendors file at $TMPDIR/cltrap-check-<pid>.
    let planted = "mkdir \"$TMPDIR/cltrap-check-$$\" && echo /nonexistent/libevil.so > \"$TMPDIR/cltrap-check-$$/evil.icd\"";
    let out = cltrap_after(
        planted,
        &["check", d, "--engine", "oclgrind", "--json"],
        &tmp,
        &cache,
    );
    out.assert_no_panic();
    assert_eq!(out.code, Some(0), "{}", out.describe());
    let folders: Vec<_> = std::fs::read_dir(&tmp)
        .expect("tmp")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    assert_eq!(
        folders.len(),
        1,
        "only the planted folder is left: {folders:?}"
    );
    let names: Vec<String> = std::fs::read_dir(&folders[0])
        .expect("planted folder")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        vec!["evil.icd".to_string()],
        "nothing written into it"
    );
    // A link at that path to a folder of the victim's: nothing is written through it.
    std::fs::remove_dir_all(&folders[0]).expect("clean");
    let link = format!("ln -s '{}' \"$TMPDIR/cltrap-check-$$\"", victim.display());
    let out = cltrap_after(
        &link,
        &["check", d, "--engine", "oclgrind", "--json"],
        &tmp,
        &cache,
    );
    assert_eq!(out.code, Some(0), "{}", out.describe());
    assert_eq!(
        std::fs::read_dir(&victim).expect("victim").count(),
        0,
        "the link was not followed"
    );
}

#[test]
fn the_native_cache_is_private_under_the_users_cache_and_a_tampered_file_is_not_trusted() {
    let dir = capture("check-cache", "check_granular.cl", &["chars_race"]);
    let base = dir.parent().expect("parent").to_path_buf();
    let tmp = base.join("tmp");
    let cache = base.join("cache");
    std::fs::create_dir_all(&tmp).expect("tmp");
    // The old shared path, prepared by someone else: not used.
    let old = tmp.join("cltrap-native-cache");
    std::fs::create_dir_all(&old).expect("old path");
    let d = dir.to_str().expect("utf-8");
    let run = || {
        let out = cltrap_after("true", &["check", d, "--json"], &tmp, &cache);
        out.assert_no_panic();
        let json: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", out.describe()));
        (out.code, json)
    };
    let (code, first) = run();
    assert_eq!(code, Some(1), "{first:#}");
    assert_eq!(std::fs::read_dir(&old).expect("old").count(), 0);
    let native = cache.join("cltrap").join("native");
    for d in [cache.join("cltrap"), native.clone()] {
        let mode = std::fs::metadata(&d)
            .expect("cache folder")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "{}", d.display());
    }
    let files: Vec<_> = std::fs::read_dir(&native)
        .expect("cache")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    // Planted source: a program whose build fails. Trusted, the launch would fall back to
    // Oclgrind (or fail); ignored and made again, it runs natively with the same finding.
    let text = std::fs::read_to_string(&files[0]).expect("cached");
    let mut cached: Value = serde_json::from_str(&text).expect("json");
    cached["source"] = Value::String("#error planted\n".into());
    std::fs::write(&files[0], cached.to_string()).expect("tamper");
    let (code, second) = run();
    assert_eq!(code, Some(1), "{second:#}");
    assert_eq!(second["engine"], "native", "{second:#}");
    assert_eq!(findings(&second), findings(&first));
    let again = std::fs::read_to_string(&files[0]).expect("made again");
    assert!(
        !again.contains("#error planted"),
        "the cache entry was made again"
    );
}

#[test]
fn fences_macro_barriers_and_races_between_groups_are_found_on_oclgrinds_lines() {
    // A barrier fencing `__local` memory only leaves a `__global` write and a neighbour's read
    // in one interval (a race, as Oclgrind says); fencing `__global` memory orders them.
    // Barriers written in macro bodies (`local_barrier()` with its `;`, a macro with a fence
    // before its barrier) end their intervals; without them both races are found.
    let kernels = [
        "local_fence_global",
        "global_fence_global",
        "macro_barriers",
        "macro_barriers_race",
        "macro_reduce",
        "normalize_weights",
        "last_group_writes_twice",
    ];
    let dir = capture("check-fences", "check_constructs.cl", &kernels);
    let (code, native, stderr) = check_json(&dir, &[]);
    let want: BTreeSet<Key> = [
        s("local_fence_global", "data-race", 49, 51),
        s("macro_barriers_race", "data-race", 84, 85),
        s("macro_barriers_race", "uninitialized", 85, 0),
        s("macro_barriers_race", "data-race", 86, 87),
        // A particle filter's two races between groups: the CDF helper's read of weights
        // other groups write, and `u[0]` read by every group's first work-item.
        s("normalize_weights", "data-race", 113, 123),
        s("normalize_weights", "data-race", 127, 131),
        // A group's second write of a word it wrote first is not compared again (Oclgrind
        // keeps each group's first store): one pair, whichever group runs first.
        s("last_group_writes_twice", "data-race", 142, 146),
    ]
    .into_iter()
    .collect();
    assert_eq!(findings(&native), want, "{native:#}\n{stderr}");
    assert_eq!(code, 1, "{native:#}");
    assert_eq!(native["engine"], "native", "no launch fell back: {stderr}");
    // Every launch had its `__local` checks (no barrier left uncounted).
    for l in native["launches"].as_array().expect("launches") {
        assert!(!l["notes"].to_string().contains("not counted"), "{l:#}");
        assert!(!l["notes"].to_string().contains("with other code"), "{l:#}");
    }
    // The three accesses of `Add(lm[l], lm[l], lm[l + s])` share one place: each is counted,
    // in the total and in its reason's count.
    let macro_reduce: Vec<&Value> = native["not_checked"]
        .as_array()
        .expect("not_checked")
        .iter()
        .filter(|n| n["kernel"] == "macro_reduce")
        .collect();
    assert_eq!(macro_reduce.len(), 1, "{native:#}");
    assert_eq!(macro_reduce[0]["accesses"], 3, "{native:#}");
    let out = cltrap(&["check", dir.to_str().expect("utf-8 path")]);
    let summary = format!("{}{}", String::from_utf8_lossy(&out.stdout), out.stderr);
    let total = native["accesses"]["not_checked"].as_u64().expect("count");
    assert!(
        summary.contains(&format!(
            "{total} not checked: {total} written inside macros"
        )),
        "{summary}"
    );
    if !Path::new(ICD).is_file() {
        skip(
            "check_coverage",
            "Oclgrind is not installed: no cross-validation",
        );
        return;
    }
    let (_, reference, _) = check_json(&dir, &["--engine", "oclgrind"]);
    assert_engines_agree(
        "check_constructs.cl",
        &findings(&native),
        &findings(&reference),
    );
}
