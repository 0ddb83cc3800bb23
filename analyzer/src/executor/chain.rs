//! Device-resident restore between consecutive launches of an in-order replay.
//!
//! Why: replaying a long capture in order, a launch's input is usually exactly the previous
//! launch's output, already on the device and already found equal to its recorded content.
//! Uploading those bytes again from host memory (what [`Session::run`] does for every
//! buffer) is a whole-buffer host-to-device copy per launch, most of a replay's cost on a
//! GPU. A [`Chain`] keeps the buffer objects of the last launch run through it whose
//! outputs were verified ([`Chain::keep`]), keyed by the content they hold, and the next
//! launch binds each one to the argument whose recorded pre-launch content has that key
//! (same size and kernel-access flags) instead of creating and uploading a new object
//! ([`Chain::run`]).
//!
//! What keeps the verdicts identical to a replay that uploads everything:
//! - only outputs whose bytes were read back after their run and found equal to their
//!   recorded content ([`super::Deriver::verify`]) are kept, so a bound object holds exactly
//!   the bytes the capture restores (the launch's host copy of them still comes from the
//!   capture or the host cache, and is what its comparisons use);
//! - only the last run's objects are kept: every object not bound by the next launch is
//!   released after it, so nothing a later kernel could have scribbled on (a stray write on
//!   a GPU) is ever bound;
//! - a run that fails, a launch with stand-in buffers (run twice), or a launch whose inputs
//!   were derived by re-executing other launches on the device clears the chain
//!   ([`Chain::clear`]): the next launch restores from the capture, as without a chain.
//!
//! Outputs are still read back whole: a capture names stored contents by their blake3 digest,
//! which is computed on the host. The launch's host allocations are reused for its
//! successor's read-backs ([`Chain::recycle`]), so a long replay faults in no fresh pages.

use super::cl::Mem;
use super::derive::{content_key, Key};
use super::run::access_flags;
use super::{BuiltProgram, ExecError, InputArg, LaunchInput, RunOutput, Session};
use cltrap_capture::{ArgRecord, Content, LaunchRecord};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Smallest allocation worth recycling ([`Chain::recycle`]): smaller ones cost little to
/// map afresh.
const SPARE_MIN: usize = 64 << 10;

/// A buffer object held between runs: its object, kernel-access flags and size.
struct Held {
    mem: Mem,
    flags: u64,
    size: usize,
}

/// How a replay's buffer inputs reached the device: for `--timing` reports and for tests
/// that the resident path is taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Traffic {
    /// Buffer inputs bound to an object already on the device (not uploaded).
    pub bound: u64,
    /// Their bytes: what was not uploaded.
    pub bound_bytes: u64,
    /// Buffer inputs created and uploaded from the host.
    pub uploaded: u64,
    /// Their bytes.
    pub uploaded_bytes: u64,
}

impl Traffic {
    /// The traffic of `self` since `earlier` (a snapshot of the same counters).
    pub fn since(&self, earlier: &Traffic) -> Traffic {
        Traffic {
            bound: self.bound.saturating_sub(earlier.bound),
            bound_bytes: self.bound_bytes.saturating_sub(earlier.bound_bytes),
            uploaded: self.uploaded.saturating_sub(earlier.uploaded),
            uploaded_bytes: self.uploaded_bytes.saturating_sub(earlier.uploaded_bytes),
        }
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &Traffic) {
        self.bound += other.bound;
        self.bound_bytes += other.bound_bytes;
        self.uploaded += other.uploaded;
        self.uploaded_bytes += other.uploaded_bytes;
    }
}

/// The verified output buffers of the last launch run, on the device, by content.
#[derive(Default)]
pub struct Chain {
    held: HashMap<Key, Held>,
    /// Allocations of the last launch's inputs, for its successor's read-backs.
    spare: Vec<Vec<u8>>,
    /// How the buffer inputs of the launches run through the chain reached the device.
    pub traffic: Traffic,
}

/// The recorded contents before (`true`) or after a buffer argument, if it is one.
fn content(l: &LaunchRecord, i: usize, before: bool) -> Option<&Content> {
    match l.args.get(i)? {
        ArgRecord::Buffer {
            before: b,
            after: a,
            ..
        } => Some(if before { b } else { a }),
        _ => None,
    }
}

impl Chain {
    /// An empty chain: the first launch uploads everything.
    pub fn new() -> Chain {
        Chain::default()
    }

    /// Releases every held object: the next launch restores its inputs from the host.
    pub fn clear(&mut self) {
        self.held.clear();
    }

