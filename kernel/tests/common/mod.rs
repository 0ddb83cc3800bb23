//! Helpers shared by the kernel crate's integration tests: fixture files, the device lock,
//! sessions, launch inputs, executor buffers, and the byte views of the `int`/`uint` arrays
//! the fixtures read and write. Each test binary uses a part of them.
#![allow(dead_code)]

use cltrap_analyzer::executor::{DeviceSelector, InputArg, LaunchInput, Session};
use std::sync::Mutex;

/// PoCL 3.1 is not happy with concurrent context creation; run the device tests one at a time.
pub static DEVICE: Mutex<()> = Mutex::new(());

/// The folder of the kernel fixtures (also the base of their `-I` include directories).
pub fn kernels_dir() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernels").to_string()
}

/// The text of fixture `name` in `tests/kernels/`.
pub fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/{name}", kernels_dir()))
        .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// A read-write buffer argument holding `bytes`.
pub fn buffer(bytes: Vec<u8>) -> InputArg {
    InputArg::Buffer {
        mem: None,
        flags: 1,
        bytes,
    }
}

/// `uint` values as device bytes.
pub fn words(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Device bytes as `uint` values.
pub fn to_words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `int` values as device bytes.
pub fn bytes_of(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Device bytes as `int` values.
pub fn ints(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// A session on the default device (PoCL here).
pub fn session() -> Session {
    Session::open(&DeviceSelector::default()).expect("an OpenCL device (PoCL) is installed")
}

/// The executor's input for one NDRange launch of `kernel` with `args`.
pub fn launch(
    kernel: &str,
    global: &[u64],
    local: Option<&[u64]>,
    offset: Option<&[u64]>,
    args: Vec<InputArg>,
) -> LaunchInput {
    LaunchInput {
        kernel: kernel.into(),
        work_dim: global.len() as u32,
        global_offset: offset.map(|o| o.to_vec()),
        global_size: global.to_vec(),
        local_size: local.map(|l| l.to_vec()),
        args,
        stand_ins: vec![],
    }
}
