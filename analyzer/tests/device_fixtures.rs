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
    f.launch_stencil_inplace(4096, 64);
    keep(f, "stencil");

    let mut f = Fixture::new("dev-lastgroup");
    f.launch_reduce_last_group(65536, 64);
    keep(f, "lastgroup");

    let mut f = Fixture::new("dev-lockstep");
    f.launch_reduce_lockstep(65536, 256);
    keep(f, "lockstep");

    let mut f = Fixture::new("dev-racefree");
    f.launch_reduce_local(65536, 256);
    f.launch_matmul_tiled(64);
    keep(f, "racefree");

    let mut f = Fixture::new("dev-cover");
    for (n, limit) in [(16, 4), (16, 0), (10, 3)] {
        f.launch_known(n, limit);
    }
    for k in [4, 2] {
        f.launch_diverge(k);
    }
    keep(f, "cover");
}
