//! Writes the race and coverage fixture captures into `$CLTRAP_FIXTURES_OUT` (one capture
//! directory per kernel), to carry them to another machine (a GPU box) and run
//! `cltrap replay --schedules` / `cltrap cover` there. Ignored by default:
//! `CLTRAP_FIXTURES_OUT=DIR cargo test -p cltrap --test device_fixtures -- --ignored`.

mod common;
use common::*;

#[test]
#[ignore]
fn write_fixture_captures() {
    let Ok(out) = std::env::var("CLTRAP_FIXTURES_OUT") else {
        return;
    };
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let out = std::path::PathBuf::from(out);
    std::fs::create_dir_all(&out).unwrap();
    let keep = |f: Fixture, name: &str| {
        let to = out.join(name);
        let _ = std::fs::remove_dir_all(&to);
        std::fs::rename(&f.dir, &to)
            .or_else(|_| {
                std::process::Command::new("cp")
                    .arg("-r")
                    .arg(&f.dir)
                    .arg(&to)
                    .status()
                    .map(|_| ())
            })
            .unwrap();
    };

    let mut f = Fixture::new("dev-stencil");
    let a: Vec<i32> = (0..4096).map(|i| (i * 37 % 11) - 5).collect();
    f.launch(
        "inter_group.cl",
        "stencil_inplace",
        &[4096],
        Some(&[64]),
        None,
        vec![A::Buf("a", "int*", i32s(&a)), int("n", 4096)],
    );
    keep(f, "stencil");

    let mut f = Fixture::new("dev-lastgroup");
    let input: Vec<u32> = (0..65536).map(|i| i % 17 + 1).collect();
    f.launch(
        "inter_group.cl",
        "reduce_last_group",
        &[65536],
        Some(&[64]),
        None,
        vec![
            A::Buf("in", "uint*", u32s(&input)),
            A::Buf("partial", "uint*", u32s(&[0; 1024])),
            A::Buf("total", "uint*", u32s(&[0])),
            A::Loc("tmp", "uint*", 64 * 4),
        ],
    );
    keep(f, "lastgroup");

    let mut f = Fixture::new("dev-lockstep");
    let input: Vec<u32> = (0..65536).map(|i| i % 13 + 1).collect();
    f.launch(
        "nondeterministic.cl",
        "reduce_lockstep",
        &[65536],
        Some(&[256]),
        None,
        vec![
            A::Buf("in", "uint*", u32s(&input)),
            A::Buf("partial", "uint*", u32s(&[0; 256])),
            A::Loc("tmp", "uint*", 256 * 4),
        ],
    );
    keep(f, "lockstep");

    let mut f = Fixture::new("dev-racefree");
    f.launch_reduce_local(65536, 256);
    f.launch_matmul_tiled(64);
    keep(f, "racefree");

    let mut f = Fixture::new("dev-cover");
    for (n, limit) in [(16, 4), (16, 0), (10, 3)] {
        f.launch(
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
    for k in [4u32, 2] {
        f.launch(
            "coverage.cl",
            "diverge",
            &[8],
            Some(&[4]),
            None,
            vec![A::Buf("out", "uint*", u32s(&[0; 8])), uint("k", k)],
        );
    }
    keep(f, "cover");
}
