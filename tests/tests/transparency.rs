//! The shim never changes what a program does: inert in processes without OpenCL, silent on
//! stdout, and when it cannot write its capture it says so once and lets the app run on.

use cltrap_e2e::*;
use std::ffi::OsStr;

#[test]
fn programs_without_opencl_print_exactly_what_they_print_natively() {
    let kernels = fixture_source_dir("kernels").display().to_string();
    for (prog, args) in [
        ("/usr/bin/ld", vec!["--version"]),
        ("ls", vec!["-la", kernels.as_str()]),
    ] {
        let native = run_native(prog, &args);
        assert!(native.success(), "{}", native.describe());
        let dir = fresh_capture_dir("inert");
        let captured = run_captured(&dir, &[], prog, &args);
        captured.assert_no_panic();
        assert_same_behaviour(&native, &captured);
        // The launcher may add its own `cltrap:` summary; nothing else may change.
        let others: Vec<&str> = captured
            .stderr
            .lines()
            .filter(|l| !l.starts_with("cltrap:"))
            .collect();
        let native_lines: Vec<&str> = native.stderr.lines().collect();
        assert_eq!(
            others,
            native_lines,
            "stderr changed\n{}",
            captured.describe()
        );
        // Preloaded directly (PoCL runs /usr/bin/ld with the library preloaded), the shim
        // must be completely silent.
        let pre = run_preloaded(&dir, &[], prog, &args);
        assert_same_behaviour(&native, &pre);
        assert_eq!(
            pre.stderr,
            native.stderr,
            "the shim wrote to stderr\n{}",
            pre.describe()
        );
    }
}

#[test]
fn an_unwritable_capture_dir_costs_one_stderr_line_and_nothing_else() {
    let exe = fixture("ndrange");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let forbidden = std::path::Path::new("/proc/forbidden/cltrap");
    let captured = run_captured(forbidden, &[], &exe, &[] as &[&str]);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    let lines = shim_lines_of_launcher_run(&captured.stderr);
    assert_eq!(
        lines.len(),
        1,
        "exactly one `cltrap:` line from the shim on stderr (besides the launcher's summary)\n{}",
        captured.describe()
    );
    // The same through the preload door alone.
    let pre = run_preloaded(forbidden, &[], &exe, &[] as &[&str]);
    assert_same_behaviour(&native, &pre);
    assert_eq!(cltrap_lines(&pre.stderr).len(), 1, "{}", pre.describe());
}

#[test]
fn capture_off_is_a_pure_pass_through_that_writes_no_launches() {
    let exe = fixture("queues");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let dir = fresh_capture_dir("capture-off");
    let off = run_captured(&dir, &["--capture", "off"], &exe, &[] as &[&str]);
    off.assert_no_panic();
    assert_same_behaviour(&native, &off);
    let launches = match cltrap_capture::Capture::open(&dir) {
        Ok(c) => c.launches.len(),
        Err(_) => 0,
    };
    assert_eq!(launches, 0, "capture off recorded launches");
}

#[test]
fn the_shim_writes_nothing_to_stdout_even_while_capturing() {
    // A captured run whose own stdout is redirected away must leave the pipe empty.
    let exe = fixture("sequence");
    let dir = fresh_capture_dir("quiet");
    let script = format!("{} > /dev/null", exe.display());
    let captured = run_captured(&dir, &[], "sh", &[OsStr::new("-c"), OsStr::new(&script)]);
    assert!(captured.success(), "{}", captured.describe());
    assert!(
        captured.stdout.is_empty(),
        "something wrote to stdout\n{}",
        captured.describe()
    );
    assert_eq!(open_capture(&dir).launches.len(), 12);
}

#[test]
fn exit_codes_stdin_and_stdout_pass_through_the_launcher() {
    let dir = fresh_capture_dir("exit-code");
    let out = run_captured(&dir, &[], "sh", &["-c", "echo before; exit 7"]);
    out.assert_no_panic();
    assert_eq!(out.code, Some(7), "{}", out.describe());
    assert_eq!(out.stdout, b"before\n", "{}", out.describe());
    // stdin reaches the application: pipe bytes through `cltrap run -- cat`.
    let script = format!(
        "printf 'line one\\nline two\\n' | {} run --out {} -- cat",
        tools().cltrap.display(),
        dir.display()
    );
    let piped = run_with_env(
        "sh",
        &["-c", &script],
        &[("CLTRAP_SHIM", tools().shim.as_os_str())],
        None,
    );
    assert!(piped.success(), "{}", piped.describe());
    assert_eq!(
        piped.stdout,
        b"line one\nline two\n",
        "{}",
        piped.describe()
    );
}

#[test]
fn a_second_run_into_the_same_directory_appends_to_the_capture() {
    let exe = fixture("sequence");
    let dir = fresh_capture_dir("append");
    for _ in 0..2 {
        run_captured(&dir, &[], &exe, &[] as &[&str]).expect_success();
    }
    let cap = open_capture(&dir);
    assert_eq!(cap.launches.len(), 24, "two runs of 12 launches");
    let ids: Vec<u64> = cap.launches.iter().map(|l| l.id).collect();
    assert_eq!(
        ids,
        (0..24).collect::<Vec<u64>>(),
        "ids continue across runs"
    );
    assert_replays_ok(&dir, 24);
}

