//! Untrusted captures seen by `cltrap show` and by launch-id selections, without a device:
//! every string a capture gives `show` is printed with its control characters escaped, and a
//! selection's ranges are bounded by the capture's launch ids before they are expanded.

mod common;
use cltrap_analyzer::ids::{self, IdsError};
use cltrap_analyzer::show;
use cltrap_analyzer::site::Resolver;
use cltrap_capture::*;
use std::path::PathBuf;

/// ESC (a colour sequence), BEL, CR and a line break: what a hostile capture would put on a
/// terminal.
const HOSTILE: &str = "x\u{1b}[31m\u{7}\r\ny";
/// [`HOSTILE`] as `show` must print it.
const ESCAPED: &str = "x\\u{1b}[31m\\u{7}\\r\\ny";

fn temp_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("show-ids-hostile")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.parent().unwrap()).unwrap();
    d
}

fn manifest() -> Manifest {
    Manifest {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        writer: "show/ids hostile test".into(),
        pid: 0,
        argv: vec![],
        started_unix: 0,
        buffer_mode: "full".into(),
    }
}

fn info(index: u32, name: &str, ty: &str, space: &str, quals: &str) -> ArgInfo {
    ArgInfo {
        index,
        name: name.into(),
        type_name: ty.into(),
        address_space: space.into(),
        qualifiers: quals.into(),
    }
}

fn record(kernel: &str, program: Hash, args: Vec<ArgRecord>, device: &str) -> LaunchRecord {
    let mut r = common::ndrange_record(kernel, program, vec![4], None, None, args);
    r.device = DeviceRecord {
        name: device.into(),
        vendor: device.into(),
        platform: device.into(),
        version: device.into(),
        driver_version: device.into(),
    };
    r
}

/// A capture whose every string `show` prints holds [`HOSTILE`]: launch 0.
fn hostile_capture() -> Capture {
    let dir = temp_dir("show");
    let w = CaptureWriter::create(&dir, &manifest()).expect("capture");
    // The kernel's definition line holds the sequence too (`show` quotes that line); the
    // kernel's name cannot (the reader refuses a name that is not an identifier).
    let source = "__kernel void k(global int *a) { a[0] = 1; /*\u{1b}[31m\u{7}\rz*/ }\n";
    let src = w.blobs.put(source.as_bytes()).expect("blob");
    let header = w.blobs.put(b"#define X 1\n").expect("blob");
    let site = |s: &str| Site {
        module: format!("/nonexistent/mod{s}"),
        offset: 0x10,
        symbol: Some(format!("sym{s}")),
        location: None,
    };
    let program = ProgramRecord {
        origin: ProgramOrigin::Source { sources: vec![src] },
        // Build options are printed quoted; a reader refuses an option not passed on.
        options: "-D A=1".into(),
        devices: vec![format!("dev{HOSTILE}")],
        build_site: Some(site(HOSTILE)),
        includes: Includes {
            build_dir: format!("/build{HOSTILE}"),
            files: vec![IncludedFile {
                name: format!("inc{HOSTILE}.h"),
                form: IncludeForm::Quoted,
                from: Some(format!("/from{HOSTILE}")),
                path: Some(format!("/path{HOSTILE}")),
                content: Some(header),
            }],
        },
    };
    let program = w
        .blobs
        .put(&serde_json::to_vec(&program).unwrap())
        .expect("blob");
    let bytes = [1u8, 2, 3, 4];
    let args = vec![
        ArgRecord::Buffer {
            info: info(
                0,
                &format!("a{HOSTILE}"),
                &format!("int*{HOSTILE}"),
                "global",
                HOSTILE,
            ),
            mem: 1,
            flags: 1,
            size: 4,
            sub_of: None,
            before: Content::Blob {
                hash: w.blobs.put(&bytes).unwrap(),
                size: 4,
            },
            after: Content::Missing {
                note: format!("note{HOSTILE}"),
            },
        },
        ArgRecord::Scalar {
            info: info(1, &format!("n{HOSTILE}"), "uint", "private", ""),
            bytes: "04000000".into(),
        },
    ];
    let mut l = record("k", program, args, &format!("d{HOSTILE}"));
    l.launch_site = Some(site(HOSTILE));
    w.append(l).expect("append");
    drop(w);
    Capture::open(&dir).expect("the capture reads back")
}

