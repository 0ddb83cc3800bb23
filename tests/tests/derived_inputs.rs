//! Past `--derive-after-mb` (or half its disk budget) a capture stores only the inputs that no earlier launch
//! re-creates; the others are *derived*: a replay re-executes the launch that left them
//! (checked against the recorded digest). A Gaussian elimination like Rodinia's, whose every
//! launch changes its matrix, must keep every launch replayable under a tiny budget.

use cltrap_capture::replayable::{ReplayIndex, Replayability};
use cltrap_capture::{ArgRecord, Capture, Content};
use cltrap_e2e::*;
use std::ffi::OsStr;

/// Matrix order of the fixture: 2 * 95 = 190 launches over a 36 KiB matrix.
const N: &str = "96";
const LAUNCHES: usize = 190;

/// Captures `gauss N [extra]` under a 1 MB budget (stored in full, it takes 4.7 MB).
fn capture_gauss(label: &str, extra: &[&str]) -> (TestDir, Capture) {
    capture_gauss_with(label, &["--max-mb", "1"], extra)
}

/// Captures `gauss N [extra]` with the capture flags `flags`; the shim says once that it
/// derives past its threshold.
fn capture_gauss_with(label: &str, flags: &[&str], extra: &[&str]) -> (TestDir, Capture) {
    let exe = fixture("gauss");
    let args: Vec<&str> = std::iter::once(N).chain(extra.iter().copied()).collect();
    let native = run_native(&exe, &args).expect_success();
    let dir = fresh_capture_dir(label);
    let captured = run_captured(&dir, flags, &exe, &args);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    let said = cltrap_lines(&captured.stderr)
        .into_iter()
        .filter(|l| l.contains("CLTRAP_MAX_MB"))
        .count();
    assert_eq!(said, 1, "the budget is said once\n{}", captured.describe());
    let cap = open_capture(&dir);
    assert_eq!(cap.launches.len(), LAUNCHES);
    (dir, cap)
}

/// `cltrap list` shows the capture and says all its launches can be replayed; its text.
fn list_says_all_replayable(dir: &std::path::Path, cap: &Capture) -> String {
    let list = assert_list_shows(dir, cap).stdout_text();
    assert!(
        list.contains(&format!(
            "{LAUNCHES} of {LAUNCHES} launch(es) can be replayed"
        )),
        "{list}"
    );
    list
}

fn before(arg: &ArgRecord) -> &Content {
    contents(arg).expect("a buffer argument").0
}

fn after(arg: &ArgRecord) -> &Content {
    contents(arg).expect("a buffer argument").1
}

