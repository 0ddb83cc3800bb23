//! The user guide (`docs/src/*.md`, the pages `docs/src/SUMMARY.md` lists) and README.md's
//! tour cannot drift from the tool: every command they show runs, and prints what the page
//! says.
//!
//! A page's runnable examples are fenced blocks whose info string is `console`, in the manner
//! of trycmd: a line `$ COMMAND` runs COMMAND (with `bash`, stderr merged into stdout, the
//! release `cltrap` first on `PATH`); an optional next line `? N` is its expected exit status
//! (0 when absent); the lines up to the next `$` line or the end of the block are its expected
//! output, where a line `...` matches any number of lines and `[..]` within a line matches
//! anything (timings, paths, device names). Matching is snapbox's (`Assert::try_eq`).
//! A block marked `console,ignore` (it needs a GPU, GPUVerify, pyopencl) is not run but
//! counted, and the count is printed.
//!
//! The blocks of one page run in order in one scratch folder laid out as the repository root
//! is after `scripts/setup.sh`: `target/examples/cltrap-demo` (the bundled example app),
//! `examples/`, `docs/` and `tests/` (links to the sources), and `cap/`, the bundled example
//! captured once for all pages (README.md's tour makes its own capture, so its folder has
//! none). Each page has its own cache folder (`XDG_CACHE_HOME`), so pages never share state.
//!
//! Each command may run 300 s (`timeout`; exit status 124 when it did not finish).
//! `CLTRAP_GUIDE_TIMES=1` prints every command's time (with `--nocapture`).
//!
//! trycmd itself is not used: it runs each page in a sandbox copied from a folder that must
//! exist in the source tree, while these pages need a capture made by the binaries under
//! test, and it runs only registered binaries (pages also show `cc` building a reproducer).

use cltrap_e2e::{fresh_capture_dir, target_dir, tools, workspace_root};
use snapbox::IntoData;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// One `$` command of a page, with what the page says it prints.
#[derive(Debug)]
struct Step {
    /// Line of the `$` in the page (1-based), for failure messages.
    line: usize,
    command: String,
    status: i32,
    expected: String,
}

/// The runnable steps of a page, in order, and how many blocks are marked not to run.
#[derive(Debug, Default)]
struct Page {
    steps: Vec<Step>,
    ignored_blocks: usize,
}

/// Splits a page into its `console` blocks' steps (see the module comment for the syntax).
fn parse_page(text: &str) -> Page {
    let mut page = Page::default();
    let mut in_fence: Option<bool> = None; // Some(runnable) inside a fence
    let mut current: Option<Step> = None;
    let mut status_allowed = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            match in_fence {
                None => {
                    let info = trimmed.trim_start_matches('`').trim();
                    let mut words = info.split(',').map(str::trim);
                    let console = words.next() == Some("console");
                    let ignore = words.any(|w| w == "ignore");
                    if console && ignore {
                        page.ignored_blocks += 1;
                    }
                    in_fence = Some(console && !ignore);
                }
                Some(_) => {
                    page.steps.extend(current.take());
                    in_fence = None;
                }
            }
            continue;
        }
        if in_fence != Some(true) {
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ") {
            page.steps.extend(current.take());
            current = Some(Step {
                line: i + 1,
                command: command.to_string(),
                status: 0,
                expected: String::new(),
            });
            status_allowed = true;
            continue;
        }
        let step = current
            .as_mut()
            .unwrap_or_else(|| panic!("line {}: output before any `$ ` command", i + 1));
        if status_allowed {
            status_allowed = false;
            if let Some(code) = line.strip_prefix("? ") {
                step.status = code
                    .trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("line {}: `? {code}` is not an exit status", i + 1));
                continue;
            }
        }
        step.expected.push_str(line);
        step.expected.push('\n');
    }
    assert!(in_fence.is_none(), "a fenced block is not closed");
    page
}

