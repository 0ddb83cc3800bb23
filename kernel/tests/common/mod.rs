//! Helpers shared by the kernel crate's integration tests: fixture files, executor buffers,
//! and the byte views of the `int`/`uint` arrays the fixtures read and write. Each test binary
//! uses a part of them.
#![allow(dead_code)]

use cltrap_analyzer::executor::InputArg;

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