#[test]
fn gaussian_elimination_under_a_tiny_budget_keeps_every_launch_replayable() {
    let (dir, cap) = capture_gauss("derived-gauss", &[]);
    let index = ReplayIndex::of(&cap.launches);
    let mut derived = 0;
    let mut checkpoints = std::collections::BTreeSet::new();
    for l in &cap.launches {
        match index.get(l.id) {
            Some(Replayability::Derived {
                chain, checkpoint, ..
            }) => {
                derived += 1;
                assert!(
                    *chain <= 64,
                    "launch {}: a chain of {chain} launches (checkpoints every 64)",
                    l.id
                );
                checkpoints.insert(*checkpoint);
            }
            Some(Replayability::Stored) => {}
            other => panic!("launch {} is not replayable: {other:?}", l.id),
        }
    }
    assert!(
        derived >= LAUNCHES / 2,
        "only {derived} of {LAUNCHES} launches have derived inputs: the budget did not bite"
    );
    assert!(
        checkpoints.len() >= 2,
        "the chains start from one stored launch only ({checkpoints:?}): no checkpoint was stored"
    );
    let blobs = dir_size(&dir.join("blobs"));
    assert!(
        blobs <= 2 << 20,
        "{blobs} bytes of blobs under a 1 MB budget (4.7 MB stored in full)"
    );

    let list = list_says_all_replayable(&dir, &cap);
    assert!(list.contains("(d)") && !list.contains("(!)"), "{list}");

    let last = cap.launches.last().expect("launches").id;
    let show = cltrap(&[
        OsStr::new("show"),
        dir.as_os_str(),
        OsStr::new(&last.to_string()),
    ]);
    show.assert_no_panic();
    let text = show.stdout_text();
    assert!(
        text.contains("replayable: yes, with derived inputs")
            && text.contains("input `a` re-created by re-executing launch"),
        "{}",
        show.describe()
    );

    let json = cltrap(&[
        OsStr::new("show"),
        dir.as_os_str(),
        OsStr::new(&last.to_string()),
        OsStr::new("--json"),
    ]);
    let value: serde_json::Value =
        serde_json::from_slice(&json.stdout).unwrap_or_else(|e| panic!("{e}\n{}", json.describe()));
    assert_eq!(value["replay"]["replayable"], "derived", "{value}");
    assert!(value["replay"]["chain"]
        .as_u64()
        .is_some_and(|c| (1..=64).contains(&c)));

    // Every launch replays ok, in order; and the last one alone, its chain re-executed.
    assert_replays_ok(&dir, LAUNCHES);
    assert_replay_ids_ok(&dir, &[last]);

    // Coverage and the native check restore derived inputs the same way.
    let id = last.to_string();
    let cover = cltrap(&[OsStr::new("cover"), dir.as_os_str(), OsStr::new(&id)]);
    cover.assert_no_panic();
    assert!(
        cover.success()
            && cover
                .stdout_text()
                .contains("over 1 launch(es) (0 skipped, 0 failed)"),
        "{}",
        cover.describe()
    );
    let check = cltrap(&[OsStr::new("check"), dir.as_os_str(), OsStr::new(&id)]);
    check.assert_no_panic();
    assert!(
        check.stdout_text().contains("checked 1 of 1 launch(es)"),
        "{}",
        check.describe()
    );
}

/// Under the default budget, deriving starts past `--derive-after-mb` (`auto`: 256 MB and
/// more as the run goes on: a Gaussian elimination over a 4 MB matrix keeps its 2 046
/// launches replayable without storing 2.2 GB). The fixture is small, so the threshold is set
/// to 1 MB here; with the default threshold, it stores everything.
#[test]
fn deriving_starts_past_the_derive_threshold_under_the_default_budget() {
    let (dir, cap) = capture_gauss_with("derived-threshold", &["--derive-after-mb", "1"], &[]);
    let index = ReplayIndex::of(&cap.launches);
    let derived = cap
        .launches
        .iter()
        .filter(|l| matches!(index.get(l.id), Some(Replayability::Derived { .. })))
        .count();
    assert!(
        derived >= LAUNCHES / 2,
        "only {derived} of {LAUNCHES} launches have derived inputs past a 1 MB threshold"
    );
    let blobs = dir_size(&dir.join("blobs"));
    assert!(
        blobs <= 2 << 20,
        "{blobs} bytes of blobs (4.7 MB stored in full)"
    );
    list_says_all_replayable(&dir, &cap);
    assert_replays_ok(&dir, LAUNCHES);

    // The default threshold (at least 256 MB) is far away: every content stored, nothing said.
    let exe = fixture("gauss");
    let plain = fresh_capture_dir("derived-threshold-default");
    let captured = run_captured(&plain, &[] as &[&str], &exe, &[N]);
    captured.assert_no_panic();
    assert!(
        !captured.stderr.contains("CLTRAP_MAX_MB"),
        "{}",
        captured.describe()
    );
    let cap = open_capture(&plain);
    let index = ReplayIndex::of(&cap.launches);
    assert!(
        cap.launches
            .iter()
            .all(|l| matches!(index.get(l.id), Some(Replayability::Stored))),
        "a capture under the default threshold derived inputs"
    );
}