/// The bundled example captured once (`cltrap run --out cap -- target/examples/cltrap-demo`),
/// copied into every page's scratch folder.
fn demo_capture() -> &'static Path {
    static CAPTURE: OnceLock<PathBuf> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let root = workspace_root();
        let built = Command::new(root.join("scripts/build-c.sh"))
            .arg("demo")
            .current_dir(&root)
            .status()
            .expect("scripts/build-c.sh runs");
        assert!(built.success(), "scripts/build-c.sh demo failed");
        let dir = target_dir().join("e2e").join("guide-template");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("template folder");
        let out = Command::new(&tools().cltrap)
            .args(["run", "--out"])
            .arg(dir.join("cap"))
            .arg("--")
            .arg(demo_binary())
            .output()
            .expect("cltrap run starts");
        assert!(
            out.status.success(),
            "capturing the bundled example failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir.join("cap")
    })
}

fn demo_binary() -> PathBuf {
    workspace_root().join("target/examples/cltrap-demo")
}

/// Copies a folder tree of plain files (a capture).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create folder");
    for entry in std::fs::read_dir(from).expect("read folder") {
        let entry = entry.expect("folder entry");
        let kind = entry.file_type().expect("file type");
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}

/// Lays out a page's scratch folder like the repository root after `scripts/setup.sh`.
fn prepare(scratch: &Path, with_capture: bool) {
    let root = workspace_root();
    let capture = demo_capture();
    for name in ["examples", "docs", "tests"] {
        std::os::unix::fs::symlink(root.join(name), scratch.join(name)).expect("link sources");
    }
    let examples = scratch.join("target/examples");
    std::fs::create_dir_all(&examples).expect("target/examples");
    std::fs::copy(demo_binary(), examples.join("cltrap-demo")).expect("copy the demo app");
    if with_capture {
        copy_tree(capture, &scratch.join("cap"));
    }
}

/// Pages whose commands run with PoCL on one thread (`POCL_MAX_PTHREAD_COUNT=1`): they show
/// races, whose verdict (schedule-dependent, not nondeterministic) and examples must not
/// depend on how the device's threads interleave on a loaded machine. The other pages keep
/// PoCL's default: with one thread it picks other local sizes for a NULL one (the whole
/// NDRange in one group), which changes what a user sees, e.g. which mutants survive.
const ONE_THREAD: &[&str] = &["docs/src/check.md"];

