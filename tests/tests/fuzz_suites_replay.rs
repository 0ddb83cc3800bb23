//! A fuzz suite replays as recorded: every kept case was run again, independently, through
//! the user's program on the executor replay uses, and only cases that reproduced their
//! outputs there are in the suite. Arguments that name one buffer in the captured launch are
//! one buffer in the suite (a replay that ran them apart would give other outputs).

use cltrap_e2e::*;

#[test]
fn a_suite_of_a_kernel_with_aliased_buffer_arguments_replays_as_recorded() {
    let exe = fixture("memory");
    let dir = fresh_capture_dir("fuzz-alias");
    let captured = run_captured(&dir, &[], &exe, &[] as &[&str]).expect_success();
    captured.assert_no_panic();
    let suite = fresh_dir("suites", "fuzz-alias");
    let fuzz = cltrap(&[
        "fuzz".to_string(),
        dir.display().to_string(),
        "--kernel".into(),
        "add_into".into(),
        "--budget".into(),
        "200".into(),
        "--out".into(),
        suite.display().to_string(),
    ]);
    fuzz.assert_no_panic();
    assert_eq!(fuzz.code, Some(0), "{}", fuzz.describe());
    let replay = cltrap(&["replay".to_string(), suite.display().to_string()]);
    replay.assert_no_panic();
    let text = replay.stdout_text();
    assert!(
        replay.code == Some(0) && !text.contains("MISMATCH") && text.contains("OK"),
        "every kept case replays as recorded\n{}",
        replay.describe()
    );
}
