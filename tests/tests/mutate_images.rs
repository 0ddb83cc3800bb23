//! Mutation testing of image kernels: the mutants of a kernel that reads and writes images
//! are killed or survive on their merits. The first run of a mutant schema for new sizes
//! includes the driver's compile for those sizes (seconds for a large image kernel); that
//! compile must never be judged the mutants' TIMEOUT.

use cltrap_e2e::*;
use std::ffi::OsStr;

#[test]
fn image_kernel_mutants_are_killed_not_timed_out() {
    let exe = fixture("images");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    if native.stdout_text().contains("not supported") {
        return;
    }
    let dir = fresh_capture_dir("mutate-images");
    let captured = run_captured(&dir, &[], &exe, &[] as &[&str]);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    let out = dir.join("mutants");
    let campaign = dir.join("campaign");
    let mutate = cltrap(&[
        OsStr::new("mutate"),
        dir.as_os_str(),
        OsStr::new("--kernel"),
        OsStr::new("brighten"),
        OsStr::new("--jobs"),
        OsStr::new("1"),
        OsStr::new("--no-tce"),
        OsStr::new("--no-locate"),
        OsStr::new("--out"),
        out.as_os_str(),
        OsStr::new("--campaign-dir"),
        campaign.as_os_str(),
    ]);
    mutate.assert_no_panic();
    assert!(mutate.success(), "{}", mutate.describe());
    // The campaign's journal: one line per mutant run, with its verdict.
    let state = std::fs::read_to_string(campaign.join("units.jsonl")).expect("mutate's journal");
    let killed = state.matches("\"status\":\"KILLED\"").count();
    let timeout = state.matches("\"status\":\"TIMEOUT\"").count();
    assert!(
        killed >= 1 && timeout < killed,
        "image kernel mutants: {killed} KILLED, {timeout} TIMEOUT\n{state}\n{}",
        mutate.describe()
    );
    assert!(
        !mutate.stdout_text().contains("suspicious"),
        "{}",
        mutate.describe()
    );
}
