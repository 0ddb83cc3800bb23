//! Replay really compares: a capture whose recorded result is altered is reported as a
//! mismatch naming the argument and the byte, and `--ulp` tolerates exactly what it says.

use cltrap_e2e::*;
use std::ffi::OsStr;
use std::path::Path;

fn replay(dir: &Path, extra: &[&str]) -> Outcome {
    let mut args: Vec<&OsStr> = vec![OsStr::new("replay"), dir.as_os_str()];
    args.extend(extra.iter().map(OsStr::new));
    let out = cltrap(&args);
    out.assert_no_panic();
    out
}

#[test]
fn an_altered_recorded_result_is_a_mismatch_naming_argument_and_byte() {
    let (dir, cap) = round_trip("sequence", &[], &[]);
    assert_eq!(cap.launches[0].kernel, "fill");
    alter_after(&dir, 0, 0, |b| b[4 * 37 + 2] ^= 0x10);
    let out = replay(&dir, &["0", "1"]);
    assert_eq!(out.code, Some(1), "a mismatch exits 1\n{}", out.describe());
    let text = out.stdout_text();
    let line = text
        .lines()
        .find(|l| l.starts_with("launch 0 "))
        .unwrap_or_else(|| panic!("no verdict for launch 0\n{}", out.describe()));
    assert!(line.contains("MISMATCH"), "{line}");
    assert!(line.contains("out"), "the argument is named: {line}");
    // The differing byte is 150, inside the int element 37 that starts at byte 148.
    let nums: Vec<&str> = line.split(|c: char| !c.is_ascii_digit()).collect();
    assert!(
        nums.contains(&"150") || nums.contains(&"148"),
        "the byte offset is given: {line}"
    );
    // The untouched launch next to it still replays ok.
    assert!(
        text.lines()
            .any(|l| l.starts_with("launch 1 ") && l.ends_with(": ok")),
        "{text}"
    );
}

#[test]
fn ulp_tolerance_accepts_exactly_the_allowed_float_distance() {
    let (dir, cap) = round_trip("dlopen_app", &[], &[]);
    assert_eq!(cap.launches[0].kernel, "vadd");
    // Output c[5] of the first launch, one ulp away from what the application saw.
    alter_after(&dir, 0, 2, |b| {
        let at = 5 * 4;
        let v = f32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        assert!(v > 0.0);
        b[at..at + 4].copy_from_slice(&f32::from_bits(v.to_bits() + 1).to_le_bytes());
    });
    let exact = replay(&dir, &["0"]);
    assert_eq!(
        exact.code,
        Some(1),
        "bit-exact by default\n{}",
        exact.describe()
    );
    assert!(
        exact.stdout_text().contains("MISMATCH"),
        "{}",
        exact.describe()
    );
    let tolerant = replay(&dir, &["0", "--ulp", "1"]);
    assert!(
        tolerant.success(),
        "--ulp 1 accepts one ulp\n{}",
        tolerant.describe()
    );
    assert_eq!(
        ok_lines(&tolerant.stdout_text()),
        1,
        "{}",
        tolerant.describe()
    );
}
