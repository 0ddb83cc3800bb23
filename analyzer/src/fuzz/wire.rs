//! The worker protocol: one JSON request per line on the worker's stdin, one JSON reply per
//! line on its stdout. Byte contents travel as hex (test cases are small).

use crate::executor::{GuardBreach, InputArg, LaunchInput, ResidentLayout, ResidentRun};
use crate::values::{hex, unhex};
use cltrap_capture::ImageRecord;
use serde::{Deserialize, Serialize};

/// A request to the worker.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// Build this program (once).
    Build {
        /// OpenCL C source.
        source: String,
        /// Build options.
        options: String,
    },
    /// Run one case.
    Run(WireInput),
    /// Run one case without guard zones, the way `cltrap cover` and `cltrap replay` run a
    /// launch: the check that a kept case reproduces where its suite is used.
    RunPlain(WireInput),
    /// Run one case on the launch the worker keeps (made for `layout` at its first such
    /// request): only versions, patches and values travel (see `executor::resident`).
    Resident {
        /// The memory objects.
        layout: ResidentLayout,
        /// The run.
        run: ResidentRun,
    },
}

/// The worker's answer.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// The program is built.
    Built,
    /// Outputs (hex) per argument, extras included, and the writes out of bounds the guard
    /// zones caught.
    Ran(Vec<Option<String>>, Vec<GuardBreach>),
    /// The kernel failed on the device.
    Failed(String),
    /// Anything else went wrong.
    Error(String),
}

/// One argument on the wire.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireArg {
    /// By value.
    Scalar(String),
    /// `__local` bytes.
    Local(u64),
    /// NULL buffer.
    Null,
    /// A buffer.
    Buffer {
        /// Aliasing id.
        mem: Option<u64>,
        /// Flags.
        flags: u64,
        /// Contents (hex).
        bytes: String,
    },
    /// A sub-buffer.
    SubBuffer {
        /// Aliasing id.
        mem: Option<u64>,
        /// Parent id.
        parent: u64,
        /// Offset.
        origin: u64,
        /// Size.
        size: u64,
        /// Flags.
        flags: u64,
    },
    /// An image.
    Image {
        /// Aliasing id.
        mem: Option<u64>,
        /// Flags.
        flags: u64,
        /// Format and size.
        image: ImageRecord,
        /// Pixels (hex).
        bytes: String,
    },
    /// A sampler.
    Sampler {
        /// Normalised coordinates.
        normalized_coords: bool,
        /// Addressing mode.
        addressing_mode: u32,
        /// Filter mode.
        filter_mode: u32,
    },
}

/// A launch on the wire.
#[derive(Debug, Serialize, Deserialize)]
pub struct WireInput {
    kernel: String,
    work_dim: u32,
    global_offset: Option<Vec<u64>>,
    global_size: Vec<u64>,
    local_size: Option<Vec<u64>>,
    args: Vec<WireArg>,
    extras: Vec<WireArg>,
}

fn to_wire(a: &InputArg) -> WireArg {
    match a {
        InputArg::Scalar(b) => WireArg::Scalar(hex(b)),
        InputArg::Local(n) => WireArg::Local(*n),
        InputArg::NullBuffer => WireArg::Null,
        InputArg::Buffer { mem, flags, bytes } => WireArg::Buffer {
            mem: *mem,
            flags: *flags,
            bytes: hex(bytes),
        },
        InputArg::SubBuffer {
            mem,
            parent,
            origin,
            size,
            flags,
        } => WireArg::SubBuffer {
            mem: *mem,
            parent: *parent,
            origin: *origin,
            size: *size,
            flags: *flags,
        },
        InputArg::Image {
            mem,
            flags,
            image,
            bytes,
        } => WireArg::Image {
            mem: *mem,
            flags: *flags,
            image: image.clone(),
            bytes: hex(bytes),
        },
        InputArg::Sampler {
            normalized_coords,
            addressing_mode,
            filter_mode,
        } => WireArg::Sampler {
            normalized_coords: *normalized_coords,
            addressing_mode: *addressing_mode,
            filter_mode: *filter_mode,
        },
    }
}

