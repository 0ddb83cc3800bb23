//! The resident launch of reduced fuzzing (`executor::resident`) on the real PoCL runtime:
//! what each run's kernel sees is the named version plus that run's patches, whatever the
//! previous runs patched or the kernel wrote.

use cltrap_analyzer::executor::{
    Content, Define, MemState, Patch, ResidentLayout, ResidentRun, Session, SlotLayout, ValueArg,
};

const SOURCE: &str = "
__kernel void bump(__global int *acc, __global const int *in, int step, __global int *probe) {
    size_t g = get_global_id(0);
    int v = acc[g];
    acc[g] = v + step;
    if (g == 0) { probe[0] = v; probe[1] = in[0]; probe[2] = in[1]; }
}";

fn layout(restore: bool) -> ResidentLayout {
    ResidentLayout {
        kernel: "bump".into(),
        args: vec![
            SlotLayout::Buffer {
                size: 64 * 4,
                flags: opencl_sys::CL_MEM_READ_WRITE,
                restore,
            },
            SlotLayout::Buffer {
                size: 64 * 4,
                flags: opencl_sys::CL_MEM_READ_ONLY,
                restore: false,
            },
            SlotLayout::Value,
        ],
    }
}

fn ints(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// One run: version 1 of both buffers (defined at the first run), `in` patched as given.
fn run(first: bool, in_patches: Vec<Patch>) -> ResidentRun {
    let define = if first {
        vec![
            Define {
                arg: 0,
                version: 1,
                content: Content::Inline(ints(&[10; 64])),
            },
            Define {
                arg: 1,
                version: 1,
                content: Content::Inline(ints(&(0..64).collect::<Vec<_>>())),
            },
        ]
    } else {
        vec![]
    };
    ResidentRun {
        work_dim: 1,
        global_offset: None,
        global_size: vec![64],
        local_size: Some(vec![16]),
        values: vec![(2, ValueArg::Scalar(ints(&[1])))],
        define,
        evict: vec![],
        mems: vec![
            MemState {
                arg: 0,
                version: 1,
                patches: vec![],
            },
            MemState {
                arg: 1,
                version: 1,
                patches: in_patches,
            },
        ],
        extras: vec![ints(&[0, 0, 0])],
        read_back: 12,
    }
}

fn probe(out: &[u8]) -> Vec<i32> {
    out.chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn every_run_sees_its_version_plus_its_own_patches() {
    let session = Session::open(&Default::default()).expect("a PoCL device");
    let built = session.build_source(SOURCE, "").expect("builds");
    let mut r = session
        .resident(&built, &layout(true))
        .expect("resident launch");
    let patch = |at: u64, v: i32| Patch {
        offset: at * 4,
        bytes: ints(&[v]),
    };
    let mut seen = Vec::new();
    for (i, patches) in [
        vec![],
        vec![patch(0, 500)],
        vec![],
        vec![patch(1, 7)],
        vec![],
    ]
    .into_iter()
    .enumerate()
    {
        let (out, breaches) = session
            .run_resident(&mut r, &run(i == 0, patches))
            .expect("runs");
        assert!(breaches.is_empty());
        seen.push(probe(&out));
    }
    // `acc` (read and written) is restored before every run: the kernel always reads 10.
    // `in` (read only) holds each run's own patch, and the previous run's is undone.
    assert_eq!(
        seen,
        vec![
            vec![10, 0, 1],
            vec![10, 500, 1],
            vec![10, 0, 1],
            vec![10, 0, 7],
            vec![10, 0, 1],
        ]
    );
    // Without the restore (what a buffer the model shows only read gets), the kernel's own
    // writes would be seen by the next run: the restore is what keeps runs independent.
    let mut plain = session
        .resident(&built, &layout(false))
        .expect("resident launch");
    let firsts: Vec<i32> = (0..3)
        .map(|i| {
            probe(
                &session
                    .run_resident(&mut plain, &run(i == 0, vec![]))
                    .unwrap()
                    .0,
            )[0]
        })
        .collect();
    assert_eq!(firsts, vec![10, 11, 12]);
}
