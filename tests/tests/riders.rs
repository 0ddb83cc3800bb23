//! Launches without an event of their own ("riders", `shim/src/core/flight/`): on an
//! in-order queue most recorded launches get no event (each one the capture creates, asks
//! about and releases cost the launching thread microseconds on NVIDIA). Their completion
//! is learned from a later event of the same thread, a `clFinish` or blocking read, or a
//! marker the capture puts into the queue itself. Whatever the application does next, every
//! launch must be recorded, in time, with the contents it saw.

use cltrap_e2e::*;

/// Launches of the fixture: a tail of 100, two threads of 150 on one queue, 40 before exit.
const TAIL: usize = 100;
const SHARED: usize = 150;
const EXIT_N: usize = 40;
const LAUNCHES: usize = TAIL + 2 * SHARED + EXIT_N;

#[test]
fn riders_are_recorded_whatever_the_application_waits_for() {
    let exe = fixture("riders");
    let native = run_native(&exe, &[] as &[&str]).expect_success();
    let dir = fresh_capture_dir("riders");
    let (captured, counters) = run_captured_with_stats(&dir, &[], &exe, &[] as &[&str]);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);

    // The tail was waited for only through the application's own event of its last launch:
    // the capture's marker answered for the riders before it while the application ran.
    let held = captured
        .stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("riders: the launch log held ")?
                .split(' ')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .unwrap_or_else(|| panic!("the fixture said nothing\n{}", captured.describe()));
    assert!(
        held >= TAIL,
        "only {held} of the first {TAIL} launches were recorded 10 s after the application \
         waited for the last one\n{}",
        captured.describe()
    );

    let cap = open_capture(&dir);
    assert_eq!(cap.launches.len(), LAUNCHES, "{}", captured.describe());
    // Both threads' launches into the one queue, each exactly once.
    let mut tags: Vec<(i32, i32)> = cap
        .launches
        .iter()
        .filter(|l| l.kernel == "tag")
        .map(|l| {
            let t = l.args.get(1).and_then(scalar_i32).expect("thread tag");
            let it = l.args.get(2).and_then(scalar_i32).expect("iteration");
            (t, it)
        })
        .collect();
    tags.sort_unstable();
    let want: Vec<(i32, i32)> = (1..=2)
        .flat_map(|t| (0..SHARED as i32).map(move |it| (t, it)))
        .collect();
    assert_eq!(tags, want, "each tagged launch recorded exactly once");

    // Most launches had no event of their own; the capture's markers answered for tails.
    let events = counters["events"].as_u64().expect("events counter");
    let markers = counters["markers"].as_u64().expect("markers counter");
    assert!(
        (events as usize) < LAUNCHES / 4,
        "{events} events of the capture's own for {LAUNCHES} launches: launches do not ride"
    );
    assert!(markers >= 1, "no marker answered for the tail: {counters}");

    // And every launch replays bit for bit: what was recorded is what the kernel saw.
    assert_replays_ok(&dir, LAUNCHES);
}