#[test]
fn processes_capturing_into_one_directory_at_once_get_distinct_ids_and_lose_nothing() {
    // A test suite or a forking server: several processes under the shim at the same time,
    // one capture directory. Each process reserves its ids in blocks under a file lock, and
    // none cuts off what looks like a partial line while others are appending.
    let exe = fixture("sequence");
    let dir = fresh_capture_dir("concurrent");
    // The four copies start launching together (the fixture's rendezvous), so all four are
    // writing the capture at once.
    let meet = fresh_dir("rendezvous", "concurrent");
    let spec = std::ffi::OsString::from(format!("{}:4", meet.display()));
    let runs: Vec<_> = (0..4)
        .map(|_| {
            let (dir, exe, spec) = (dir.to_path_buf(), exe.clone(), spec.clone());
            std::thread::spawn(move || {
                run_preloaded(
                    &dir,
                    &[("SEQUENCE_RENDEZVOUS", spec.as_os_str())],
                    &exe,
                    &[] as &[&str],
                )
            })
        })
        .collect();
    for r in runs {
        r.join().expect("runner thread").expect_success();
    }
    let cap = open_capture(&dir);
    assert_eq!(cap.launches.len(), 48, "four runs of 12 launches");
    let mut ids: Vec<u64> = cap.launches.iter().map(|l| l.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 48, "ids are distinct: {ids:?}");
    for kernel in ["fill", "accumulate", "scale"] {
        let n = kernel_sequence(&cap)
            .iter()
            .filter(|k| *k == kernel)
            .count();
        assert_eq!(n, 16, "{kernel}");
    }
    assert_replays_ok(&dir, 48);
    // A later run alone continues right after the largest id (the last process to reserve
    // gave back the rest of its block when it exited).
    run_captured(&dir, &[], &exe, &[] as &[&str]).expect_success();
    let cap = open_capture(&dir);
    let max_before = *ids.last().unwrap_or(&0);
    let mut later: Vec<u64> = cap
        .launches
        .iter()
        .map(|l| l.id)
        .filter(|i| !ids.contains(i))
        .collect();
    later.sort_unstable();
    assert_eq!(later.len(), 12);
    assert!(later[0] > max_before, "{later:?} after {max_before}");
}

#[test]
fn past_the_disk_budget_capture_continues_with_digests_and_says_so_once() {
    let exe = fixture("dedup");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let dir = fresh_capture_dir("budget");
    let captured = run_captured(&dir, &["--max-mb", "0"], &exe, &[] as &[&str]);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    let lines = shim_lines_of_launcher_run(&captured.stderr);
    assert_eq!(
        lines.len(),
        1,
        "the budget is reported once\n{}",
        captured.describe()
    );
    let cap = open_capture(&dir);
    assert_eq!(cap.launches.len(), 100, "every launch is still recorded");
    // The 1 MiB buffer's one version stored before the budget ran out (compressed, or raw
    // where zstd would not shrink it by a tenth: then a few bytes of framing more), and no
    // other content.
    let blobs = dir_size(&dir.join("blobs"));
    assert!(
        blobs < (1 << 20) + (64 << 10),
        "{blobs} bytes stored past a budget of 0 MB"
    );
    let digests = cap
        .launches
        .iter()
        .flat_map(|l| l.args.iter())
        .filter_map(contents)
        .filter(|(_, after)| matches!(after, cltrap_capture::Content::Digest { .. }))
        .count();
    assert!(digests > 0, "past the budget, contents are kept as digests");
    assert_list_shows(&dir, &cap);
}

#[test]
fn every_fixture_behaves_identically_under_the_pass_through_shim() {
    for name in [
        "args",
        "memory",
        "ndrange",
        "programs",
        "queues",
        "threads",
        "dlopen_app",
        "images",
        "errors",
        "gated",
        "lifetimes",
        "sequence",
    ] {
        let exe = fixture(name);
        let native = run_native(&exe, &[] as &[&str]).expect_success();
        let dir = fresh_capture_dir(&format!("off-{name}"));
        let off = run_captured(&dir, &["--capture", "off"], &exe, &[] as &[&str]);
        off.assert_no_panic();
        assert_same_behaviour(&native, &off);
        assert_quiet_capture(&native, &off);
    }
}

