//! The short, seeded run of the fuzz targets (`fuzz/src/targets.rs`, run at length under
//! AFL++ by `scripts/fuzz.sh`): every file of each target's committed seed corpus
//! (`fuzz/corpus/TARGET/`), then a few thousand deterministic mutations of them (bit flips,
//! interesting bytes and numbers, truncations, deleted and repeated ranges, from a fixed
//! seed), each through the same target function, none of which may panic. Needs no AFL and
//! no OpenCL device; runs in seconds.

#[path = "../../fuzz/src/targets.rs"]
#[allow(dead_code)]
mod targets;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

/// Mutations per target, spread over its seeds.
const MUTATIONS: usize = 3000;

/// xorshift64*: a fixed stream of choices, the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Tokens that reach the parsers' edge cases: huge and negative numbers, path escapes,
/// JSON and preprocessor punctuation, the NUL that separates an input's parts.
const TOKENS: &[&[u8]] = &[
    b"18446744073709551615",
    b"18446744073709551616",
    b"4294967296",
    b"1099511627776",
    b"-1",
    b"0",
    b"1e999",
    b"\"../../x\"",
    b"/dev/zero",
    b"null",
    b"[]",
    b"{}",
    b"\"\"",
    b"\\",
    b"\n",
    b"\0",
    b"#",
    b"##",
    b"#include ",
    b"#define ",
    b"(",
    b")",
    b",",
    b"\"",
    b"<",
    b">",
    b"/*",
    b"*/",
    b"//",
    b"__VA_ARGS__",
    b"...",
];

/// One mutation of `seed`: 1 to 4 edits.
fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(7) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = [0u8, 0xff, 0x7f, 0x80, b'"', b'9', b'{', b'\n'][rng.below(8)];
            }
            2 => v.truncate(at),
            3 => {
                let end = (at + 1 + rng.below(64)).min(v.len());
                v.drain(at.min(end)..end);
            }
            4 => {
                let end = (at + 1 + rng.below(64)).min(v.len());
                let piece = v[at.min(end)..end].to_vec();
                v.splice(at..at, piece);
            }
            _ => {
                let t = TOKENS[rng.below(TOKENS.len())];
                v.splice(at..at, t.iter().copied());
            }
        }
    }
    v
}

/// The committed seeds of `target`, in name order.
fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the seed corpus {} cannot be read: {e}", dir.display()))
        .map(|e| e.expect("a corpus entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no seed", dir.display());
    files
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).expect("a seed file");
            (p, b)
        })
        .collect()
}

/// Runs `target` on its seeds and their mutations; on a panic, saves the input and fails
/// naming it (to commit under `fuzz/findings/` and replay with the AFL binary).
fn run(name: &str) {
    let f = targets::TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .expect("a target of that name")
        .1;
    let seeds = corpus(name);
    let mut rng = Rng(0x636c_7472_6170_2121 ^ name.len() as u64);
    let inputs = seeds
        .iter()
        .map(|(_, b)| b.clone())
        .chain((0..MUTATIONS).map(|k| mutate(&seeds[k % seeds.len()].1, &mut rng)));
    for (k, input) in inputs.enumerate() {
        if catch_unwind(AssertUnwindSafe(|| f(&input))).is_err() {
            // Kept for the replay, under a fresh private name (never a file planted there).
            let saved = tempfile::Builder::new()
                .prefix(&format!("cltrap-fuzz-{name}-{k}-"))
                .suffix(".bin")
                .tempfile()
                .and_then(|mut t| {
                    std::io::Write::write_all(&mut t, &input)?;
                    t.into_temp_path().keep().map_err(|e| e.error)
                })
                .map_or_else(|e| format!("<not saved: {e}>"), |p| p.display().to_string());
            panic!(
                "target {name} panicked on input {k} (saved as {saved}; replay: fuzz/target/release/{name} < it, after scripts/fuzz.sh built it)"
            );
        }
    }
}

#[test]
fn capture_reader_survives_seeds_and_mutations() {
    run("capture");
}

#[test]
fn interface_file_survives_seeds_and_mutations() {
    run("interface");
}

#[test]
fn include_scanner_survives_seeds_and_mutations() {
    run("includes");
}

#[test]
fn macro_expander_survives_seeds_and_mutations() {
    run("macros");
}

/// An interface file asking for more bytes than an argument may take (or for a count whose
/// byte size overflows) is refused with a sentence naming the argument, before anything is
/// allocated: 2^40 elements aborted the process, 2^62 ran for ever.
#[test]
fn interface_sizes_past_the_bound_are_refused_before_allocating() {
    use cltrap_analyzer::fuzz::spec::{self, ArgSpec, Fill, InterfaceFile};
    use cltrap_kernel::interface::Scalar;
    use cltrap_kernel::interface::{ArgInterface, ArgKind, KernelInterface, Role, ValueType};
    use cltrap_kernel::model::AddressSpace;
    let float = ValueType {
        scalar: Scalar::Float { bits: 32 },
        lanes: 1,
    };
    let kinds = [
        ArgKind::Buffer {
            elem: Some(float),
            elem_name: "float".into(),
            role: Role::Input,
            layout: None,
        },
        ArgKind::Buffer {
            elem: None,
            elem_name: "S".into(),
            role: Role::Input,
            layout: None,
        },
        ArgKind::Local { elem: Some(float) },
        ArgKind::Opaque { layout: None },
    ];
    let dir = tempfile::tempdir().unwrap();
    for kind in kinds {
        for (size, elem_bytes) in [(1u64 << 40, 4u64), (1 << 62, 4), (u64::MAX, u64::MAX)] {
            let iface = KernelInterface {
                kernel: "k".into(),
                args: vec![ArgInterface {
                    index: 0,
                    name: "a".into(),
                    ty: "__global float *".into(),
                    address_space: AddressSpace::Global,
                    kind: kind.clone(),
                }],
                int_constants: Vec::new(),
                float_constants: Vec::new(),
            };
            let file = InterfaceFile {
                kernel: "k".into(),
                build_options: String::new(),
                global_size: vec![u64::MAX, 2],
                local_size: None,
                args: vec![ArgSpec {
                    name: "a".into(),
                    ty: "__global float *".into(),
                    size: Some(size),
                    elem_bytes: Some(if matches!(kind, ArgKind::Opaque { .. }) {
                        size
                    } else {
                        elem_bytes
                    }),
                    fill: Fill::Random,
                    output: false,
                }],
            };
            let err = spec::to_input(&file, &iface, dir.path(), 1)
                .expect_err("an argument of more than 1 GiB is refused")
                .to_string();
            assert!(
                err.contains("argument 0 (a)") && err.contains("more than the 1073741824 bytes"),
                "{kind:?} with {size} elements: {err}"
            );
        }
    }
}
