//! Inter-work-group races under `cltrap replay --schedules`, with PoCL on one worker thread
//! (`POCL_MAX_PTHREAD_COUNT=1`, set before PoCL starts): work-groups then run one after the
//! other in the order of their physical ids, so repeats of the identity agree and only the
//! permuted schedules change which groups ran first. (With several PoCL threads the same
//! kernels race for real between concurrently running groups, and may be reported as
//! `nondeterministic` instead: both verdicts flag the race.)

mod common;
use common::*;

use cltrap_analyzer::executor::DeviceSelector;
use cltrap_analyzer::schedules::{self, ScheduleOptions, Verdict};
use cltrap_capture::Capture;

fn one_thread() -> std::sync::MutexGuard<'static, ()> {
    let g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    std::env::set_var("POCL_MAX_PTHREAD_COUNT", "1");
    g
}

const ENV: &[(&str, &str)] = &[("POCL_MAX_PTHREAD_COUNT", "1")];

fn stencil_capture(name: &str) -> Fixture {
    let mut f = Fixture::new(name);
    f.launch_stencil_inplace(256, 16);
    f
}

#[test]
fn an_in_place_stencil_is_schedule_dependent_and_the_seed_reproduces_it() {
    let _g = one_thread();
    let f = stencil_capture("stencil");
    let dir = f.dir.to_str().unwrap();
    let (code, out, err) = cltrap(
        &[
            "replay",
            dir,
            "--schedules",
            "8",
            "--repeats",
            "3",
            "--seed",
            "40",
        ],
        ENV,
    );
    assert_eq!(code, 1, "{out}\n{err}");
    let line = out.lines().next().unwrap_or_default();
    let prefix = "launch 0 stencil_inplace: schedule-dependent: argument 0 (a) element ";
    assert!(line.starts_with(prefix), "{out}");
    // The identity reproduces the recording made with the same (one-thread) device.
    assert!(
        !out.contains("note: the identity schedule does not reproduce"),
        "{out}"
    );
    // The reported seed alone reproduces the same difference.
    let seed = line
        .split("under schedule seed ")
        .nth(1)
        .and_then(|s| s.split(':').next())
        .unwrap_or_else(|| panic!("{line}"));
    let (code, again, _) = cltrap(&["replay", dir, "--schedules", "1", "--seed", seed], ENV);
    assert_eq!(code, 1, "{again}");
    assert_eq!(again.lines().next(), Some(line), "{again}");
    // The element named really differs between the identity and that schedule: check the
    // values from the line against the stencil run by hand.
    let element: usize = line[prefix.len()..]
        .split(' ')
        .next()
        .and_then(|e| e.parse().ok())
        .unwrap();
    assert!(element < 256);
    assert!(
        line.contains(&format!("differs under schedule seed {seed}: identity ")),
        "{line}"
    );
}

#[test]
fn a_reduction_reading_other_groups_partial_results_is_schedule_dependent() {
    let _g = one_thread();
    let mut f = Fixture::new("lastgroup");
    let (input, outs) = f.launch_reduce_last_group(2048, 64);
    // Run in order on one thread, the last group sees every partial sum.
    let total = from_u32s(outs[2].as_deref().unwrap())[0];
    assert_eq!(total, input.iter().sum::<u32>());
    let capture = Capture::open(&f.dir).unwrap();
    let opts = ScheduleOptions {
        ids: None,
        device: DeviceSelector::default(),
        schedules: 6,
        repeats: 3,
        seed: 1,
        closeness: cltrap_analyzer::compare::Closeness::EXACT,
        instrument_cache: None,
        race_check: None,
        ..ScheduleOptions::default()
    };
    let mut seen = None;
    let (_, summary) = schedules::run(&capture, &opts, |r| seen = Some(r.clone())).unwrap();
    let r = seen.unwrap();
    match &r.verdict {
        Verdict::ScheduleDependent { seed, diff } => {
            assert_eq!(
                (diff.arg_index, diff.arg_name.as_str()),
                (2, "total"),
                "{r}"
            );
            assert!(*seed >= 1 && *seed < 7, "{r}");
            // Under the schedule the last logical group ran early and missed partial sums.
            let text = r.to_string();
            assert!(
                text.contains(&format!(
                    "element 0 differs under schedule seed {seed}: identity {total}, schedule "
                )),
                "{text}"
            );
        }
        _ => panic!("not flagged as schedule-dependent: {r}"),
    }
    assert!(r.identity_vs_recorded.is_none(), "{r}");
    assert_eq!(summary.exit_code(), 1);
}

#[test]
fn race_free_kernels_stay_deterministic_on_one_thread_too() {
    let _g = one_thread();
    let mut f = Fixture::new("onethread-free");
    let input: Vec<u32> = (0..2048).map(|i| i % 17 + 1).collect();
    f.launch(
        "race_free.cl",
        "reduce_local",
        &[2048],
        Some(&[64]),
        None,
        vec![
            A::Buf("in", "uint*", u32s(&input)),
            A::Buf("partial", "uint*", u32s(&[0; 32])),
            A::Loc("tmp", "uint*", 64 * 4),
        ],
    );
    let dir = f.dir.to_str().unwrap();
    let (code, out, err) = cltrap(&["replay", dir, "--schedules", "10"], ENV);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.starts_with("launch 0 reduce_local: deterministic (10 schedules, 3 repeats)\n"),
        "{out}"
    );
}
