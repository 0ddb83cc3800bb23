//! An output verified on the device (`CLTRAP_REPLAY_DEVICE_DIGEST=on`) stays there for the
//! next launch, which restores no host copy of it; a next launch that cannot bind it after
//! all (it runs twice, with stand-ins for a write-only buffer the capture did not record)
//! has the placeholder filled from the device first, and judges as a replay reading back.
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

const SOURCE: &str = "__kernel void scale(__global float* x) {\n  size_t i = get_global_id(0);\n  x[i] = x[i] * 2.0f + 1.0f;\n}\n__kernel void shift(__global const float* x, __global float* y) {\n  size_t i = get_global_id(0);\n  y[i] = x[i] + 0.5f;\n}\n";

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
