//! An output verified on the device (`CLTRAP_REPLAY_DEVICE_DIGEST=on`) stays there for the
//! next launch, which restores no host copy of it; a next launch that cannot bind it after
//! all (it runs twice, with stand-ins for a write-only buffer the capture did not record)
//! has the placeholder filled from the device first, and judges as a replay reading back.
//! Each launch run waits on the device once, its outputs' digests included; an object that
//! two arguments of a launch share is read back, and counted, once.
//!
//! Alone in its test binary: it sets the environment variable for the whole process.

mod common;
use common::{
    arg_info, f32s, ndrange_record, put_blob, put_source_program, temp_dir, test_manifest,
};

use cltrap_analyzer::compare::Closeness;
use cltrap_analyzer::executor::{DeviceSelector, Session};
use cltrap_analyzer::replay::{Outcome, Replayer};
use cltrap_capture::devdigest::dd128;
use cltrap_capture::writer::digest;
use cltrap_capture::*;

const SOURCE: &str = "__kernel void scale(__global float* x) {\n  size_t i = get_global_id(0);\n  x[i] = x[i] * 2.0f + 1.0f;\n}\n__kernel void shift(__global const float* x, __global float* y) {\n  size_t i = get_global_id(0);\n  y[i] = x[i] + 0.5f;\n}\n__kernel void twice(__global float* a, __global const float* b) {\n  size_t i = get_global_id(0);\n  a[i] = b[i] * 2.0f;\n}\n";

fn dd(bytes: &[u8]) -> Content {
    Content::Digest {
        hash: dd128(bytes),
        size: bytes.len() as u64,
        algo: DigestKind::Dd128,
    }
}

fn buffer(
    index: u32,
    name: &str,
    mem: u64,
    flags: u64,
    before: Content,
    after: Content,
) -> ArgRecord {
    ArgRecord::Buffer {
        info: arg_info(index, name, "float*", "global"),
        mem,
        flags,
        size: 4096,
        sub_of: None,
        before,
        after,
    }
}

#[test]
fn a_placeholder_is_filled_from_the_device_for_a_launch_run_with_stand_ins() {
    std::env::set_var("CLTRAP_REPLAY_DEVICE_DIGEST", "on");
    let dir = temp_dir("device-verify-stand-ins");
    let w = CaptureWriter::create(&dir, &test_manifest("analyzer test")).unwrap();
    let p = put_source_program(&w.blobs, SOURCE, "");
    let x0: Vec<f32> = (0..1024).map(|i| i as f32 * 0.25).collect();
    let x1: Vec<f32> = x0.iter().map(|v| v * 2.0 + 1.0).collect();
    let y: Vec<f32> = x1.iter().map(|v| v + 0.5).collect();
    // Launch 0 rewrites x, recorded as a dd128 digest after it.
    w.append(ndrange_record(
        "scale",
        p.clone(),
        vec![1024],
        None,
        Some(vec![64]),
        vec![buffer(
            0,
            "x",
            1,
            1,
            put_blob(&w.blobs, &f32s(&x0)),
            dd(&f32s(&x1)),
        )],
    ))
    .unwrap();
    // Launch 1 reads x (derived from launch 0) and overwrites a write-only y whose contents
    // before it were not recorded (a digest of nothing the capture holds): it runs twice.
    let garbage = f32s(&[7.0; 1024]);
    w.append(ndrange_record(
        "shift",
        p,
        vec![1024],
        None,
        Some(vec![64]),
        vec![
            buffer(0, "x", 1, 1, dd(&f32s(&x1)), dd(&f32s(&x1))),
            buffer(
                1,
                "y",
                2,
                2,
                Content::Digest {
                    hash: digest(&garbage),
                    size: garbage.len() as u64,
                    algo: DigestKind::Blake3,
                },
                dd(&f32s(&y)),
            ),
        ],
    ))
    .unwrap();
    drop(w);
    let capture = Capture::open(&dir).unwrap();
    let session =
        Session::open(&DeviceSelector::default()).expect("an OpenCL device (PoCL) is installed");
    let mut r = Replayer::new(&capture, Closeness::default());
    let first = r.one(&session, &capture.launches[0]);
    assert!(matches!(first.outcome, Outcome::Ok { .. }), "{first}");
    // Launch 0's x was verified on the device and not read back.
    let t = r.traffic();
    assert_eq!((t.device_verified, t.read_back), (1, 0), "{t:?}");
    let second = r.one(&session, &capture.launches[1]);
    assert!(matches!(second.outcome, Outcome::Ok { .. }), "{second}");
    // Its x came from the device (read back to run the launch twice), not by re-executing
    // launch 0.
    assert_eq!(r.rederived(), 0);
    assert!(r.traffic().read_back >= 1, "{:?}", r.traffic());
}

