//! A pyopencl application (which dlopens the ICD loader bundled in its wheel) runs unchanged
//! under the shim, and its launches are captured and replay ok.

use cltrap_e2e::*;
use std::path::PathBuf;

/// The test venv's Python and the script `name` of `tests/py/`, or None when the venv cannot
/// be made (`test` is skipped, and says why).
fn python_script(test: &str, name: &str) -> Option<(PathBuf, PathBuf)> {
    match venv_python() {
        Ok(python) => Some((python, fixture_source_dir("py").join(name))),
        Err(why) => {
            skip(test, &why);
            None
        }
    }
}

#[test]
fn a_pyopencl_script_runs_unchanged_and_its_launches_replay_ok() {
    let Some((python, script)) = python_script(
        "a_pyopencl_script_runs_unchanged_and_its_launches_replay_ok",
        "pyopencl_app.py",
    ) else {
        return;
    };
    let args = [script.as_os_str()];
    let native = run_native(&python, &args).expect_success();
    assert!(
        native.stdout_text().contains("saxpy: ok"),
        "{}",
        native.describe()
    );
    let dir = fresh_capture_dir("pyopencl");
    let captured = run_captured(&dir, &[], &python, &args);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    assert_quiet_capture(&native, &captured);
    let cap = open_capture(&dir);
    assert_eq!(kernel_sequence(&cap), ["saxpy", "block_sum"]);
    let sum = &cap.launches[1];
    assert_eq!(sum.local_size.as_deref(), Some(&[64u64][..]));
    assert!(
        matches!(
            sum.args[2],
            cltrap_capture::ArgRecord::Local { size: 256, .. }
        ),
        "{:?}",
        sum.args[2]
    );
    let list = assert_list_shows(&dir, &cap);
    // `a` is a `real` (`typedef float real`): shown by value, as clang resolves the type,
    // not as the bytes the driver was given.
    assert!(
        list.stdout_text().contains(" a=3.0 "),
        "{}",
        list.describe()
    );
    assert_replays_ok(&dir, 2);
}

/// Scalars whose type is a macro or a typedef (pyopencl's `index_type`, a `scale_t` behind a
/// macro) in a program cltrap's libclang model refuses (a GNU case range the driver builds):
/// `list` resolves the type through the program's own macros and typedefs and shows numbers,
/// not the bytes in memory order (`scale=0x00002040` for 2.5).
#[test]
fn list_shows_scalars_of_macro_and_typedef_types_by_value_when_clang_cannot_tell() {
    let Some((python, script)) = python_script(
        "list_shows_scalars_of_macro_and_typedef_types_by_value_when_clang_cannot_tell",
        "macro_types.py",
    ) else {
        return;
    };
    let args = [script.as_os_str()];
    let dir = fresh_capture_dir("pyopencl-macro-types");
    let captured = run_captured(&dir, &[], &python, &args);
    captured.assert_no_panic();
    assert!(
        captured.stdout_text().contains("scale: ok"),
        "{}",
        captured.describe()
    );
    let cap = open_capture(&dir);
    let list = assert_list_shows(&dir, &cap);
    assert!(
        list.stdout_text().contains(" N=4096 scale=2.5 "),
        "{}",
        list.describe()
    );
}

/// pyopencl with Python's `multiprocessing` (start method `fork`): worker processes forked
/// after the first kernel live, calling no OpenCL, while the parent rewrites a 4 MB buffer
/// under a 1 MB spool bound. The children let go of the spool segments they inherited, so
/// the compactor takes them and the parent waits only for it (not rescued by the writer's
/// stall check, not hung until the harness's timeout), and every launch replays.
#[test]
fn a_pyopencl_script_that_forks_workers_is_not_kept_waiting_by_them() {
    let Some((python, script)) = python_script(
        "a_pyopencl_script_that_forks_workers_is_not_kept_waiting_by_them",
        "pyopencl_fork.py",
    ) else {
        return;
    };
    let args = [script.as_os_str()];
    let native = run_native(&python, &args).expect_success();
    assert!(
        native.stdout_text().contains("checksum"),
        "{}",
        native.describe()
    );
    let dir = fresh_capture_dir("pyopencl-fork");
    let (captured, stats) = run_captured_with_stats(&dir, &["--spool-max-mb", "1"], &python, &args);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    assert_waited_for_compaction(&captured, Some(&stats));
    assert_eq!(open_capture(&dir).launches.len(), 12);
    assert_replays_ok(&dir, 12);
}
