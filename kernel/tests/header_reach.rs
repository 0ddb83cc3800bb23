//! Passes rewrite only what a kernel can run: a function defined in an included header that no
//! kernel calls is left as written (so the schedule permutation and the coverage pass do not
//! refuse the whole program, at "0:0", over code no kernel runs), and a header function a
//! kernel does reach is refused at the main-file call that reaches it. Built and run on PoCL:
//! the rewritten programs give the original outputs.

mod common;
use common::{buffer, bytes_of, kernels_dir, launch, session, to_words, words, DEVICE};

use cltrap_kernel::coverage::{instrument_coverage, CoverageOptions};
use cltrap_kernel::parse_program;
use cltrap_kernel::permute::{identity_permutation, permute_schedule, random_permutation};

fn options() -> String {
    format!("-I {}/reach", kernels_dir())
}

fn source(name: &str) -> String {
    common::fixture(&format!("reach/{name}"))
}

#[test]
fn an_unused_header_function_does_not_stop_permutation_or_coverage() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let src = source("uses_header.cl");
    let opts = options();
    let program = parse_program(&src, &opts).expect("parses");
    let s = session();
    let t: Vec<f32> = (0..16).map(|i| i as f32 * 0.5).collect();
    let tb: Vec<u8> = t.iter().flat_map(|v| v.to_le_bytes()).collect();
    let input = launch(
        "step",
        &[16],
        Some(&[4]),
        None,
        vec![buffer(bytes_of(&[0; 16])), buffer(tb)],
    );
    let plain = s.build_source(&src, &opts).expect("original builds");
    let want = s.run(&plain, &input, &[]).expect("original runs").outputs[0].clone();

    let perm = permute_schedule(&program).expect("permutes despite the unused header function");
    assert!(
        !perm.map.helpers.contains(&"diffuse_pde".to_string()),
        "{:?}",
        perm.map
    );
    // The unused main-file helper asking for ids is rewritten like any other.
    assert!(perm.map.helpers.contains(&"unused_main".to_string()));
    let built = s
        .build_source(&perm.source, &opts)
        .unwrap_or_else(|e| panic!("{e}\n{}", perm.source));
    for table in [
        identity_permutation(&[16], &[4]),
        random_permutation(&[16], &[4], 7),
    ] {
        let out = s
            .run(&built, &input, &[buffer(words(&table))])
            .expect("permuted runs");
        assert_eq!(out.outputs[0], want, "under {table:?}");
    }

    let cov = instrument_coverage(&program, CoverageOptions::default())
        .expect("instruments despite the unused header function");
    let k = &cov.map.kernels[0];
    assert_eq!(k.functions, ["step", "twice"]);
    let built = s
        .build_source(&cov.source, &opts)
        .unwrap_or_else(|e| panic!("{e}\n{}", cov.source));
    let counters = cov.map.initial_buffer(&[16], Some(&[4]));
    let out = s
        .run(&built, &input, &[buffer(words(&counters))])
        .expect("instrumented runs");
    assert_eq!(out.outputs[0], want);
    let counters = to_words(out.outputs[2].as_deref().expect("counters"));
    let r = cov
        .map
        .evaluate("step", &counters, &[16])
        .expect("evaluates");
    assert_eq!(r.branches, (2, 2), "{r:?}");
}

#[test]
fn a_header_function_a_kernel_reaches_is_refused_at_the_call_that_reaches_it() {
    let src = source("calls_header.cl");
    let program = parse_program(&src, &options()).expect("parses");
    let err = permute_schedule(&program)
        .expect_err("diffuse_pde would need the table")
        .to_string();
    assert!(
        err.starts_with("4:12: cannot handle function `diffuse_pde` defined in an included header (reached from `smooth` through this call)"),
        "{err}"
    );
    assert!(!err.contains("0:0"), "{err}");
}