/// Runs one step in `scratch` (with PoCL on one thread if `one_thread`); returns its exit
/// status and merged output.
fn run_step(scratch: &Path, step: &Step, one_thread: bool) -> (i32, String) {
    let release = tools()
        .cltrap
        .parent()
        .expect("release folder")
        .to_path_buf();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![release];
    paths.extend(std::env::split_paths(&path));
    let mut cmd = Command::new("timeout");
    if one_thread {
        cmd.env("POCL_MAX_PTHREAD_COUNT", "1");
    }
    let out = cmd
        .args(["300", "bash", "-c"])
        .arg(format!("exec 2>&1\n{}", step.command))
        .current_dir(scratch)
        .env("PATH", std::env::join_paths(paths).expect("PATH"))
        .env("XDG_CACHE_HOME", scratch.join(".cache"))
        .env_remove("CLTRAP_DIR")
        .output()
        .expect("bash runs");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// Runs every step of the page at `rel` (relative to the workspace root) and asserts that each
/// printed what the page says and exited as it says.
fn check_page(rel: &str, with_capture: bool) {
    let path = workspace_root().join(rel);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let page = parse_page(&text);
    let dir = fresh_capture_dir(&rel.replace(['/', '.'], "-"));
    let scratch = dir.parent().expect("scratch folder").to_path_buf();
    prepare(&scratch, with_capture);
    let mut failures = Vec::new();
    let started = std::time::Instant::now();
    for step in &page.steps {
        let step_started = std::time::Instant::now();
        let (status, output) = run_step(&scratch, step, ONE_THREAD.contains(&rel));
        if std::env::var_os("CLTRAP_GUIDE_TIMES").is_some() {
            eprintln!(
                "{rel}:{} {:.1} s `{}`",
                step.line,
                step_started.elapsed().as_secs_f64(),
                step.command
            );
        }
        let trimmed = format!("{}\n", output.trim_end());
        let expected = format!("{}\n", step.expected.trim_end());
        let label = format!("{rel}:{} `{}`", step.line, step.command);
        if let Err(e) = snapbox::Assert::new().try_eq(
            Some(&label),
            trimmed.clone().into_data(),
            expected.into_data(),
        ) {
            failures.push(format!("{label}: output differs\n{e}"));
        }
        if status != step.status {
            failures.push(format!(
                "{label}: exit status {status}, the page says {}\n{trimmed}",
                step.status
            ));
        }
    }
    eprintln!(
        "{rel}: {} command(s) run in {:.1} s, {} block(s) marked not to run (console,ignore)",
        page.steps.len(),
        started.elapsed().as_secs_f64(),
        page.ignored_blocks
    );
    assert!(
        failures.is_empty(),
        "{} of {} command(s) of {rel} do not do what the page says (scratch folder {}):\n\n{}",
        failures.len(),
        page.steps.len(),
        scratch.display(),
        failures.join("\n\n")
    );
}

/// The pages `docs/src/SUMMARY.md` links to, in its order.
fn summary_pages() -> Vec<String> {
    let summary = workspace_root().join("docs/src/SUMMARY.md");
    let text = std::fs::read_to_string(&summary).expect("docs/src/SUMMARY.md");
    text.lines()
        .filter_map(|l| {
            let start = l.find("](")? + 2;
            let end = l[start..].find(')')? + start;
            Some(l[start..end].to_string())
        })
        .collect()
}

#[test]
fn every_page_of_the_summary_is_tested_and_exists() {
    let listed = summary_pages();
    assert_eq!(
        listed,
        PAGES.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        "docs/src/SUMMARY.md and the PAGES list of tests/tests/guide.rs must name the same pages"
    );
    for page in &listed {
        assert!(
            workspace_root().join("docs/src").join(page).is_file(),
            "{page} is missing"
        );
    }
}

/// The blocks the guide shows but the test cannot run, per page: a new `console,ignore` block
/// must be added here, so examples do not silently stop being tested.
const NOT_RUN: &[(&str, usize)] = &[("export.md", 2), ("campaigns.md", 1)];

#[test]
fn blocks_marked_not_to_run_are_the_known_ones() {
    let mut found = Vec::new();
    for page in summary_pages() {
        let path = workspace_root().join("docs/src").join(&page);
        let text = std::fs::read_to_string(&path).expect("guide page");
        let ignored = parse_page(&text).ignored_blocks;
        if ignored > 0 {
            found.push((page, ignored));
        }
    }
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).expect("README.md");
    assert_eq!(
        parse_page(&readme).ignored_blocks,
        0,
        "README.md's tour must run whole"
    );
    let expected: Vec<(String, usize)> = NOT_RUN.iter().map(|(p, n)| (p.to_string(), *n)).collect();
    assert_eq!(
        found, expected,
        "console,ignore blocks per page (update NOT_RUN in tests/tests/guide.rs)"
    );
    eprintln!(
        "guide: {} block(s) marked console,ignore, not run: {found:?}",
        found.iter().map(|(_, n)| n).sum::<usize>()
    );
}

#[test]
fn the_page_syntax_is_read_as_documented() {
    let page = parse_page(
        "text\n```console\n$ echo a\na\n$ false\n? 1\n```\n```console,ignore\n$ gpu\n```\n```sh\n$ not run\n```\n",
    );
    assert_eq!(page.ignored_blocks, 1);
    assert_eq!(page.steps.len(), 2);
    assert_eq!(page.steps[0].command, "echo a");
    assert_eq!(page.steps[0].expected, "a\n");
    assert_eq!(page.steps[1].status, 1);
    assert_eq!(page.steps[1].expected, "");
}

/// One `#[test]` per guide page (so pages run and fail separately), and `PAGES`, the list
/// `docs/src/SUMMARY.md` must match.
macro_rules! page_tests {
    ($($name:ident => $page:literal),* $(,)?) => {
        const PAGES: &[&str] = &[$($page),*];
        $(
            #[test]
            fn $name() {
                check_page(concat!("docs/src/", $page), true);
            }
        )*
    };
}

page_tests! {
    introduction => "introduction.md",
    capture => "capture.md",
    replay => "replay.md",
    check => "check.md",
    cover => "cover.md",
    fuzz => "fuzz.md",
    mutate => "mutate.md",
    export => "export.md",
    campaigns => "campaigns.md",
    capture_format => "capture-format.md",
    controls => "controls.md",
    limitations => "limitations.md",
    security => "security.md",
    compatibility => "compatibility.md",
    development => "development.md",
}

#[test]
fn readme_tour() {
    check_page("README.md", false);
}
