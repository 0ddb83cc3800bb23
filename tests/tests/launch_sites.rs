//! Launch sites in a program without debug information: `cltrap list` names the module and
//! offset, and never a function that does not hold the call. (`addr2line` without line
//! information answers the nearest preceding symbol: CLBlast's stripped tuners would be listed
//! as launching from `clblast::BLASError::~BLASError()`.)

use cltrap_e2e::*;
use std::ffi::OsStr;
use std::process::Command;

#[test]
fn a_stripped_program_gets_no_guessed_function_name_for_its_launch_sites() {
    let dir = fresh_dir("sites", "stripped");
    let exe = dir.join("sites");
    let src = workspace_root().join("shim/tests/fixtures/sites.c");
    // Stripped (-s), the functions in source order, and an exported function right before
    // the static launchers: the nearest symbol before every call site is that neighbour.
    let status = Command::new("cc")
        .args([
            "-O1",
            "-w",
            "-s",
            "-rdynamic",
            "-fno-toplevel-reorder",
            "-DEXPORTED_NEIGHBOUR",
        ])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .args(["-lOpenCL", "-lpthread", "-ldl"])
        .status()
        .expect("cc runs");
    assert!(status.success(), "compiling sites.c failed");
    let cap = fresh_capture_dir("sites-stripped");
    let run = run_captured(&cap, &[], &exe, &["1"]);
    assert!(run.success(), "{}", run.describe());
    let list = cltrap(&[OsStr::new("list"), cap.as_os_str()]);
    assert!(list.success(), "{}", list.describe());
    let text = list.stdout_text();
    let sites: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(sites.len(), 3, "{text}");
    for line in sites {
        assert!(line.contains("sites+0x"), "{line}");
        assert!(
            !line.contains("an_exported_neighbour"),
            "a guessed function name: {line}"
        );
    }
}
