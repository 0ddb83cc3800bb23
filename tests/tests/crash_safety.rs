//! A capture cut off by the application dying stays readable up to its last complete launch.

use cltrap_e2e::*;

#[test]
fn an_application_that_aborts_leaves_a_readable_capture_that_replays_ok() {
    let exe = fixture("crash");
    let native = run_native(&exe, &[] as &[&str]);
    assert_eq!(
        native.ending(),
        "signal 6",
        "the fixture aborts\n{}",
        native.describe()
    );
    assert!(
        native.stdout_text().contains("5 launches done, 0 failures"),
        "{}",
        native.describe()
    );
    let dir = fresh_capture_dir("crash");
    let captured = run_captured(&dir, &[], &exe, &[] as &[&str]);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    let cap = open_capture(&dir);
    // All five launches had completed (and been read back) before the abort.
    assert_eq!(cap.launches.len(), 5, "{:?}", kernel_sequence(&cap));
    let iters: Vec<i32> = cap
        .launches
        .iter()
        .filter_map(|l| scalar_i32(&l.args[2]))
        .collect();
    assert_eq!(iters, [0, 1, 2, 3, 4]);
    assert_list_shows(&dir, &cap);
    assert_replays_ok(&dir, 5);
}

#[test]
fn a_log_cut_mid_record_is_read_up_to_the_last_whole_launch() {
    // What a crash in the middle of a write leaves behind: half a line at the end.
    let (dir, cap) = round_trip("sequence", &[], &[]);
    let log = dir.join("launches.jsonl");
    let mut bytes = std::fs::read(&log).expect("launch log exists");
    let keep = bytes.len();
    let last_line_start = bytes[..keep - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .map(|p| p + 1)
        .unwrap_or(0);
    bytes.truncate(last_line_start + (keep - last_line_start) / 2);
    std::fs::write(&log, &bytes).expect("rewrite log");
    let cut = open_capture(&dir);
    assert_eq!(cut.launches.len(), cap.launches.len() - 1);
    assert!(cut.truncated);
    assert_replays_ok(&dir, cap.launches.len() - 1);
}
