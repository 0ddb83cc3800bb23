//! `cltrap replay --schedules` on the real PoCL runtime with its default worker threads:
//! race-free kernels are never flagged; tickets handed out by a global atomic in group order
//! are flagged; the the lock-step local reduction (an
//! intra-group race): PoCL runs a group's work-items one by one, so work-item 0 reads local
//! memory the others have not written yet — stale contents that differ from run to run.
//! (Inter-group races are in `schedules_races_pocl.rs`, which runs PoCL on one thread.)

mod common;
use common::*;

use cltrap_analyzer::executor::DeviceSelector;
use cltrap_analyzer::schedules::{self, ScheduleOptions, Verdict};
use cltrap_capture::Capture;

fn opts(schedules: u32, repeats: u32) -> ScheduleOptions {
    ScheduleOptions {
        ids: None,
        device: DeviceSelector::default(),
        schedules,
        repeats,
        seed: 1,
        closeness: cltrap_analyzer::compare::Closeness::EXACT,
        instrument_cache: None,
        race_check: None,
        ..ScheduleOptions::default()
    }
}

fn race_free_capture(name: &str) -> Fixture {
    let mut f = Fixture::new(name);
    let n = 1000u32;
    let a: Vec<f32> = (0..1024).map(|i| i as f32 * 0.25).collect();
    let b: Vec<f32> = (0..1024).map(|i| 1.0 / (i as f32 + 1.0)).collect();
    f.launch(
        "race_free.cl",
        "vadd",
        &[1024],
        Some(&[64]),
        None,
        vec![
            A::Buf("a", "float*", f32s(&a)),
            A::Buf("b", "float*", f32s(&b)),
            A::Buf("c", "float*", f32s(&vec![0.0; 1024])),
            uint("n", n),
        ],
    );
    // NULL local size and a global offset: cltrap chooses the local size for the table.
    f.launch(
        "race_free.cl",
        "vadd",
        &[512],
        None,
        Some(&[256]),
        vec![
            A::Buf("a", "float*", f32s(&a)),
            A::Buf("b", "float*", f32s(&b)),
            A::Buf("c", "float*", f32s(&vec![0.0; 1024])),
            uint("n", n),
        ],
    );
    f.launch_matmul_tiled(16);
    f.launch_reduce_local(4096, 64);
    f
}

#[test]
fn race_free_kernels_are_deterministic_under_every_schedule() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let f = race_free_capture("racefree");
    let capture = Capture::open(&f.dir).unwrap();
    let mut lines = Vec::new();
    let (_, summary) = schedules::run(&capture, &opts(12, 3), |r| {
        assert!(
            matches!(r.verdict, Verdict::Deterministic),
            "race-free kernel flagged: {r}"
        );
        // The identity schedule reproduces the recording bit-exactly (where the application's
        // local size is known; with NULL cltrap chose one, and vadd does not care either way).
        assert!(r.identity_vs_recorded.is_none(), "{r}");
        assert!(r.groups > 1, "{r}");
        lines.push(r.to_string());
    })
    .unwrap();
    assert_eq!(summary.deterministic, 4, "{lines:?}");
    assert_eq!(summary.exit_code(), 0);
    assert_eq!(
        summary.programs_built, 1,
        "one permuted build for all launches"
    );
    assert_eq!(
        lines[0],
        "launch 0 vadd: deterministic (12 schedules, 3 repeats)"
    );
    assert!(
        lines[1].starts_with("launch 1 vadd: deterministic (12 schedules, 3 repeats) [local size NULL in the capture; ran with 64]"),
        "{}",
        lines[1]
    );
    assert_eq!(
        lines[2],
        "launch 2 matmul_tiled: deterministic (12 schedules, 3 repeats)"
    );
}

#[test]
fn race_free_kernels_pass_through_the_cli_with_exit_0() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let f = race_free_capture("racefree-cli");
    let dir = f.dir.to_str().unwrap();
    let (code, out, err) = cltrap(&["replay", dir, "--schedules", "5", "--repeats", "2"], &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(
        out.matches(": deterministic (5 schedules, 2 repeats)")
            .count(),
        4,
        "{out}"
    );
    assert!(out.contains("schedules: 4 launch(es): 4 deterministic, 0 schedule-dependent, 0 nondeterministic, 0 skipped, 0 failed; 0 identity run(s) differ from the recording; 1 program(s) built; device "), "{out}");
    // --timing: one compile, N + M runs.
    let (code, out, _) = cltrap(
        &[
            "replay",
            dir,
            "2",
            "--schedules",
            "4",
            "--repeats",
            "2",
            "--timing",
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}");
    let timing = out
        .lines()
        .find(|l| l.starts_with("timing launch 2 matmul_tiled: instrument "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(timing.contains(", 6 runs: mean "), "{timing}");
}

#[test]
fn atomic_tickets_depend_on_group_order_and_are_flagged() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let mut f = Fixture::new("tickets");
    let n = 1 << 16;
    f.launch(
        "nondeterministic.cl",
        "tickets",
        &[n],
        Some(&[64]),
        None,
        vec![
            A::Buf("counter", "uint*", u32s(&[0])),
            A::Buf("order", "uint*", u32s(&vec![0; n as usize])),
            uint("spin", 200),
        ],
    );
    let dir = f.dir.to_str().unwrap();
    let (code, out, err) = cltrap(&["replay", dir, "--schedules", "3", "--repeats", "8"], &[]);
    assert_eq!(code, 1, "{out}\n{err}");
    // Which verdict depends on the machine: when PoCL's worker threads really run groups at
    // the same time, repeats differ (nondeterministic); when one thread gets all the groups
    // (a loaded two-core machine), they run in order and only schedules differ.
    let line = out.lines().next().unwrap_or_default();
    let nondet = "launch 0 tickets: nondeterministic: argument 1 (order) element ";
    let sched = "launch 0 tickets: schedule-dependent: argument 1 (order) element ";
    assert!(line.starts_with(nondet) || line.starts_with(sched), "{out}");
}

#[test]
fn a_lock_step_local_reduction_without_barriers_is_a_race_on_pocl() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let mut f = Fixture::new("lockstep");
    let (input, outs) = f.launch_reduce_lockstep(1024, 64);
    let got = from_u32s(outs[1].as_deref().unwrap());
    let want: Vec<u32> = input.chunks(64).map(|c| c.iter().sum()).collect();
    assert_ne!(
        got, want,
        "PoCL ran the lock-step reduction as if it had barriers"
    );
    let capture = Capture::open(&f.dir).unwrap();
    // Usually two repeats of the identity differ; sometimes only two runs of one schedule do.
    // Which verdict depends on the machine, as for the tickets: when the CPU device's
    // threads interleave so that repeats agree (a loaded machine), only a schedule differs.
    // Either way the race shows, on `partial`.
    let (_, summary) = schedules::run(&capture, &opts(2, 6), |r| match &r.verdict {
        Verdict::Nondeterministic { diff, .. } => {
            assert_eq!(
                (diff.arg_index, diff.arg_name.as_str()),
                (1, "partial"),
                "{r}"
            );
            assert!(r.to_string().contains(" differs between "), "{r}");
        }
        Verdict::ScheduleDependent { diff, .. } => {
            assert_eq!(
                (diff.arg_index, diff.arg_name.as_str()),
                (1, "partial"),
                "{r}"
            );
        }
        _ => panic!("the lock-step race was not seen: {r}"),
    })
    .unwrap();
    assert_eq!(summary.nondeterministic + summary.schedule_dependent, 1);
    assert_eq!(summary.exit_code(), 1);
}
