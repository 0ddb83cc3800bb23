//! `replay --schedules --per-kernel N`: which launches of a long capture to classify.
//!
//! Why: an application launches the same kernel thousands of times, often on the same
//! inputs; running each under N schedules again says nothing new and makes long captures too
//! slow to classify. Launches are grouped by *class* — the same program, kernel and NDRange
//! (offset, global and local sizes) — and, inside a class, by *input*: the content digests of
//! the arguments' contents before the launch, the scalars' bytes, `__local` sizes, samplers,
//! and which arguments share one memory object. A launch is classified when its input is new
//! to its class and the class has fewer than N classified inputs; a launch with the input of a
//! classified one is reported as the same, and one with a new input past the limit as skipped
//! at the limit. Nothing is dropped without a line saying why.

use cltrap_capture::{ArgRecord, Content, LaunchRecord};
use std::collections::HashMap;

/// What to do with one launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Classify it: its input is new to its class and the class is under the limit.
    Classify,
    /// Same class and input as this earlier launch, which was classified.
    SameAs(u64),
    /// Its class already has the limit's number of classified inputs, none of them this one.
    OverLimit {
        /// The limit (N of `--per-kernel N`).
        limit: u32,
        /// The class in words: `scale with global 64, local 16`.
        class: String,
        /// The launches classified for the class.
        classified: Vec<u64>,
    },
}

/// Program, kernel and NDRange: launches that run the same code over the same shape.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Class {
    program: String,
    kernel: String,
    offset: Option<Vec<u64>>,
    global: Vec<u64>,
    local: Option<Vec<u64>>,
}

impl Class {
    fn of(l: &LaunchRecord) -> Class {
        Class {
            program: l.program.clone(),
            kernel: l.kernel.clone(),
            offset: l
                .global_offset
                .clone()
                .filter(|o| o.iter().any(|v| *v != 0)),
            global: l.global_size.clone(),
            local: l.local_size.clone(),
        }
    }

    fn describe(&self) -> String {
        let dims = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join("x");
        let mut s = format!("{} with global {}", self.kernel, dims(&self.global));
        match &self.local {
            Some(l) => s.push_str(&format!(", local {}", dims(l))),
            None => s.push_str(", local NULL"),
        }
        if let Some(o) = &self.offset {
            s.push_str(&format!(", offset {}", dims(o)));
        }
        s
    }
}

/// The input of a launch as far as the capture tells it apart: one token per argument.
/// `None` when some argument's contents before the launch are unknown (never the same as
/// another launch's).
fn input_of(l: &LaunchRecord) -> Option<Vec<String>> {
    // Which argument first passed each memory object: aliasing is part of the input.
    let mut first: HashMap<u64, usize> = HashMap::new();
    let content = |c: &Content, flags: u64| match c {
        Content::Blob { hash, size } => Some(format!("{hash}:{size}")),
        Content::Digest { hash, size, algo } => Some(format!("{algo:?}:{hash}:{size}")),
        // A write-only buffer whose contents were not kept is replayed from zeros, alike
        // for every launch; any other unknown content is a different input each time.
        Content::Missing { .. } if flags & opencl_sys::CL_MEM_WRITE_ONLY != 0 => {
            Some("not-recorded".into())
        }
        Content::Missing { .. } => None,
    };
    l.args
        .iter()
        .enumerate()
        .map(|(i, a)| match a {
            ArgRecord::Scalar { bytes, .. } => Some(format!("scalar {bytes}")),
            ArgRecord::Local { size, .. } => Some(format!("local {size}")),
            ArgRecord::NullBuffer { .. } => Some("null".into()),
            ArgRecord::Buffer {
                mem,
                flags,
                size,
                sub_of,
                before,
                ..
            } => {
                let alias = *first.entry(*mem).or_insert(i);
                Some(format!(
                    "buffer {} {size} {flags} {sub_of:?} as argument {alias}",
                    content(before, *flags)?
                ))
            }
            ArgRecord::Image {
                mem,
                flags,
                image,
                before,
                ..
            } => {
                let alias = *first.entry(*mem).or_insert(i);
                Some(format!(
                    "image {} {flags} {image:?} as argument {alias}",
                    content(before, *flags)?
                ))
            }
            ArgRecord::Sampler {
                normalized_coords,
                addressing_mode,
                filter_mode,
                ..
            } => Some(format!(
                "sampler {normalized_coords} {addressing_mode} {filter_mode}"
            )),
            ArgRecord::Svm { .. } | ArgRecord::Unset { .. } => None,
        })
        .collect()
}