#[test]
fn a_buffer_the_host_wrote_between_launches_is_stored_and_still_replayable() {
    let (dir, cap) = capture_gauss("derived-hostwrite", &["hostwrite"]);
    // The host rewrote b right before the Fan1 launch of pivot N/2.
    let pivot: u64 = N.parse::<u64>().expect("N") / 2;
    let l = cap
        .launches
        .iter()
        .find(|l| l.kernel == "Fan1" && l.args.get(4).and_then(scalar_i32) == Some(pivot as i32))
        .expect("the Fan1 launch of pivot N/2");
    let prev = cap
        .launches
        .iter()
        .find(|p| p.id + 1 == l.id)
        .expect("the launch before it");
    assert!(
        matches!(after(&prev.args[2]), Content::Digest { .. }),
        "launch {}: b after should be a digest past the budget, is {:?}",
        prev.id,
        after(&prev.args[2])
    );
    assert!(
        matches!(before(&l.args[2]), Content::Blob { .. }),
        "launch {}: b was written by the host, so it must be stored, is {:?}",
        l.id,
        before(&l.args[2])
    );
    assert_ne!(before(&l.args[2]).hash(), after(&prev.args[2]).hash());
    let index = ReplayIndex::of(&cap.launches);
    let status = index.get(l.id).expect("indexed");
    assert!(status.replayable(), "{status:?}");
    assert!(status.derived(2).is_none(), "b is not derived: {status:?}");
    assert!(
        cap.launches
            .iter()
            .all(|l| index.get(l.id).is_some_and(|s| s.replayable())),
        "every launch stays replayable"
    );
    assert_replay_ids_ok(&dir, &[l.id, l.id + 1]);
}

#[test]
fn a_launch_whose_producer_computes_other_bits_is_not_replayable_here_not_failed() {
    let (dir, cap) = capture_gauss("derived-tampered", &[]);
    let index = ReplayIndex::of(&cap.launches);
    // The first launch whose matrix `a` is derived, and the launch that produced it.
    let (consumer, producer) = cap
        .launches
        .iter()
        .find_map(|l| {
            let d = index.get(l.id)?.derived(1)?;
            Some((l.id, d.producer))
        })
        .expect("a launch with a derived input");
    // The producer now runs with another pivot than it did: its output differs from the
    // recorded digest, as a kernel whose output depends on something not captured would.
    rewrite_launch(&dir, producer, |r| {
        if let Some(ArgRecord::Scalar { bytes, .. }) = r.args.get_mut(4) {
            *bytes = "00000000".into();
        }
    });
    let out = cltrap(&[
        OsStr::new("replay"),
        dir.as_os_str(),
        OsStr::new(&consumer.to_string()),
    ]);
    out.assert_no_panic();
    // What another device's rounding would do: not a failure of the replay, a launch this
    // device cannot replay, counted apart.
    assert_eq!(out.code, Some(0), "{}", out.describe());
    let want = format!("launch {consumer} Fan");
    let line = out
        .stdout_text()
        .lines()
        .find(|l| l.starts_with(&want))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no line for launch {consumer}\n{}", out.describe()));
    assert!(
        line.contains(&format!(
            ": not replayable on this device: its input derives from launch {producer}"
        )) && line.contains("replay on the capture device"),
        "{line}"
    );
    assert!(
        out.stdout_text()
            .contains("0 failed, 1 not replayable on this device;"),
        "{}",
        out.describe()
    );
    // With its producer in the selection: the producer mismatches (exit 1), the consumer is
    // still not replayable here rather than failed.
    let both = cltrap(&[
        OsStr::new("replay"),
        dir.as_os_str(),
        OsStr::new(&producer.to_string()),
        OsStr::new(&consumer.to_string()),
    ]);
    both.assert_no_panic();
    assert_eq!(both.code, Some(1), "{}", both.describe());
    assert!(
        both.stdout_text()
            .contains(&format!("launch {producer} Fan"))
            && both.stdout_text().contains("1 mismatched")
            && both
                .stdout_text()
                .contains("1 not replayable on this device"),
        "{}",
        both.describe()
    );

    // Replaying from the producer to the end costs about one execution per launch: the
    // launches after it that derive from it are refused at once, not each after walking
    // their whole chain back again (quadratic on a long capture replayed on another device).
    let last = cap.launches.last().map(|l| l.id).unwrap_or(0);
    let rest = cltrap(&[
        OsStr::new("replay"),
        dir.as_os_str(),
        OsStr::new(&format!("{producer}-{last}")),
    ]);
    rest.assert_no_panic();
    let text = rest.stdout_text();
    let not_here = text
        .lines()
        .filter(|l| l.contains(": not replayable on this device: its input derives from launch"))
        .count();
    assert!(not_here > 10, "{}", rest.describe());
    let rederived: u64 = text
        .split("; ")
        .find_map(|p| p.strip_suffix(" earlier launch(es) re-executed to derive inputs"))
        .map_or(Some(0), |n| n.parse().ok())
        .unwrap_or(u64::MAX);
    // Only the producer's own chain (here 1 launch) is re-executed; refusing a launch costs
    // nothing (without the memory of what does not reproduce: one re-execution each, 62).
    assert!(
        rederived <= 8,
        "{rederived} launches re-executed for {not_here} that cannot be derived\n{}",
        rest.describe()
    );

    // The fuzzer says so for the launches it could not seed from, and seeds from the others.
    let fuzz = cltrap(&[
        OsStr::new("fuzz"),
        dir.as_os_str(),
        OsStr::new("--kernel"),
        OsStr::new("Fan2"),
        OsStr::new("--budget"),
        OsStr::new("50"),
        OsStr::new("--in-process"),
    ]);
    fuzz.assert_no_panic();
    assert!(fuzz.success(), "{}", fuzz.describe());
    assert!(
        fuzz.stderr.lines().any(|l| l.contains("does not seed the campaign")
            && l.contains(&format!(
                "launch {producer} re-executed on this device produced different contents than recorded"
            ))),
        "{}",
        fuzz.describe()
    );
}

