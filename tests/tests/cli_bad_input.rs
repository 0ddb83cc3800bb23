//! Bad input to the CLI gives one clear sentence and a non-zero exit, never a panic.

use cltrap_e2e::*;
use std::ffi::OsStr;

/// Asserts a failed command explained itself in exactly one stderr line mentioning `about`.
fn assert_one_clear_line(out: &Outcome, about: &str) {
    out.assert_no_panic();
    assert!(
        !out.success() && out.code.is_some(),
        "expected a non-zero exit\n{}",
        out.describe()
    );
    let lines = meaningful_stderr_lines(&out.stderr);
    assert_eq!(
        lines.len(),
        1,
        "expected one line on stderr\n{}",
        out.describe()
    );
    assert!(
        lines[0].to_lowercase().contains(&about.to_lowercase()),
        "the message should mention `{about}`\n{}",
        out.describe()
    );
}

fn cmd(args: &[&OsStr]) -> Outcome {
    cltrap(args)
}

/// A small valid capture to break in different ways.
fn small_capture(label: &str) -> TestDir {
    let exe = fixture("sequence");
    let dir = fresh_capture_dir(label);
    run_captured(&dir, &["--per-kernel", "1"], &exe, &[] as &[&str]).expect_success();
    assert_eq!(open_capture(&dir).launches.len(), 3);
    dir
}

#[test]
fn a_missing_capture_dir_is_one_clear_error() {
    let missing = e2e_dir().join("no-such-capture-dir");
    for sub in ["list", "replay"] {
        let out = cmd(&[OsStr::new(sub), missing.as_os_str()]);
        assert_one_clear_line(&out, "no-such-capture-dir");
    }
    let out = cmd(&[OsStr::new("show"), missing.as_os_str(), OsStr::new("0")]);
    assert_one_clear_line(&out, "no-such-capture-dir");
}

#[test]
fn a_corrupt_manifest_is_one_clear_error() {
    let dir = small_capture("corrupt");
    std::fs::write(dir.join("manifest.json"), b"{ this is not json").expect("write manifest");
    for sub in ["list", "replay"] {
        let out = cmd(&[OsStr::new(sub), dir.as_os_str()]);
        assert_one_clear_line(&out, "manifest.json");
    }
}

#[test]
fn a_corrupt_launch_log_is_one_clear_error() {
    let dir = small_capture("corrupt-log");
    let log = dir.join("launches.jsonl");
    let mut text = std::fs::read_to_string(&log).expect("read log");
    text.insert_str(0, "{\"id\": \"not a number\"}\n");
    std::fs::write(&log, text).expect("write log");
    let out = cmd(&[OsStr::new("list"), dir.as_os_str()]);
    assert_one_clear_line(&out, "launches.jsonl");
}

#[test]
fn a_capture_of_another_format_version_is_refused_clearly() {
    let dir = small_capture("version");
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).expect("read manifest");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("manifest is JSON");
    v["version"] = serde_json::json!(999);
    std::fs::write(&path, v.to_string()).expect("write manifest");
    for sub in ["list", "replay"] {
        let out = cmd(&[OsStr::new(sub), dir.as_os_str()]);
        assert_one_clear_line(&out, "999");
    }
}

#[test]
fn a_launch_id_out_of_range_is_one_clear_error() {
    let dir = small_capture("range");
    for sub in ["show", "replay"] {
        let out = cmd(&[OsStr::new(sub), dir.as_os_str(), OsStr::new("3")]);
        assert_one_clear_line(&out, "3");
    }
    let out = cmd(&[
        OsStr::new("show"),
        dir.as_os_str(),
        OsStr::new("not-a-number"),
    ]);
    out.assert_no_panic();
    assert!(!out.success(), "{}", out.describe());
}

#[test]
fn a_kernel_edited_so_it_no_longer_builds_fails_replay_clearly() {
    let dir = small_capture("edited");
    let cap = open_capture(&dir);
    let old_prog_hash = cap.launches[0].program.clone();
    let mut prog = cap.program(&old_prog_hash).expect("program record");
    let cltrap_capture::ProgramOrigin::Source { sources } = &mut prog.origin else {
        panic!("sequence.cl is built from source: {:?}", prog.origin)
    };
    let text = cap.source_text(&sources[0]).expect("source");
    let broken = text.replace("out[g] = v + (int)g;", "out[g] = v + ;");
    assert_ne!(broken, text, "the edit applied");
    // Store the edited source and program as new blobs and point the launches at them, the
    // way a user editing a capture by hand (or a tool) would.
    let store = cltrap_capture::BlobStore::new(&dir);
    sources[0] = store.put(broken.as_bytes()).expect("store source");
    let new_prog_hash = store
        .put(&serde_json::to_vec(&prog).expect("encode program"))
        .expect("store program");
    let log = dir.join("launches.jsonl");
    let text = std::fs::read_to_string(&log).expect("read log");
    std::fs::write(&log, text.replace(&old_prog_hash, &new_prog_hash)).expect("write log");
    assert_eq!(open_capture(&dir).launches[0].program, new_prog_hash);

    let out = cmd(&[OsStr::new("replay"), dir.as_os_str(), OsStr::new("0")]);
    out.assert_no_panic();
    assert!(!out.success() && out.code.is_some(), "{}", out.describe());
    let all = format!("{}{}", out.stdout_text(), out.stderr).to_lowercase();
    assert!(
        all.contains("build"),
        "the failure should say the kernel does not build\n{}",
        out.describe()
    );
    assert_eq!(ok_lines(&out.stdout_text()), 0, "{}", out.describe());
}

#[test]
fn a_damaged_blob_is_reported_not_replayed() {
    let dir = small_capture("damaged");
    let cap = open_capture(&dir);
    let hash = cap.launches[0].program.clone();
    let path = cltrap_capture::writer::blob_path(&dir, &hash);
    std::fs::write(&path, b"{}").expect("overwrite blob");
    let out = cmd(&[OsStr::new("replay"), dir.as_os_str(), OsStr::new("0")]);
    out.assert_no_panic();
    assert!(!out.success() && out.code.is_some(), "{}", out.describe());
    assert_eq!(ok_lines(&out.stdout_text()), 0, "{}", out.describe());
}
