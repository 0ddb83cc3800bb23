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

/// A process killed outright (`SIGKILL`: no exit handler, no writer thread draining) right
/// after its last `clFinish` still leaves every launch those `clFinish` calls finished: the
/// records went into the capture's journal, a file mapped into memory, whose bytes survive
/// the process. Readers see them at once; the next writer moves them into the log.
#[test]
fn a_process_killed_after_clfinish_leaves_every_finished_launch() {
    use std::io::BufRead;
    let exe = fixture("killed");
    let dir = fresh_capture_dir("killed");
    let mut child = std::process::Command::new(&exe)
        .env("LD_PRELOAD", &tools().shim)
        .env("CLTRAP_DIR", dir.as_os_str())
        .env_remove("OPENCL_LAYERS")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the fixture starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("the fixture writes a line");
    assert_eq!(line.trim(), "finished 20 launches");
    child.kill().expect("SIGKILL");
    let _ = child.wait();

    let cap = open_capture(&dir);
    let values: Vec<i32> = cap
        .launches
        .iter()
        .filter_map(|l| scalar_i32(&l.args[1]))
        .collect();
    assert_eq!(
        values,
        (0..20).collect::<Vec<_>>(),
        "every finished launch, once"
    );
    assert_replays_ok(&dir, 20);

    // The next process writing to the capture finds the dead journal and moves it into the
    // log: the log alone then holds the 20 launches, and its own follow.
    let again = run_preloaded(&dir, &[], &exe, &["exit"]);
    again.assert_no_panic();
    assert!(again.success(), "{}", again.describe());
    let pending: Vec<_> = std::fs::read_dir(&*dir)
        .expect("capture dir")
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("launches.pending.")
        })
        .collect();
    assert!(pending.is_empty(), "journals left: {pending:?}");
    let cap = open_capture(&dir);
    assert_eq!(cap.launches.len(), 40);
    assert_replays_ok(&dir, 40);
}
