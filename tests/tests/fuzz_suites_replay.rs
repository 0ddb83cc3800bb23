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
    // add_into(dst, src) ran with one buffer as both: the suite says so.
    let launches =
        std::fs::read_to_string(suite.join("launches.jsonl")).expect("the suite's launches");
    for line in launches.lines() {
        let l: serde_json::Value = serde_json::from_str(line).expect("a launch record");
        let mems: Vec<&serde_json::Value> = l["args"]
            .as_array()
            .expect("args")
            .iter()
            .map(|a| &a["mem"])
            .collect();
        assert!(
            mems.len() == 2 && mems[0] == mems[1] && !mems[0].is_null(),
            "aliased arguments are one memory object in the suite: {line}"
        );
    }
    let replay = cltrap(&["replay".to_string(), suite.display().to_string()]);
    replay.assert_no_panic();
    let text = replay.stdout_text();
    assert!(
        replay.code == Some(0)
            && !text.contains("MISMATCH")
            && text.contains("0 mismatched, 0 skipped, 0 failed"),
        "every kept case replays as recorded\n{}",
        replay.describe()
    );
}