/// `scale` run `n` times over one buffer `x`, each launch's `x` after it recorded as a `dd128`
/// (launch 0's before as bytes): a chain of launches each verified on the device.
fn scale_chain(dir: &std::path::Path, n: usize) {
    let w = CaptureWriter::create(dir, &test_manifest("analyzer test")).unwrap();
    let p = put_source_program(&w.blobs, SOURCE, "");
    let mut x: Vec<f32> = (0..1024).map(|i| i as f32 * 0.125).collect();
    for k in 0..n {
        let next: Vec<f32> = x.iter().map(|v| v * 2.0 + 1.0).collect();
        let before = if k == 0 {
            put_blob(&w.blobs, &f32s(&x))
        } else {
            dd(&f32s(&x))
        };
        w.append(ndrange_record(
            "scale",
            p.clone(),
            vec![1024],
            None,
            Some(vec![64]),
            vec![buffer(0, "x", 1, 1, before, dd(&f32s(&next)))],
        ))
        .unwrap();
        x = next;
    }
}

#[test]
fn each_launch_verified_on_the_device_waits_on_it_once() {
    std::env::set_var("CLTRAP_REPLAY_DEVICE_DIGEST", "on");
    let dir = temp_dir("device-verify-waits");
    let n = 5;
    scale_chain(&dir, n);
    let capture = Capture::open(&dir).unwrap();
    let session =
        Session::open(&DeviceSelector::default()).expect("an OpenCL device (PoCL) is installed");
    let mut r = Replayer::new(&capture, Closeness::default());
    for l in &capture.launches {
        let waits = session.device_waits();
        let result = r.one(&session, l);
        assert!(matches!(result.outcome, Outcome::Ok { .. }), "{result}");
        // The kernel, and the digest of `x` with the read of its partials: one wait.
        assert_eq!(session.device_waits() - waits, 1, "launch {}", l.id);
    }
    let t = r.traffic();
    assert_eq!(t.device_verified, n as u64, "{t:?}");
    assert_eq!((t.waits, t.run_waits), (n as u64, n as u64), "{t:?}");
    // Every launch after the first bound the previous one's `x`, unread.
    assert_eq!((t.bound, t.read_back), (n as u64 - 1, 0), "{t:?}");
}

#[test]
fn an_object_two_arguments_share_is_read_back_and_counted_once() {
    std::env::set_var("CLTRAP_REPLAY_DEVICE_DIGEST", "on");
    let dir = temp_dir("device-verify-shared");
    let w = CaptureWriter::create(&dir, &test_manifest("analyzer test")).unwrap();
    let p = put_source_program(&w.blobs, SOURCE, "");
    let a: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    let doubled: Vec<f32> = a.iter().map(|v| v * 2.0).collect();
    let (before, after) = (f32s(&a), f32s(&doubled));
    // The same buffer (mem 1) as both arguments of `twice`, its contents recorded as bytes.
    let arg = |index: u32, name: &str| {
        buffer(
            index,
            name,
            1,
            1,
            put_blob(&w.blobs, &before),
            put_blob(&w.blobs, &after),
        )
    };
    w.append(ndrange_record(
        "twice",
        p,
        vec![1024],
        None,
        Some(vec![64]),
        vec![arg(0, "a"), arg(1, "b")],
    ))
    .unwrap();
    drop(w);
    let capture = Capture::open(&dir).unwrap();
    let session =
        Session::open(&DeviceSelector::default()).expect("an OpenCL device (PoCL) is installed");
    let mut r = Replayer::new(&capture, Closeness::default());
    let result = r.one(&session, &capture.launches[0]);
    assert!(matches!(result.outcome, Outcome::Ok { .. }), "{result}");
    let t = r.traffic();
    assert_eq!(
        (t.read_back, t.read_back_bytes),
        (1, after.len() as u64),
        "{t:?}"
    );
    assert_eq!(t.run_waits, 1, "{t:?}");
}