#[test]
fn fuzz_and_mutate_re_create_derived_inputs() {
    let (dir, cap) = capture_gauss("derived-fuzz", &[]);
    let index = ReplayIndex::of(&cap.launches);
    let fan2: Vec<u64> = cap
        .launches
        .iter()
        .filter(|l| l.kernel == "Fan2")
        .map(|l| l.id)
        .collect();
    let derived = fan2
        .iter()
        .filter(|id| matches!(index.get(**id), Some(Replayability::Derived { .. })))
        .count();
    assert!(
        derived >= fan2.len() / 2,
        "{derived} of {} derived",
        fan2.len()
    );

    // Every launch of the kernel seeds the campaign: none is named as not seeding it.
    let suite = dir.join("fuzz-suite");
    let fuzz = cltrap(&[
        OsStr::new("fuzz"),
        dir.as_os_str(),
        OsStr::new("--kernel"),
        OsStr::new("Fan2"),
        OsStr::new("--budget"),
        OsStr::new("200"),
        OsStr::new("--no-locate"),
        OsStr::new("--out"),
        suite.as_os_str(),
    ]);
    fuzz.assert_no_panic();
    assert!(fuzz.success(), "{}", fuzz.describe());
    assert!(
        !fuzz.stderr.contains("does not seed the campaign"),
        "a derived launch did not seed the campaign\n{}",
        fuzz.describe()
    );

    // The mutation campaign's suite check counts them as test cases (the last two derived
    // launches of the kernel, one operator: the check is what is looked at).
    let late: Vec<String> = fan2
        .iter()
        .rev()
        .filter(|id| matches!(index.get(**id), Some(Replayability::Derived { .. })))
        .take(2)
        .map(u64::to_string)
        .collect();
    assert_eq!(late.len(), 2);
    let out = dir.join("mutants");
    let campaign = dir.join("mutate-campaign");
    let mutate = cltrap(&[
        OsStr::new("mutate"),
        dir.as_os_str(),
        OsStr::new(&late[0]),
        OsStr::new(&late[1]),
        OsStr::new("--kernel"),
        OsStr::new("Fan2"),
        OsStr::new("--operators"),
        OsStr::new("relational_boundary"),
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
    let text = mutate.stdout_text() + &mutate.stderr;
    assert!(
        mutate.success() && !text.contains("not a test case") && !text.contains("no test case:"),
        "a derived launch is not a test case\n{}",
        mutate.describe()
    );
    // The workers ran them with the re-created inputs (a worker that cannot restore a test
    // case reports the mutant RUNTIME-ERROR with why).
    let state = std::fs::read_to_string(campaign.join("units.jsonl")).expect("mutate's journal");
    assert!(
        state.lines().count() >= 2
            && !state.contains("not recorded")
            && !state.contains("derived input"),
        "{state}"
    );
}

/// `cltrap check` checks launches whose inputs the capture keeps only as digests, on both
/// engines: the native engine re-creates them on its device, and for Oclgrind the campaign
/// worker re-creates them there and hands them to the simulator's child (which said before
/// that the launch could not be checked: its inputs were not recorded).
#[test]
fn check_re_creates_derived_inputs_for_both_engines() {
    let (dir, cap) = capture_gauss("derived-check", &[]);
    let index = ReplayIndex::of(&cap.launches);
    // The last two derived launches (one of each kernel, late in the chain).
    let late: Vec<String> = cap
        .launches
        .iter()
        .rev()
        .filter(|l| matches!(index.get(l.id), Some(Replayability::Derived { .. })))
        .take(2)
        .map(|l| l.id.to_string())
        .collect();
    assert_eq!(late.len(), 2);
    for engine in ["native", "oclgrind"] {
        if engine == "oclgrind"
            && !std::path::Path::new("/usr/lib/oclgrind/liboclgrind-rt-icd.so").is_file()
        {
            skip(
                "check_re_creates_derived_inputs_for_both_engines (oclgrind)",
                "Oclgrind is not installed (apt-get install oclgrind)",
            );
            continue;
        }
        let check = cltrap(&[
            OsStr::new("check"),
            dir.as_os_str(),
            OsStr::new(&late[0]),
            OsStr::new(&late[1]),
            OsStr::new("--engine"),
            OsStr::new(engine),
        ]);
        check.assert_no_panic();
        assert!(
            check.success()
                && check.stdout_text().contains(&format!(
                    "checked 2 of 2 launch(es) on {engine}: 0 finding(s)"
                )),
            "{}",
            check.describe()
        );
    }
}

/// The `auto` derive threshold is paced by the run: a launch that passes it soon after the
/// first derives its inputs, and one made after a pause, when the threshold has grown past
/// what is stored, stores everything again, reusing no derived content (its inputs read and
/// stored, not re-created from the launch before). With a pace of 1 MB and 4 MB per second
/// and the fixture's 8 MiB buffer (16 MiB counted after the first launch), the threshold
/// passes what is stored about 3.75 s after the first launch: the second and third launches,
/// enqueued right after it, come well before, the fourth (after a 6 s pause) well after.
#[test]
fn the_auto_derive_threshold_grows_with_the_run() {
    let exe = fixture("paced");
    let args = ["8", "6"];
    let native = run_native(&exe, &args).expect_success();
    let dir = fresh_capture_dir("derived-paced");
    let captured = run_captured(&dir, &["--derive-pace", "1,4"], &exe, &args);
    captured.assert_no_panic();
    assert_same_behaviour(&native, &captured);
    assert!(
        captured.stderr.contains(
            "derive threshold 1 MB and 4 MB per second of the run after its first launch"
        ) && captured
            .stderr
            .contains("while the threshold stays below what is stored"),
        "the capture did not say it derives under the paced threshold: {}",
        captured.describe()
    );
    let cap = open_capture(&dir);
    assert_eq!(cap.launches.len(), 4, "{}", captured.describe());
    let index = ReplayIndex::of(&cap.launches);
    let kinds: Vec<&'static str> = cap
        .launches
        .iter()
        .map(|l| match index.get(l.id) {
            Some(Replayability::Stored) => "stored",
            Some(Replayability::Derived { .. }) => "derived",
            _ => "other",
        })
        .collect();
    // The first stores both its versions; the second's input is the first's stored output;
    // the third's is the second's, kept only as a digest; the fourth stores its input again.
    assert_eq!(
        kinds,
        ["stored", "stored", "derived", "stored"],
        "{}",
        captured.describe()
    );
    assert_replays_ok(&dir, 4);
}
