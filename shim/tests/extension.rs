//! Extension entry points looked up with `clGetExtensionFunctionAddressForPlatform` go
//! through the shim like the exported ones, through either door, and answer as natively
//! (PoCL: `clCreateProgramWithILKHR` exists and refuses this IL; unknown names stay NULL).

mod swap_support;
use swap_support::{build, shim, tmp};

use std::process::Command;

fn run(door: Option<&str>) -> String {
    let app = build("ext", &[]);
    let mut c = Command::new(&app);
    c.env_remove("OPENCL_LAYERS").env_remove("LD_PRELOAD");
    if let Some(var) = door {
        c.env(var, shim()).env("CLTRAP_DIR", tmp("ext"));
    }
    let out = c.output().expect("ext runs");
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8")
}

#[test]
fn extension_functions_come_from_the_shim_and_answer_as_natively() {
    let native = run(None);
    assert!(
        native.contains("clCreateProgramWithILKHR found=1"),
        "{native}"
    );
    assert!(native.contains("via_shim=0"), "{native}");
    for door in ["LD_PRELOAD", "OPENCL_LAYERS"] {
        let shimmed = run(Some(door));
        assert!(shimmed.contains("via_shim=1"), "{door}: {shimmed}");
        assert_eq!(
            shimmed.replace("via_shim=1", "via_shim=0"),
            native,
            "{door}: the application must see the same answers"
        );
    }
}