/// What an application reads back about its own objects — the build options of a program
/// whose build failed, the reference counts of its queue, context, program, kernel and
/// buffers after launches and `clFinish`, and around references of its own — is what it
/// reads without the shim, with device-side digests off and on (`on` makes the shim build a
/// program, a queue and buffers of its own in the application's context), through the
/// launcher, the preload door and the layer door. `--at-finish hand` leaves the launches'
/// records to the writer thread, so a count read right after `clFinish` meets the capture
/// still holding the launches' events and the queue (the shim writes the launches that
/// completed before it answers, and leaves its own holds out).
///
/// What is not compared, and why: the queue's count where the driver's own bookkeeping moved
/// to the shim's commands. PoCL keeps the event of each buffer's last command alive, and an
/// event holds its queue; after the shim read a buffer back (or digested it on the device),
/// that buffer's last command is the shim's, so a kernel with two buffers leaves two live
/// events in the queue instead of one. With digests off this shows only after the two-buffer
/// kernel (`add ...: queue references`); with digests on the shim's own buffers (the digest
/// slots, the snapshots) keep theirs too, so no queue line is compared there.
#[test]
fn what_the_application_reads_of_its_own_objects_is_what_it_reads_natively() {
    let exe = fixture("observed");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let text = native.stdout_text();
    assert!(
        text.contains("its build options = [-DAPP_OPTION=1]"),
        "{text}"
    );
    assert!(text.contains("add objects retained: context"), "{text}");
    let compared = |out: &str, digest: &str| -> Vec<String> {
        out.lines()
            .filter(|l| {
                let queue = l.contains("queue references");
                !(queue && (digest == "on" || l.starts_with("add ")))
            })
            .map(str::to_string)
            .collect()
    };
    for digest in ["off", "on"] {
        let expected = compared(&text, digest);
        let dd = std::ffi::OsStr::new(digest);
        let hand = std::ffi::OsStr::new("hand");
        let dir = fresh_capture_dir(&format!("observed-{digest}"));
        let captured = run_captured(
            &dir,
            &["--device-digest", digest, "--at-finish", "hand"],
            &exe,
            &[] as &[&str],
        );
        let env = [("CLTRAP_DEVICE_DIGEST", dd), ("CLTRAP_AT_FINISH", hand)];
        let pre = run_preloaded(&dir, &env, &exe, &[] as &[&str]);
        let layer = run_with_env(
            &exe,
            &[] as &[&str],
            &[
                ("OPENCL_LAYERS", tools().shim.as_os_str()),
                ("CLTRAP_DIR", dir.as_os_str()),
                env[0],
                env[1],
            ],
            None,
        );
        for (door, out) in [
            ("launcher", &captured),
            ("preload", &pre),
            ("layer", &layer),
        ] {
            out.assert_no_panic();
            assert_eq!(native.ending(), out.ending(), "{door}\n{}", out.describe());
            assert_eq!(
                compared(&out.stdout_text(), digest),
                expected,
                "digests {digest}, {door} door: the application read other values\n\
                 === native ===\n{}\n=== under the shim ===\n{}",
                native.describe(),
                out.describe()
            );
        }
        assert_eq!(
            open_capture(&dir).launches.len(),
            27,
            "three runs of nine launches were captured"
        );
    }
}

/// An enqueue whose buffer argument the application already released: the shim must not
/// ask the driver about the released object (PoCL crashed inside `clGetMemObjectInfo`); the
/// enqueue is forwarded and the run ends as it ends natively (on PoCL: the driver aborts).
#[test]
fn a_released_buffer_argument_meets_the_driver_not_a_crash_of_ours() {
    let exe = fixture("observed");
    let native = run_native(&exe, &["released"]);
    let dir = fresh_capture_dir("released");
    let pre = run_preloaded(&dir, &[], &exe, &["released"]);
    pre.assert_no_panic();
    assert_ne!(pre.signal, Some(11), "{}", pre.describe());
    assert_eq!(
        native.ending(),
        pre.ending(),
        "\n=== native ===\n{}\n=== preloaded ===\n{}",
        native.describe(),
        pre.describe()
    );
}

/// A preloaded process that never calls OpenCL leaves its children the environment they
/// would have without the shim: no `OPENCL_LAYERS` appears (the loader is told of the layer
/// through `getenv`, never through the environment).
#[test]
fn children_of_a_preloaded_process_inherit_the_environment_unchanged() {
    let dir = fresh_capture_dir("child-env");
    let script = "env; echo \"layers=[$OPENCL_LAYERS]\"";
    let env = |o: &Outcome| -> Vec<String> {
        let mut lines: Vec<String> = o
            .stdout_text()
            .lines()
            .filter(|l| !l.starts_with("LD_PRELOAD="))
            .map(str::to_string)
            .collect();
        lines.sort();
        lines
    };
    let native = run_with_env(
        "sh",
        &["-c", script],
        &[("CLTRAP_DIR", dir.as_os_str())],
        None,
    );
    let pre = run_preloaded(&dir, &[], "sh", &["-c", script]);
    // (No panic check on stdout here: it lists RUST_BACKTRACE from the test's environment.)
    assert!(native.success() && pre.success(), "{}", pre.describe());
    assert!(pre.stderr.is_empty(), "{}", pre.describe());
    assert_eq!(env(&native), env(&pre), "{}", pre.describe());
    assert!(
        pre.stdout_text().contains("layers=[]"),
        "{}",
        pre.describe()
    );
    // A layer the user named stays exactly as named.
    let named = std::ffi::OsStr::new("/nonexistent/layer.so");
    let mine = run_preloaded(&dir, &[("OPENCL_LAYERS", named)], "sh", &["-c", script]);
    assert!(
        mine.stdout_text()
            .contains("layers=[/nonexistent/layer.so]"),
        "{}",
        mine.describe()
    );
}
