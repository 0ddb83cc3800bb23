//! `cltrap run --permute SEED` on the real PoCL runtime: a race-free kernel gives identical
//! results under permuted work-group schedules; a kernel reading another group's result of the
//! same launch (an inter-group race) gives different results for some seed.
//!
//! PoCL runs work-groups on a pool of threads; with one thread (`POCL_MAX_PTHREAD_COUNT=1`)
//! physical groups run in order, so the native output of the racy kernel is deterministic and
//! any difference is the schedule's doing, not the thread pool's.

mod swap_support;

use swap_support::*;

const ONE_THREAD: &[(&str, &str)] = &[("POCL_MAX_PTHREAD_COUNT", "1")];

fn line<'a>(out: &'a str, kernel: &str) -> &'a str {
    out.lines()
        .find(|l| l.split_whitespace().next() == Some(kernel))
        .unwrap_or_else(|| panic!("no line for {kernel} in {out}"))
}

#[test]
fn permuted_schedules_keep_race_free_results_and_expose_an_inter_group_race() {
    let app = build("swap_perm", &[]);
    let first = native(&app, &[], ONE_THREAD);
    assert_ok(&first, "native run");
    let again = native(&app, &[], ONE_THREAD);
    assert_eq!(stdout(&first), stdout(&again), "native runs must agree");
    let native_out = stdout(&first);
    // In order, each group reads the result its predecessor already wrote.
    assert_eq!(
        line(&native_out, "neighbour"),
        "neighbour -1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15"
    );

    let mut differing = Vec::new();
    for seed in 1..=4u32 {
        let dir = tmp(&format!("perm{seed}"));
        let out = under_cltrap(
            &dir,
            &["--permute", &seed.to_string()],
            &app,
            &[],
            ONE_THREAD,
        );
        assert_ok(&out, "cltrap run --permute");
        let text = stdout(&out);
        assert_eq!(
            line(&text, "scale"),
            line(&native_out, "scale"),
            "the race-free kernel changed under seed {seed}"
        );
        if line(&text, "neighbour") != line(&native_out, "neighbour") {
            differing.push(seed);
        }
        assert!(
            !stderr(&out).contains("run unchanged") && !stderr(&out).contains("uninstrumented"),
            "{}",
            stderr(&out)
        );
    }
    assert!(
        !differing.is_empty(),
        "the racy kernel gave the native result under every seed"
    );
}

#[test]
fn the_same_seed_gives_the_same_schedule() {
    let app = build("swap_perm", &[]);
    let runs: Vec<String> = (0..2)
        .map(|i| {
            let dir = tmp(&format!("perm-repeat{i}"));
            let out = under_cltrap(&dir, &["--permute", "3"], &app, &[], ONE_THREAD);
            assert_ok(&out, "cltrap run --permute 3");
            stdout(&out)
        })
        .collect();
    assert_eq!(runs[0], runs[1]);
}

#[test]
fn bad_or_conflicting_instrumentation_flags_are_refused_before_the_app_starts() {
    let marker = tmp("flags").join("started");
    let script = format!("touch '{}'", marker.display());
    for (flags, says) in [
        (&["--coverage", "--permute", "3"][..], "cannot be combined"),
        (&["--permute", "x"][..], "CLTRAP_PERMUTE=\"x\""),
        (&["--coverage=maybe"][..], "CLTRAP_COVERAGE=\"maybe\""),
    ] {
        let dir = tmp("flags-cap");
        let out = under_cltrap(
            &dir,
            flags,
            std::path::Path::new("sh"),
            &["-c", &script],
            &[],
        );
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        assert!(stderr(&out).contains(says), "{flags:?}: {}", stderr(&out));
        assert!(
            !marker.exists(),
            "the application was started with {flags:?}"
        );
    }
}

#[test]
fn null_local_launches_get_a_chosen_local_size_and_seed_zero_is_their_baseline() {
    let app = build("swap_perm", &["-DNULL_LOCAL"]);
    let native = native(&app, &[], ONE_THREAD);
    assert_ok(&native, "native run");
    let native_out = stdout(&native);
    let run = |seed: u32| {
        let dir = tmp(&format!("perm-null{seed}"));
        let out = under_cltrap(
            &dir,
            &["--permute", &seed.to_string()],
            &app,
            &[],
            ONE_THREAD,
        );
        assert_ok(&out, "cltrap run --permute");
        stdout(&out)
    };
    // Seed 0: the identity schedule over the local size cltrap chose (64 work-items: groups of
    // 16, so 4 groups, each reading its predecessor's result, in order).
    let baseline = run(0);
    assert_eq!(line(&baseline, "scale"), line(&native_out, "scale"));
    assert_eq!(
        line(&baseline, "neighbour"),
        "neighbour -1 1 2 3 0 0 0 0 0 0 0 0 0 0 0 0"
    );
    let mut differing = Vec::new();
    for seed in 1..=4u32 {
        let out = run(seed);
        assert_eq!(
            line(&out, "scale"),
            line(&native_out, "scale"),
            "seed {seed}"
        );
        if line(&out, "neighbour") != line(&baseline, "neighbour") {
            differing.push(seed);
        }
    }
    assert!(
        !differing.is_empty(),
        "no seed changed the racy kernel's result"
    );
}

#[test]
fn a_program_made_by_compile_and_link_runs_permuted_with_unchanged_results() {
    let app = build("swap_link", &[]);
    let native = native(&app, &[], &[]);
    assert_ok(&native, "native run");
    for seed in ["0", "5"] {
        let dir = tmp("perm-link");
        let out = under_cltrap(&dir, &["--permute", seed], &app, &[], &[]);
        assert_ok(&out, "cltrap run --permute");
        assert_eq!(
            stdout(&out),
            stdout(&native),
            "seed {seed}: {}",
            stderr(&out)
        );
        // Swapped: one instrumented answer per compiled source, no note of a fallback.
        let answers = std::fs::read_dir(dir.join("instrument"))
            .expect("instrument cache")
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json"))
            })
            .count();
        assert_eq!(answers, 2, "seed {seed}");
        assert!(!stderr(&out).contains("unchanged"), "{}", stderr(&out));
    }
}
