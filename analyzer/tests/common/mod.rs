//! Captures made programmatically from the kernels in `tests/kernels/`: each launch is run
//! once on the real device (PoCL) to record its post-launch buffers, exactly as the shim would
//! have recorded an application's launch.
#![allow(dead_code)]

use cltrap_analyzer::executor::{DeviceSelector, InputArg, LaunchInput, Session};
use cltrap_capture::*;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// PoCL initialises its devices lazily; tests that open sessions take turns.
pub static DEVICE: Mutex<()> = Mutex::new(());

pub fn kernel_source(file: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/kernels")
        .join(file);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A test's own folder, `<target>/tmp/analysis/<name>-<pid>` (removed first if a run of the
/// same process id left one): inside the build tree, not a name anyone may create in a shared
/// `/tmp` first. Folders of earlier test processes that are no longer running are removed at
/// the first call of each process, so runs do not pile up.
pub fn temp_dir(name: &str) -> PathBuf {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("analysis");
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| {
        for e in std::fs::read_dir(&base).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let gone = name
                .rsplit('-')
                .next()
                .and_then(|pid| pid.parse::<u32>().ok())
                .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
            if gone {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    });
    let d = base.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::create_dir_all(&base);
    d
}

pub fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn from_u32s(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The manifest of a capture a test writes itself (`writer` names the test).
pub fn test_manifest(writer: &str) -> Manifest {
    Manifest {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        writer: writer.into(),
        pid: 0,
        argv: vec![],
        started_unix: 0,
        buffer_mode: "full".into(),
    }
}

/// Stores `bytes` as a blob of the capture and returns the content that refers to it.
pub fn put_blob(blobs: &writer::BlobStore, bytes: &[u8]) -> Content {
    Content::Blob {
        hash: blobs.put(bytes).expect("blob"),
        size: bytes.len() as u64,
    }
}

/// Stores a program built from `source` with `options` on the capturing device; returns the
/// hash a launch record names it by.
pub fn put_source_program(blobs: &writer::BlobStore, source: &str, options: &str) -> Hash {
    let src = blobs.put(source.as_bytes()).expect("blob");
    let rec = ProgramRecord {
        origin: ProgramOrigin::Source { sources: vec![src] },
        options: options.into(),
        devices: vec!["capturing device".into()],
        build_site: None,
        includes: Default::default(),
    };
    blobs
        .put(&serde_json::to_vec(&rec).expect("json"))
        .expect("blob")
}

/// What the capture records about argument `index` of a kernel.
pub fn arg_info(index: u32, name: &str, ty: &str, space: &str) -> ArgInfo {
    ArgInfo {
        index,
        name: name.into(),
        type_name: ty.into(),
        address_space: space.into(),
        qualifiers: Default::default(),
    }
}

/// A successful `clEnqueueNDRangeKernel` launch record on the capturing device, as the shim
/// writes one (the writer assigns the id and sequence number).
pub fn ndrange_record(
    kernel: &str,
    program: Hash,
    global: Vec<u64>,
    offset: Option<Vec<u64>>,
    local: Option<Vec<u64>>,
    args: Vec<ArgRecord>,
) -> LaunchRecord {
    LaunchRecord {
        id: 0,
        seq: 0,
        kernel: kernel.into(),
        program,
        api: LaunchApi::NdRange,
        work_dim: global.len() as u32,
        global_offset: offset,
        global_size: global,
        local_size: local,
        args,
        device: DeviceRecord {
            name: "capturing device".into(),
            ..Default::default()
        },
        queue_properties: 0,
        launch_site: None,
        thread: 1,
        status: 0,
        not_replayable: vec![],
    }
}

/// One argument of a launch to capture.
pub enum A {
    /// A global buffer: name, pointer type (`int*`), initial bytes.
    Buf(&'static str, &'static str, Vec<u8>),
    /// A scalar: name, type, bytes.
    Val(&'static str, &'static str, Vec<u8>),
    /// A `__local` pointer: name, type, size in bytes.
    Loc(&'static str, &'static str, u64),
}

pub fn uint(name: &'static str, v: u32) -> A {
    A::Val(name, "uint", v.to_le_bytes().to_vec())
}

pub fn int(name: &'static str, v: i32) -> A {
    A::Val(name, "int", v.to_le_bytes().to_vec())
}

/// The recorded post-launch contents of each argument (`None` for scalars and `__local`).
pub type Outputs = Vec<Option<Vec<u8>>>;

pub struct Fixture {
    pub dir: PathBuf,
    /// Build options recorded for the programs of the next launches.
    pub options: String,
    /// Record the next launches without running them (their buffers recorded unchanged).
    pub unrun: bool,
    writer: CaptureWriter,
    session: Session,
    next_mem: u64,
}

impl Fixture {
    pub fn new(name: &str) -> Fixture {
        let dir = temp_dir(name);
        let manifest = test_manifest("analyzer analysis test");
        Fixture {
            options: String::new(),
            unrun: false,
            writer: CaptureWriter::create(&dir, &manifest).expect("capture dir"),
            dir,
            session: Session::open(&DeviceSelector::default())
                .expect("an OpenCL device (PoCL) is installed"),
            next_mem: 1,
        }
    }

    /// Captures one launch of `kernel` from `file`: runs it once to record its outputs.
    /// Returns the launch id and the recorded post-launch contents of each buffer argument.
    #[allow(clippy::too_many_arguments)]
    pub fn launch(
        &mut self,
        file: &str,
        kernel: &str,
        global: &[u64],
        local: Option<&[u64]>,
        offset: Option<&[u64]>,
        args: Vec<A>,
    ) -> (u64, Outputs) {
        let source = kernel_source(file);
        let program_hash = put_source_program(&self.writer.blobs, &source, &self.options);
        let input_args: Vec<InputArg> = args
            .iter()
            .map(|a| match a {
                A::Buf(_, _, b) => InputArg::Buffer {
                    mem: None,
                    flags: 1,
                    bytes: b.clone(),
                },
                A::Val(_, _, b) => InputArg::Scalar(b.clone()),
                A::Loc(_, _, n) => InputArg::Local(*n),
            })
            .collect();
        let input = LaunchInput {
            kernel: kernel.into(),
            work_dim: global.len() as u32,
            global_offset: offset.map(<[u64]>::to_vec),
            global_size: global.to_vec(),
            local_size: local.map(<[u64]>::to_vec),
            args: input_args,
            stand_ins: vec![],
        };
        let out = if self.unrun {
            // Recorded as not changing its buffers, without running it (a launch that
            // crashes the device).
            cltrap_analyzer::executor::RunOutput {
                outputs: input
                    .args
                    .iter()
                    .map(|a| match a {
                        InputArg::Buffer { bytes, .. } => Some(bytes.clone()),
                        _ => None,
                    })
                    .collect(),
                kernel_ns: None,
            }
        } else {
            let built = self
                .session
                .build_source(&source, &self.options)
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            self.session
                .run(&built, &input, &[])
                .unwrap_or_else(|e| panic!("{kernel}: {e}"))
        };
        let mut records = Vec::new();
        for (i, a) in args.iter().enumerate() {
            let info = |name: &str, ty: &str, space: &str| arg_info(i as u32, name, ty, space);
            records.push(match a {
                A::Buf(name, ty, before) => {
                    let after = out.outputs[i].clone().expect("buffer read back");
                    self.next_mem += 1;
                    ArgRecord::Buffer {
                        info: info(name, ty, "global"),
                        mem: self.next_mem,
                        flags: 1,
                        size: before.len() as u64,
                        sub_of: None,
                        before: put_blob(&self.writer.blobs, before),
                        after: put_blob(&self.writer.blobs, &after),
                    }
                }
                A::Val(name, ty, bytes) => ArgRecord::Scalar {
                    info: info(name, ty, "private"),
                    bytes: bytes.iter().map(|b| format!("{b:02x}")).collect(),
                },
                A::Loc(name, ty, size) => ArgRecord::Local {
                    info: info(name, ty, "local"),
                    size: *size,
                },
            });
        }
        let id = self
            .writer
            .append(ndrange_record(
                kernel,
                program_hash,
                global.to_vec(),
                offset.map(<[u64]>::to_vec),
                local.map(<[u64]>::to_vec),
                records,
            ))
            .expect("append");
        (id, out.outputs)
    }

    /// Captures `matmul_tiled` (race_free.cl): `m`×`m` matrices in 4×4 work-groups.
    pub fn launch_matmul_tiled(&mut self, m: usize) {
        let am: Vec<f32> = (0..m * m).map(|i| (i % 7) as f32 - 3.0).collect();
        let bm: Vec<f32> = (0..m * m).map(|i| (i % 5) as f32 * 0.5).collect();
        self.launch(
            "race_free.cl",
            "matmul_tiled",
            &[m as u64, m as u64],
            Some(&[4, 4]),
            None,
            vec![
                A::Buf("A", "float*", f32s(&am)),
                A::Buf("B", "float*", f32s(&bm)),
                A::Buf("C", "float*", f32s(&vec![0.0; m * m])),
                int("n", m as i32),
            ],
        );
    }

    /// Captures `stencil_inplace` (inter_group.cl): `n` ints in work-groups of `group`, each
    /// item reading its neighbours' elements that other groups overwrite in place.
    pub fn launch_stencil_inplace(&mut self, n: u32, group: u64) {
        let a: Vec<i32> = (0..n as i32).map(|i| (i * 37 % 11) - 5).collect();
        self.launch(
            "inter_group.cl",
            "stencil_inplace",
            &[n as u64],
            Some(&[group]),
            None,
            vec![A::Buf("a", "int*", i32s(&a)), int("n", n as i32)],
        );
    }

    /// Captures `reduce_last_group` (inter_group.cl): `n` inputs summed per work-group of
    /// `group`, the group that finishes last summing the partial sums into `total`.
    /// Returns the inputs and the recorded outputs.
    pub fn launch_reduce_last_group(&mut self, n: u32, group: u64) -> (Vec<u32>, Outputs) {
        let input: Vec<u32> = (0..n).map(|i| i % 17 + 1).collect();
        let (_, outs) = self.launch(
            "inter_group.cl",
            "reduce_last_group",
            &[n as u64],
            Some(&[group]),
            None,
            vec![
                A::Buf("in", "uint*", u32s(&input)),
                A::Buf(
                    "partial",
                    "uint*",
                    u32s(&vec![0; (n as u64 / group) as usize]),
                ),
                A::Buf("total", "uint*", u32s(&[0])),
                A::Loc("tmp", "uint*", group * 4),
            ],
        );
        (input, outs)
    }

    /// Captures `reduce_lockstep` (nondeterministic.cl): `n` inputs summed per work-group of
    /// `group` without the barriers the reduction needs. Returns the inputs and the recorded
    /// outputs.
    pub fn launch_reduce_lockstep(&mut self, n: u32, group: u64) -> (Vec<u32>, Outputs) {
        let input: Vec<u32> = (0..n).map(|i| i % 13 + 1).collect();
        let (_, outs) = self.launch(
            "nondeterministic.cl",
            "reduce_lockstep",
            &[n as u64],
            Some(&[group]),
            None,
            vec![
                A::Buf("in", "uint*", u32s(&input)),
                A::Buf(
                    "partial",
                    "uint*",
                    u32s(&vec![0; (n as u64 / group) as usize]),
                ),
                A::Loc("tmp", "uint*", group * 4),
            ],
        );
        (input, outs)
    }

    /// Captures `known` (coverage.cl): 16 work-items in groups of 4; items at or past `n`
    /// and groups at or past `limit` return early.
    pub fn launch_known(&mut self, n: u32, limit: u32) {
        self.launch(
            "coverage.cl",
            "known",
            &[16],
            Some(&[4]),
            None,
            vec![
                A::Buf("out", "int*", i32s(&[7; 16])),
                uint("n", n),
                uint("limit", limit),
            ],
        );
    }

    /// Captures `diverge` (coverage.cl): 8 work-items in groups of 4, the first `k` of each
    /// group taking the branch that holds a barrier.
    pub fn launch_diverge(&mut self, k: u32) {
        self.launch(
            "coverage.cl",
            "diverge",
            &[8],
            Some(&[4]),
            None,
            vec![A::Buf("out", "uint*", u32s(&[0; 8])), uint("k", k)],
        );
    }

    /// Captures `hotspot` (hotspot.cl) as Rodinia's hotspot launches it: a `grid`×`grid`
    /// temperature grid in 16×16 tiles, `iteration` steps per launch (the pyramid height).
    pub fn launch_hotspot(&mut self, grid: i32, iteration: i32) {
        let small = 16 - 2 * iteration;
        let blocks = ((grid + small - 1) / small) as u64;
        let n = (grid * grid) as usize;
        let temp: Vec<f32> = (0..n).map(|i| 320.0 + (i % 17) as f32).collect();
        let power: Vec<f32> = (0..n).map(|i| 0.5 + (i % 5) as f32 * 0.1).collect();
        let float = |name: &'static str, v: f32| A::Val(name, "float", v.to_le_bytes().to_vec());
        self.launch(
            "hotspot.cl",
            "hotspot",
            &[blocks * 16, blocks * 16],
            Some(&[16, 16]),
            None,
            vec![
                int("iteration", iteration),
                A::Buf("power", "float*", f32s(&power)),
                A::Buf("temp_src", "float*", f32s(&temp)),
                A::Buf("temp_dst", "float*", f32s(&temp)),
                int("grid_cols", grid),
                int("grid_rows", grid),
                int("border_cols", iteration),
                int("border_rows", iteration),
                float("Cap", 0.5),
                float("Rx", 1.5),
                float("Ry", 1.5),
                float("Rz", 40.0),
                float("step", 0.001),
            ],
        );
    }

    /// Captures `reduce_local` (race_free.cl): `n` inputs summed per work-group of `group`.
    pub fn launch_reduce_local(&mut self, n: u32, group: u64) {
        let input: Vec<u32> = (0..n).map(|i| (i * 7 + 3) % 101).collect();
        self.launch(
            "race_free.cl",
            "reduce_local",
            &[n as u64],
            Some(&[group]),
            None,
            vec![
                A::Buf("in", "uint*", u32s(&input)),
                A::Buf(
                    "partial",
                    "uint*",
                    u32s(&vec![0; (n as u64 / group) as usize]),
                ),
                A::Loc("tmp", "uint*", group * 4),
            ],
        );
    }
}

/// Runs the `cltrap` binary; returns (exit code, stdout, stderr).
pub fn cltrap(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_cltrap"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("cltrap runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `cltrap fuzz` on `source` (written to `dir/k.cl`) with an interface file for `kernel` (64
/// work-items in groups of 16, `args` as the interface's arguments) into `dir/suite`; exits 0.
/// Returns the suite and everything the command printed.
pub fn fuzz_interface(
    dir: &Path,
    kernel: &str,
    source: &str,
    args: serde_json::Value,
    extra: &[&str],
) -> (PathBuf, String) {
    std::fs::create_dir_all(dir).unwrap();
    let k = dir.join("k.cl");
    std::fs::write(&k, source).unwrap();
    let iface = dir.join("k.json");
    let spec = serde_json::json!({
        "kernel": kernel, "global_size": [64], "local_size": [16], "args": args,
    });
    std::fs::write(&iface, serde_json::to_vec_pretty(&spec).unwrap()).unwrap();
    let suite = dir.join("suite");
    let mut all = vec![
        "fuzz",
        k.to_str().unwrap(),
        "--interface",
        iface.to_str().unwrap(),
        "--out",
        suite.to_str().unwrap(),
    ];
    all.extend(extra);
    let (code, out, err) = cltrap(&all, &[]);
    let text = out + &err;
    assert_eq!(code, 0, "{text}");
    (suite, text)
}

/// One argument of an interface file: its name, buffer size (None for a scalar), fill, and
/// whether it is an output.
pub fn iface_arg(
    name: &str,
    size: Option<u64>,
    fill: serde_json::Value,
    output: bool,
) -> serde_json::Value {
    let mut a = serde_json::json!({"name": name, "type": "", "fill": fill, "output": output});
    if let Some(n) = size {
        a["size"] = n.into();
    }
    a
}