#[test]
fn show_escapes_every_string_of_the_capture() {
    let capture = hostile_capture();
    let launch = capture.launch(0).expect("launch 0");
    let out = show::render(&capture, launch, &mut Resolver::new());
    // Nothing but the description's own line breaks reaches the terminal.
    let raw: Vec<char> = out
        .chars()
        .filter(|c| c.is_control() && *c != '\n')
        .collect();
    assert!(
        raw.is_empty(),
        "control characters {raw:?} printed raw:\n{out}"
    );
    // A capture's line break cannot start a line of its own (`y` follows each HOSTILE).
    let forged: Vec<&str> = out.lines().filter(|l| l.starts_with('y')).collect();
    assert!(
        forged.is_empty(),
        "lines forged by the capture {forged:?}:\n{out}"
    );
    for shown in [
        format!("  [0] a{ESCAPED}: int*{ESCAPED} (global {ESCAPED})\n"),
        format!("  [1] n{ESCAPED}: uint\n"),
        format!("scalars: n{ESCAPED}=4"),
        format!("device: d{ESCAPED} (d{ESCAPED}, platform d{ESCAPED}"),
        format!("launched at: mod{ESCAPED}+0x10 (sym{ESCAPED})\n"),
        format!("  devices: dev{ESCAPED}\n"),
        format!("  built at: mod{ESCAPED}+0x10 (sym{ESCAPED})\n"),
        format!("  built in: /build{ESCAPED}\n"),
        format!(" (from /from{ESCAPED}): /path{ESCAPED}, captured"),
        format!("not recorded (note{ESCAPED})"),
        "`k` defined at line 1: __kernel void k(global int *a) { a[0] = 1; /*\\u{1b}[31m\\u{7}\\rz*/ }\n".into(),
    ] {
        assert!(out.contains(&shown), "{shown:?} not in:\n{out}");
    }
}

/// A capture of launches with these ids (taken in order, the others skipped).
fn capture_with_ids(name: &str, ids: &[u64]) -> Capture {
    let dir = temp_dir(name);
    let w = CaptureWriter::create(&dir, &manifest()).expect("capture");
    let src = w.blobs.put(b"__kernel void k(global int *a) {}\n").unwrap();
    let program = ProgramRecord {
        origin: ProgramOrigin::Source { sources: vec![src] },
        options: String::new(),
        devices: vec!["dev".into()],
        build_site: None,
        includes: Default::default(),
    };
    let program = w.blobs.put(&serde_json::to_vec(&program).unwrap()).unwrap();
    let last = ids.iter().copied().max().unwrap_or(0);
    let mut records = Vec::new();
    for _ in 0..=last {
        let id = w.take_id().unwrap();
        if ids.contains(&id) {
            let mut l = record("k", program.clone(), vec![], "dev");
            l.id = id;
            l.seq = id;
            records.push(l);
        }
    }
    w.append_numbered(records).unwrap();
    drop(w);
    let c = Capture::open(&dir).expect("the capture reads back");
    assert_eq!(c.launches.iter().map(|l| l.id).collect::<Vec<_>>(), ids);
    c
}

#[test]
fn a_huge_range_is_bounded_by_the_capture_before_it_is_expanded() {
    let c = capture_with_ids("ids", &[0, 1, 2, 3]);
    // The capture's ids: as `0-3` would give.
    assert_eq!(ids::parse_ids_in("0-3", &c), Ok(vec![0, 1, 2, 3]));
    assert_eq!(ids::parse_ids_in("2,0-1", &c), Ok(vec![2, 0, 1]));
    // Past the last launch: the same refusal as the single id 4, at once (4 ids looked at,
    // not 4 billion held in memory).
    let missing = IdsError::NotInCapture {
        id: 4,
        launches: "4 launches: ids 0 to 3".into(),
    };
    assert_eq!(ids::parse_ids_in("4", &c), Err(missing.clone()));
    assert_eq!(ids::parse_ids_in("0-4000000000", &c), Err(missing.clone()));
    assert_eq!(
        ids::parse_ids_in("1,0-18446744073709551615", &c),
        Err(missing.clone())
    );
    assert_eq!(
        missing.to_string(),
        "launch 4 is not in this capture (4 launches: ids 0 to 3)"
    );
    assert_eq!(
        ids::parse_ids_in("9-4000000000", &c)
            .unwrap_err()
            .to_string(),
        "launch 9 is not in this capture (4 launches: ids 0 to 3)"
    );
}

#[test]
fn the_refusal_names_the_ids_the_capture_has() {
    let one = capture_with_ids("one", &[0]);
    assert_eq!(
        ids::parse_ids_in("0-1", &one).unwrap_err().to_string(),
        "launch 1 is not in this capture (1 launch: id 0)"
    );
    // Ids that are not contiguous: the first id missing in a range is named, and the runs.
    let gaps = capture_with_ids("gaps", &[0, 1, 5]);
    assert_eq!(ids::parse_ids_in("5,0-1", &gaps), Ok(vec![5, 0, 1]));
    assert_eq!(
        ids::parse_ids_in("0-5", &gaps).unwrap_err().to_string(),
        "launch 2 is not in this capture (3 launches: ids 0-1,5)"
    );
}
