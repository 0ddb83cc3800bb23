//! A `cltrap` process whose kernels run on a GPU keeps freed memory mapped
//! (`cltrap_analyzer::heap`): launch after launch, the buffers of the same sizes reuse pages
//! already faulted in instead of mapping, faulting and zeroing them anew. On PoCL, whose
//! kernels run in the process, the allocator keeps glibc's defaults unless the test knob
//! asks otherwise. Counted in page faults of `cltrap check`'s processes (its workers
//! included), not timed. Its own test binary: the count is over all children of this
//! process.

mod common;
use common::*;

/// Minor page faults of this process's waited-for children so far.
fn child_faults() -> i64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut u);
        u.ru_minflt
    }
}

#[test]
fn launches_of_one_size_reuse_the_pages_of_the_launch_before() {
    const N: usize = 256 * 1024; // 1 MiB per buffer, three buffers
    const LAUNCHES: u64 = 30;
    let mut f = {
        let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
        Fixture::new("heap-faults")
    };
    for k in 0..LAUNCHES {
        let a: Vec<f32> = (0..N).map(|i| (i as u64 + k) as f32).collect();
        f.launch(
            "race_free.cl",
            "vadd",
            &[N as u64],
            Some(&[256]),
            None,
            vec![
                A::Buf("a", "float*", f32s(&a)),
                A::Buf("b", "float*", f32s(&a)),
                A::Buf("c", "float*", f32s(&vec![0.0; N])),
                A::Val("n", "uint", (N as u32).to_le_bytes().to_vec()),
            ],
        );
    }
    let dir = f.dir.clone();
    drop(f);
    let d = dir.to_str().unwrap();
    let check = |ids: &str, env: &[(&str, &str)]| {
        let before = child_faults();
        let (code, out, err) = cltrap(&["check", d, ids, "--json"], env);
        assert_eq!(code, 0, "{out}\n{err}");
        child_faults() - before
    };
    // A first check builds the kernels into PoCL's cache (cold on a fresh machine: the
    // compiler's own faults would count against the first measured run only).
    let extra = |env: &[(&str, &str)]| {
        check("0", env);
        check(&format!("0-{}", LAUNCHES - 1), env) - check("0", env)
    };
    // Three 1 MiB buffers are 768 pages; restored, run and read back, each launch touches
    // them several times. Mapped anew at every launch, the 29 extra launches fault in
    // 29 x 768 x 3 pages at least; reused, a small part of that.
    let bound = (LAUNCHES as i64 - 1) * 3 * (N * 4 / 4096) as i64;
    let kept = extra(&[(cltrap_analyzer::heap::TEST_KNOB, "1")]);
    assert!(
        kept < bound,
        "{kept} page faults for {} more launches",
        LAUNCHES - 1
    );
    // PoCL's kernels run in the process: by default its allocator is left as it was.
    let default = extra(&[]);
    assert!(
        default >= bound,
        "{default} page faults: the settings were applied on PoCL"
    );
}