/// A class's state: the inputs seen, each with the first launch that had it and whether
/// that one was classified.
#[derive(Default)]
struct ClassState {
    inputs: HashMap<Vec<String>, (u64, bool)>,
    classified: Vec<u64>,
}

/// Decides, launch by launch in capture order, which ones `--per-kernel N` classifies.
pub struct Limiter {
    limit: u32,
    classes: HashMap<Class, ClassState>,
}

impl Limiter {
    /// At most `limit` (at least 1) classified inputs per class.
    pub fn new(limit: u32) -> Limiter {
        Limiter {
            limit: limit.max(1),
            classes: HashMap::new(),
        }
    }

    /// What to do with `l`; a [`Decision::Classify`] counts against its class's limit.
    pub fn decide(&mut self, l: &LaunchRecord) -> Decision {
        let class = Class::of(l);
        let words = class.describe();
        let state = self.classes.entry(class).or_default();
        let input = input_of(l);
        if let Some(input) = &input {
            if let Some((first, classified)) = state.inputs.get(input) {
                if *classified {
                    return Decision::SameAs(*first);
                }
            }
        }
        if state.classified.len() as u32 >= self.limit {
            if let Some(input) = input {
                state.inputs.entry(input).or_insert((l.id, false));
            }
            return Decision::OverLimit {
                limit: self.limit,
                class: words,
                classified: state.classified.clone(),
            };
        }
        state.classified.push(l.id);
        if let Some(input) = input {
            state.inputs.insert(input, (l.id, true));
        }
        Decision::Classify
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(id: u64, global: u64, input: &str, scalar: &str) -> LaunchRecord {
        let json = serde_json::json!({
            "id": id, "kernel": "k", "program": "p", "api": "nd_range", "work_dim": 1,
            "global_size": [global], "local_size": [16],
            "args": [
                {"kind": "buffer", "index": 0, "name": "out", "mem": 1, "flags": 1, "size": 64,
                 "before": {"kind": "blob", "hash": "zeros", "size": 64},
                 "after": {"kind": "blob", "hash": "x", "size": 64}},
                {"kind": "buffer", "index": 1, "name": "in", "mem": 2, "flags": 4, "size": 64,
                 "before": {"kind": "blob", "hash": input, "size": 64},
                 "after": {"kind": "blob", "hash": input, "size": 64}},
                {"kind": "scalar", "index": 2, "name": "n", "bytes": scalar}
            ],
            "device": {"name": "d", "vendor": "v", "version": "1", "driver_version": "1",
                       "platform": "p"},
            "status": 0
        });
        serde_json::from_value(json).expect("a launch record")
    }

    #[test]
    fn equal_inputs_are_classified_once_and_new_ones_up_to_the_limit() {
        let mut one = Limiter::new(1);
        assert_eq!(one.decide(&launch(0, 64, "a", "40")), Decision::Classify);
        assert_eq!(one.decide(&launch(1, 64, "a", "40")), Decision::SameAs(0));
        // Another input of the same class: past the limit of one, twice.
        for id in [2, 3] {
            match one.decide(&launch(id, 64, "b", "40")) {
                Decision::OverLimit {
                    limit: 1,
                    class,
                    classified,
                } => {
                    assert_eq!(class, "k with global 64, local 16");
                    assert_eq!(classified, [0]);
                }
                d => panic!("{d:?}"),
            }
        }
        // Another global size is another class; another scalar another input.
        assert_eq!(one.decide(&launch(4, 128, "a", "40")), Decision::Classify);
        let mut two = Limiter::new(2);
        assert_eq!(two.decide(&launch(0, 64, "a", "40")), Decision::Classify);
        assert_eq!(two.decide(&launch(1, 64, "a", "41")), Decision::Classify);
        assert_eq!(two.decide(&launch(2, 64, "a", "41")), Decision::SameAs(1));
    }
}