    /// Runs `input` (launch `l`) on `session`, binding the held objects whose contents its
    /// buffers start from. Every held object not bound is released; on an error the chain
    /// is left empty. Returns the run's outputs and its buffer objects (see
    /// [`Session::run_bound`]) for [`Chain::keep`]. An output the record holds nothing of
    /// (neither bytes nor digest) is not read back: nothing would compare or keep it.
    pub fn run(
        &mut self,
        session: &Session,
        program: &BuiltProgram,
        l: &LaunchRecord,
        input: &LaunchInput,
    ) -> Result<(RunOutput, Vec<Option<Mem>>), ExecError> {
        let mut held = std::mem::take(&mut self.held);
        let (mut bound, mut bound_bytes, mut uploaded, mut uploaded_bytes) = (0, 0, 0, 0);
        let mut bind = |i: usize, a: &InputArg| {
            let InputArg::Buffer { flags, bytes, .. } = a else {
                return None;
            };
            let found = content(l, i, true)
                .and_then(content_key)
                .filter(|k| {
                    held.get(k).is_some_and(|h| {
                        h.flags == access_flags(*flags) && h.size == bytes.len()
                    })
                })
                .and_then(|k| held.remove(&k));
            match found {
                Some(h) => {
                    bound += 1;
                    bound_bytes += bytes.len() as u64;
                    Some(h.mem)
                }
                None => {
                    uploaded += 1;
                    uploaded_bytes += bytes.len() as u64;
                    None
                }
            }
        };
        let read = |i: usize| !matches!(content(l, i, false), Some(Content::Missing { .. }));
        let run = session.run_bound(program, input, &mut bind, &read, &mut self.spare);
        drop(held);
        self.traffic.add(&Traffic {
            bound,
            bound_bytes,
            uploaded,
            uploaded_bytes,
        });
        run
    }

    /// Takes back the allocations of `input`'s buffers (a launch done with), so the next
    /// run reads its outputs into memory already mapped instead of faulting in fresh pages.
    pub fn recycle(&mut self, input: LaunchInput) {
        self.spare.clear();
        for a in input.args {
            if let InputArg::Buffer { bytes, .. } = a {
                if bytes.capacity() >= SPARE_MIN {
                    self.spare.push(bytes);
                }
            }
        }
    }

    /// Keeps, for the next launch, the objects of `l`'s run whose outputs `verified` says
    /// equal their recorded contents (everything else is released).
    pub fn keep(
        &mut self,
        l: &LaunchRecord,
        input: &LaunchInput,
        objects: Vec<Option<Mem>>,
        verified: &[bool],
    ) {
        self.held.clear();
        for (i, mem) in objects.into_iter().enumerate() {
            let (Some(mem), true) = (mem, verified.get(i).copied().unwrap_or(false)) else {
                continue;
            };
            let (Some(key), Some(InputArg::Buffer { flags, bytes, .. })) = (
                content(l, i, false).and_then(content_key),
                input.args.get(i),
            ) else {
                continue;
            };
            self.held.insert(
                key,
                Held {
                    mem,
                    flags: access_flags(*flags),
                    size: bytes.len(),
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{DeviceSelector, InputArg, LaunchInput, Session};
    use opencl_sys::CL_MEM_READ_WRITE;

    fn add_one(bytes: Vec<u8>) -> LaunchInput {
        LaunchInput {
            kernel: "add_one".into(),
            work_dim: 1,
            global_offset: None,
            global_size: vec![4],
            local_size: None,
            args: vec![InputArg::Buffer {
                mem: None,
                flags: CL_MEM_READ_WRITE,
                bytes,
            }],
            stand_ins: Vec::new(),
        }
    }

    fn ints(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn a_bound_buffer_is_run_on_as_it_is_on_the_device_and_unread_outputs_stay_there() {
        let Ok(session) = Session::open(&DeviceSelector::default()) else {
            return;
        };
        let program = session
            .build_source(
                "__kernel void add_one(__global int* a) { a[get_global_id(0)] += 1; }",
                "",
            )
            .expect("builds");
        let mut spare = Vec::new();
        let (out, mut kept) = session
            .run_bound(&program, &add_one(ints(&[1, 2, 3, 4])), &mut |_, _| None, &|_| true, &mut spare)
            .expect("runs");
        assert_eq!(out.outputs[0].as_deref(), Some(&ints(&[2, 3, 4, 5])[..]));
        let object = kept[0].take().expect("the buffer object is handed back");
        // The host bytes say zeros; the bound object holds 2..5 and is what the kernel sees.
        let mut object = Some(object);
        let (out, mut kept) = session
            .run_bound(
                &program,
                &add_one(ints(&[0, 0, 0, 0])),
                &mut |i, _| if i == 0 { object.take() } else { None },
                &|_| false,
                &mut spare,
            )
            .expect("runs");
        assert!(object.is_none(), "the object was bound");
        assert_eq!(out.outputs[0], None, "not read back");
        let (out, _) = session
            .run_bound(
                &program,
                &add_one(ints(&[0, 0, 0, 0])),
                &mut |_, _| kept[0].take(),
                &|_| true,
                &mut spare,
            )
            .expect("runs");
        assert_eq!(out.outputs[0].as_deref(), Some(&ints(&[4, 5, 6, 7])[..]));
    }
}