fn from_wire(a: WireArg) -> Result<InputArg, String> {
    let bytes = |s: &str| unhex(s).ok_or_else(|| "bad hex".to_string());
    Ok(match a {
        WireArg::Scalar(s) => InputArg::Scalar(bytes(&s)?),
        WireArg::Local(n) => InputArg::Local(n),
        WireArg::Null => InputArg::NullBuffer,
        WireArg::Buffer {
            mem,
            flags,
            bytes: b,
        } => InputArg::Buffer {
            mem,
            flags,
            bytes: bytes(&b)?,
        },
        WireArg::SubBuffer {
            mem,
            parent,
            origin,
            size,
            flags,
        } => InputArg::SubBuffer {
            mem,
            parent,
            origin,
            size,
            flags,
        },
        WireArg::Image {
            mem,
            flags,
            image,
            bytes: b,
        } => InputArg::Image {
            mem,
            flags,
            image,
            bytes: bytes(&b)?,
        },
        WireArg::Sampler {
            normalized_coords,
            addressing_mode,
            filter_mode,
        } => InputArg::Sampler {
            normalized_coords,
            addressing_mode,
            filter_mode,
        },
    })
}

impl WireInput {
    /// The wire form of a launch plus its extra arguments.
    pub fn from_input(i: &LaunchInput, extras: &[InputArg]) -> WireInput {
        WireInput {
            kernel: i.kernel.clone(),
            work_dim: i.work_dim,
            global_offset: i.global_offset.clone(),
            global_size: i.global_size.clone(),
            local_size: i.local_size.clone(),
            args: i.args.iter().map(to_wire).collect(),
            extras: extras.iter().map(to_wire).collect(),
        }
    }

    /// Back to a launch and its extras.
    pub fn to_input(self) -> Result<(LaunchInput, Vec<InputArg>), String> {
        let args = self
            .args
            .into_iter()
            .map(from_wire)
            .collect::<Result<_, _>>()?;
        let extras = self
            .extras
            .into_iter()
            .map(from_wire)
            .collect::<Result<_, _>>()?;
        Ok((
            LaunchInput {
                kernel: self.kernel,
                work_dim: self.work_dim,
                global_offset: self.global_offset,
                global_size: self.global_size,
                local_size: self.local_size,
                args,
                stand_ins: Vec::new(),
            },
            extras,
        ))
    }
}

/// Outputs to hex.
pub fn encode_outputs(o: &[Option<Vec<u8>>]) -> Vec<Option<String>> {
    o.iter().map(|b| b.as_deref().map(hex)).collect()
}

/// Outputs from hex (an undecodable one becomes `None`).
pub fn decode_outputs(o: &[Option<String>]) -> Vec<Option<Vec<u8>>> {
    o.iter().map(|s| s.as_deref().and_then(unhex)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        let input = LaunchInput {
            kernel: "k".into(),
            work_dim: 2,
            global_offset: Some(vec![1, 1]),
            global_size: vec![8, 4],
            local_size: None,
            args: vec![
                InputArg::Scalar(vec![1, 2, 3]),
                InputArg::Local(64),
                InputArg::NullBuffer,
                InputArg::Buffer {
                    mem: Some(3),
                    flags: 1,
                    bytes: (0..=255).collect(),
                },
            ],
            stand_ins: vec![],
        };
        let extras = vec![InputArg::Buffer {
            mem: None,
            flags: 1,
            bytes: vec![0xff; 8],
        }];
        let text = serde_json::to_string(&WireInput::from_input(&input, &extras)).unwrap();
        let back: WireInput = serde_json::from_str(&text).unwrap();
        let (i2, e2) = back.to_input().unwrap();
        assert_eq!((i2, e2), (input, extras));
        assert_eq!(unhex(&hex(&[0, 0xab, 0xff])), Some(vec![0, 0xab, 0xff]));
        assert_eq!(unhex("0xabc"), None);
    }
}
