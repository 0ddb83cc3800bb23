//! The third-party matrix: a real application from a Debian or PyPI package taken through
//! every command a user runs after a capture — replay, `--schedules`, cover, check (native,
//! with Oclgrind as the reference), fuzz one kernel, mutate one kernel, export and run the
//! reproducers — asserting what each must do on correct third-party code.
//!
//! Why one pipeline: each analysis can fail on real code in its own way (a crash on
//! programs of several strings, races that do not exist, instrumentation the driver rejects,
//! mutation scores without test cases). A step that goes wrong is collected, not fatal, so
//! one run of an application reports every step that failed.

use crate::paths::{fresh_capture_dir, fresh_dir, TestDir};
use crate::process::{cltrap, run_with_env, Outcome};
use serde_json::Value;
use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// One application of the matrix and the kernels its analyses single out.
#[derive(Default)]
pub struct App {
    /// Short name (capture folder, messages, allow-list key).
    pub name: &'static str,
    /// The program to run and its arguments.
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Variables the application needs (e.g. a library's cache switch).
    pub env: Vec<(&'static str, OsString)>,
    /// Variables set to a new empty folder for each run of the application (native, then
    /// captured), so a binary cache the native run fills cannot hand the captured run
    /// binaries the analyses cannot read (e.g. hashcat's kernel cache, which has no fallback
    /// to source when a cached binary is refused).
    pub private_dirs: Vec<&'static str>,
    /// `cltrap run` flags before `--` (e.g. `--per-kernel 3` for a benchmark that repeats one
    /// launch thousands of times, `--refuse-binaries` for a library that falls back to source).
    pub capture_flags: Vec<OsString>,
    /// Whether the application's stdout is the same on every run; a benchmark printing its
    /// timings is not, and only `expect_stdout` is required of its captured run.
    pub timed_stdout: bool,
    /// What the application's stdout must contain when its own results are right.
    pub expect_stdout: &'static str,
    /// The kernel `fuzz` runs on (by name; its first launch seeds the campaign).
    pub fuzz_kernel: &'static str,
    /// The kernel `mutate` runs on.
    pub mutate_kernel: &'static str,
    /// `mutate --operators` for a kernel whose full set of mutants does not fit the harness's
    /// limit (e.g. `gpu` for a generated FFT kernel with hundreds of arithmetic sites); None:
    /// every operator.
    pub mutate_operators: Option<&'static str>,
    /// The kernel whose first launch is exported as C and Python reproducers.
    pub export_kernel: &'static str,
}

/// What went wrong in a run of the pipeline, one sentence (and the command's output) per step.
#[derive(Default)]
pub struct Verdicts {
    failures: Vec<String>,
}

impl Verdicts {
    fn fail(&mut self, step: &str, what: String) {
        self.failures.push(format!("[{step}] {what}"));
    }

    fn check(&mut self, step: &str, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.fail(step, what());
        }
    }

    /// Panics with every collected failure (the test's verdict).
    pub fn assert_none(self, app: &str) {
        assert!(
            self.failures.is_empty(),
            "{app}: {} step(s) failed:\n{}",
            self.failures.len(),
            self.failures.join("\n\n")
        );
    }
}

fn env_refs<'a>(env: &'a [(&'static str, OsString)]) -> Vec<(&'static str, &'a OsStr)> {
    env.iter().map(|(k, v)| (*k, v.as_os_str())).collect()
}

/// `cltrap ARGS` with the application's variables set (a library's switches matter to
/// `run`; to the analyses they are harmless).
fn cltrap_env<S: AsRef<OsStr>>(
    app: &App,
    extra: &[(&'static str, OsString)],
    args: &[S],
) -> Outcome {
    if app.env.is_empty() && extra.is_empty() {
        return cltrap(args);
    }
    let mut env = env_refs(&app.env);
    env.extend(env_refs(extra));
    env.push(("CLTRAP_SHIM", crate::paths::tools().shim.as_os_str()));
    run_with_env(&crate::paths::tools().cltrap, args, &env, None)
}

/// `cltrap ARGS`, with a command that outlives the harness's limit turned into a failed
/// outcome (no exit code, the limit's message on stderr) instead of a panic, so the steps after
/// it still run and the row reports every step that failed.
fn guarded<S: AsRef<OsStr>>(args: &[S]) -> Outcome {
    let started = std::time::Instant::now();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cltrap(args))).unwrap_or_else(|p| {
        let why = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "the command panicked".to_string());
        Outcome {
            command: args
                .iter()
                .map(|a| a.as_ref().to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            code: None,
            signal: None,
            stdout: Vec::new(),
            stderr: why,
            elapsed: started.elapsed(),
        }
    })
}

fn os(args: &[&dyn AsRef<OsStr>]) -> Vec<OsString> {
    args.iter().map(|a| a.as_ref().to_os_string()).collect()
}

/// The id of the first launch of `kernel` in `cltrap list DIR` (its second column).
fn first_launch_of(list: &str, kernel: &str) -> Option<u64> {
    list.lines().skip(1).find_map(|l| {
        let mut cols = l.split_whitespace();
        let id = cols
            .next()?
            .trim_end_matches(|c: char| !c.is_ascii_digit())
            .parse()
            .ok()?;
        (cols.next()? == kernel).then_some(id)
    })
}

/// A finding as the reference comparison sees it: kind, kernel and the line pair.
type FindingKey = (String, String, Option<u64>, Option<u64>);

fn finding_keys(json: &Value) -> BTreeSet<FindingKey> {
    json.get("findings")
        .and_then(Value::as_array)
        .map(|fs| fs.iter().map(finding_key).collect())
        .unwrap_or_default()
}

/// The key of one finding of a `check --json` report: kind, kernel and its line pair in
/// source order.
fn finding_key(f: &Value) -> FindingKey {
    let line = |v: &Value| v.get("line").and_then(Value::as_u64);
    let ex = f.get("example").unwrap_or(&Value::Null);
    let (a, b) = (
        ex.get("first").and_then(line),
        ex.get("second").and_then(line),
    );
    let (a, b) = if b.is_some() && b < a { (b, a) } else { (a, b) };
    (
        f.get("kind")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string(),
        f.get("kernel")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string(),
        a,
        b,
    )
}

/// Launch ids whose check by this engine finished.
fn checked_launches(json: &Value) -> BTreeSet<u64> {
    json.get("launches")
        .and_then(Value::as_array)
        .map(|ls| {
            ls.iter()
                .filter(|l| l.pointer("/status/status").and_then(Value::as_str) == Some("checked"))
                .filter_map(|l| l.get("id").and_then(Value::as_u64))
                .collect()
        })
        .unwrap_or_default()
}

/// The explained disagreements between the native engine and Oclgrind
/// (`tests/thirdparty/agreement-allow.txt`: `app kind kernel line[-line][,line...] reason...`;
/// one reason may cover several lines of one kernel, comma-separated).
fn allowed(app: &str, key: &FindingKey) -> bool {
    let path = crate::paths::fixture_source_dir("thirdparty").join("agreement-allow.txt");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines = match (key.2, key.3) {
        (Some(a), Some(b)) => format!("{a}-{b}"),
        (Some(a), None) => a.to_string(),
        _ => "-".to_string(),
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() >= 5
                && w[0] == app
                && w[1] == key.0
                && w[2] == key.1
                && w[3].split(',').any(|l| l == lines)
        })
}

/// Runs the whole pipeline on `app`; returns the verdicts (assert with
/// [`Verdicts::assert_none`]) and keeps the capture folder alive while they are read.
pub fn run_pipeline(app: &App) -> (TestDir, Verdicts) {
    let mut v = Verdicts::default();
    let mut env = env_refs(&app.env);
    let private_native: Vec<(&'static str, OsString)> = app
        .private_dirs
        .iter()
        .map(|k| (*k, fresh_dir("matrix-private", app.name).into_os_string()))
        .collect();
    env.extend(env_refs(&private_native));
    let native = run_with_env(&app.program, &app.args, &env, None);
    assert!(
        native.success() && native.stdout_text().contains(app.expect_stdout),
        "{}: the application itself does not work here\n{}",
        app.name,
        native.describe()
    );

    // Capture: the application behaves as without the shim.
    let dir = fresh_capture_dir(app.name);
    let mut run_args = os(&[&"run", &"--out", &dir.as_os_str()]);
    run_args.extend(app.capture_flags.iter().cloned());
    run_args.push("--".into());
    run_args.push(app.program.clone().into_os_string());
    run_args.extend(app.args.iter().cloned());
    let private_captured: Vec<(&'static str, OsString)> = app
        .private_dirs
        .iter()
        .map(|k| (*k, fresh_dir("matrix-private", app.name).into_os_string()))
        .collect();
    let captured = cltrap_env(app, &private_captured, &run_args);
    captured.assert_no_panic();
    let same = if app.timed_stdout {
        captured.stdout_text().contains(app.expect_stdout)
    } else {
        captured.stdout == native.stdout
    };
    v.check("capture", captured.success() && same, || {
        format!(
            "the captured run differs from the native one\n{}",
            captured.describe()
        )
    });
    let list = guarded(&[OsStr::new("list"), dir.as_os_str()]);
    v.check("list", list.success(), || list.describe());
    let list_text = list.stdout_text();
    let launches = list_text
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .count();
    assert!(
        launches > 0,
        "{}: nothing captured\n{}",
        app.name,
        captured.describe()
    );

    // Replay: every launch bit for bit.
    let replay = guarded(&[OsStr::new("replay"), dir.as_os_str()]);
    replay.assert_no_panic();
    v.check(
        "replay",
        replay.success() && crate::checks::ok_lines(&replay.stdout_text()) == launches,
        || {
            format!(
                "not every one of {launches} launches replayed ok\n{}",
                replay.describe()
            )
        },
    );

    // Schedules: correct code is deterministic under permuted work-group orders.
    let sched = guarded(&[
        OsStr::new("replay"),
        dir.as_os_str(),
        OsStr::new("--schedules"),
        OsStr::new("3"),
    ]);
    sched.assert_no_panic();
    let s = sched.stdout_text();
    v.check(
        "schedules",
        sched.success()
            && s.contains(" 0 schedule-dependent, 0 nondeterministic")
            && s.contains(" 0 failed"),
        || sched.describe(),
    );

    // Coverage: every launch instrumented and run.
    let cover = guarded(&[OsStr::new("cover"), dir.as_os_str()]);
    cover.assert_no_panic();
    v.check(
        "cover",
        cover.success() && cover.stdout_text().contains(" 0 failed)"),
        || cover.describe(),
    );

    // Check: the native engine's findings are Oclgrind's, where Oclgrind finished.
    let check_json = |engine: &str| {
        let out = guarded(&[
            OsStr::new("check"),
            dir.as_os_str(),
            OsStr::new("--json"),
            OsStr::new("--engine"),
            OsStr::new(engine),
        ]);
        out.assert_no_panic();
        let json: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out, json)
    };
    let (native_out, native_json) = check_json("native");
    let (ref_out, ref_json) = check_json("oclgrind");
    v.check(
        "check",
        native_json.is_object() && ref_json.is_object(),
        || {
            format!(
                "no JSON report\n{}\n{}",
                native_out.describe(),
                ref_out.describe()
            )
        },
    );
    let both = &checked_launches(&native_json) & &checked_launches(&ref_json);
    // A finding disagrees only where it was reported on a launch both engines checked: the
    // same finding (kind, kernel, lines), not another one of a kernel of the same name (a
    // second program's `scan_lev1` that only one engine could run).
    let in_both = |k: &FindingKey, json: &Value| {
        json.get("findings")
            .and_then(Value::as_array)
            .is_some_and(|fs| {
                fs.iter().any(|f| {
                    finding_key(f) == *k
                        && f.get("launches")
                            .and_then(Value::as_array)
                            .is_some_and(|ls| {
                                ls.iter()
                                    .filter_map(Value::as_u64)
                                    .any(|l| both.contains(&l))
                            })
                })
            })
    };
    // An access native lists as not checked (an image write, say) is not one both engines
    // checked: Oclgrind's finding there is what the native summary's "incomplete" points to.
    let unchecked_by_native = |k: &FindingKey| {
        native_json
            .get("not_checked")
            .and_then(Value::as_array)
            .is_some_and(|ns| {
                ns.iter().any(|n| {
                    let line = n.get("line").and_then(Value::as_u64);
                    n.get("kernel").and_then(Value::as_str) == Some(k.1.as_str())
                        && line.is_some()
                        && (line == k.2 || line == k.3)
                })
            })
    };
    let (mine, theirs) = (finding_keys(&native_json), finding_keys(&ref_json));
    for k in mine.symmetric_difference(&theirs) {
        if !mine.contains(k) && unchecked_by_native(k) {
            continue;
        }
        let relevant = in_both(k, &native_json) || in_both(k, &ref_json);
        if relevant && !allowed(app.name, k) {
            let who = if mine.contains(k) {
                "native only"
            } else {
                "Oclgrind only"
            };
            v.fail(
                "check",
                format!("{who}: {k:?} (not in tests/thirdparty/agreement-allow.txt)"),
            );
        }
    }

    // Fuzz one kernel: every case kept replays as recorded, and cover runs the suite. The
    // budget is wall time (an execution of a large kernel such as hashcat's `l_markov` takes
    // seconds, and each crash rebuilds the worker's program): the campaign, its checks of the
    // kept cases included, stays well inside the command's time limit.
    let suite = fresh_dir("matrix-suite", app.name);
    let fuzz = guarded(&os(&[
        &"fuzz",
        &dir.as_os_str(),
        &"--kernel",
        &app.fuzz_kernel,
        &"--budget",
        &"60s",
        &"--out",
        &suite.as_os_str(),
    ]));
    fuzz.assert_no_panic();
    v.check("fuzz", matches!(fuzz.code, Some(0) | Some(1)), || {
        fuzz.describe()
    });
    if suite.join("launches.jsonl").exists() {
        let again = guarded(&[OsStr::new("replay"), suite.as_os_str()]);
        again.assert_no_panic();
        v.check("fuzz", again.success(), || {
            format!(
                "a kept case does not replay as recorded\n{}",
                again.describe()
            )
        });
        let cov = guarded(&[OsStr::new("cover"), suite.as_os_str()]);
        cov.assert_no_panic();
        v.check(
            "fuzz",
            cov.success() && cov.stdout_text().contains(" 0 failed)"),
            || format!("cover cannot run the suite\n{}", cov.describe()),
        );
    } else {
        v.fail("fuzz", format!("no suite written\n{}", fuzz.describe()));
    }

    // Mutate one kernel: the captured launches are test cases, and a score is given.
    let report = suite.with_extension("mutants.json");
    let mutate = guarded(
        &os(&[
            &"mutate",
            &dir.as_os_str(),
            &"--kernel",
            &app.mutate_kernel,
            &"--json",
            &report.as_os_str(),
        ])
        .into_iter()
        .chain(
            app.mutate_operators
                .iter()
                .flat_map(|o| ["--operators".into(), OsString::from(o)]),
        )
        .collect::<Vec<_>>(),
    );
    mutate.assert_no_panic();
    let mutants: Value = std::fs::read(&report)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    let killed = mutants
        .pointer("/files")
        .and_then(Value::as_object)
        .map(|files| {
            files
                .values()
                .filter_map(|f| f.get("mutants").and_then(Value::as_array))
                .flatten()
                .filter(|m| m.get("status").and_then(Value::as_str) == Some("Killed"))
                .count()
        })
        .unwrap_or(0);
    v.check("mutate", mutate.success() && killed > 0, || {
        format!("no mutant killed (no test case?)\n{}", mutate.describe())
    });

    // Export the first launch of one kernel; both reproducers build, run and match.
    match first_launch_of(&list_text, app.export_kernel) {
        None => v.fail(
            "export",
            format!("no launch of {} in the list", app.export_kernel),
        ),
        Some(id) => export_and_run(app, &dir, id, &mut v),
    }
    (dir, v)
}

fn export_and_run(app: &App, dir: &Path, id: u64, v: &mut Verdicts) {
    let out = fresh_dir("matrix-export", app.name);
    let id = id.to_string();
    let c_dir = out.join("c");
    let e = guarded(&os(&[
        &"export",
        &dir.as_os_str(),
        &id,
        &"--c",
        &c_dir.as_os_str(),
    ]));
    e.assert_no_panic();
    if !e.success() {
        return v.fail("export", e.describe());
    }
    let build = run_with_env(
        "sh",
        &["-c", "cc -O0 -o repro main.c -lOpenCL -lm"],
        &[],
        Some(&c_dir),
    );
    v.check("export", build.success(), || {
        format!("the C reproducer does not build\n{}", build.describe())
    });
    if build.success() {
        let run = run_with_env(c_dir.join("repro"), &[] as &[&str], &[], Some(&c_dir));
        v.check("export", run.success(), || {
            format!("the C reproducer fails\n{}", run.describe())
        });
    }
    let py_dir = out.join("py");
    let e = guarded(&os(&[
        &"export",
        &dir.as_os_str(),
        &id,
        &"--python",
        &py_dir.as_os_str(),
    ]));
    e.assert_no_panic();
    v.check("export", e.success(), || e.describe());
    let script = std::fs::read_dir(&py_dir).ok().and_then(|d| {
        d.flatten()
            .map(|e| e.path())
            .find(|p| p.extension() == Some(OsStr::new("py")))
    });
    match (script, debian_pyopencl()) {
        (Some(script), true) => {
            let run = run_with_env(
                "/usr/bin/python3",
                &[script.as_os_str()],
                &[],
                Some(&py_dir),
            );
            v.check("export", run.success(), || {
                format!("the Python reproducer fails\n{}", run.describe())
            });
        }
        (None, _) => v.fail("export", "no Python reproducer written".into()),
        (Some(_), false) => {}
    }
    let gv = out.join("gpuverify");
    let e = guarded(&os(&[
        &"export",
        &dir.as_os_str(),
        &"--gpuverify",
        &gv.as_os_str(),
    ]));
    e.assert_no_panic();
    v.check("export", e.success(), || e.describe());
}

/// Whether Debian's `python3-pyopencl` is importable by `/usr/bin/python3`.
pub fn debian_pyopencl() -> bool {
    run_with_env("/usr/bin/python3", &["-c", "import pyopencl"], &[], None).success()
}

/// Whether the matrix's slow applications run (`CLTRAP_MATRIX=1`); the default test run
/// takes the quick ones only.
pub fn full_matrix() -> bool {
    std::env::var("CLTRAP_MATRIX").is_ok_and(|v| v == "1")
}
