//! The native checks' rewrite (`cltrap_kernel::sanitize`) on the `cltrap check` fixture kernels:
//! the user's lines stay where they were, every kernel gets the four extra parameters, each
//! attributable access becomes a site on the user's own line and column, and what the pass
//! cannot attribute is listed instead of guessed. (Running the result: tests/tests/check_native.rs.)

use cltrap_kernel::parse_program;
use cltrap_kernel::sanitize::{sanitize, EXTRA_ARGS};

fn fixture() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/kernels/check.cl");
    std::fs::read_to_string(path).expect("tests/kernels/check.cl")
}

#[test]
fn the_users_lines_keep_their_numbers_and_every_kernel_gets_the_extra_arguments() {
    let src = fixture();
    let s = sanitize(&parse_program(&src, "").expect("parses")).expect("sanitizes");
    let body = &s.source[s.source.find("#line 1\n").expect("#line 1") + 8..];
    assert_eq!(body.lines().count(), src.lines().count());
    for (mine, theirs) in body.lines().zip(src.lines()) {
        // Comments and blank lines are untouched; edited lines still start the same way.
        if theirs.trim().is_empty() || theirs.trim_start().starts_with("//") {
            assert_eq!(mine, theirs);
        }
    }
    assert_eq!(s.map.kernels.len(), 18);
    for k in &s.map.kernels {
        let want = if k.name == "local_arg_overrun" { 4 } else { 3 };
        assert_eq!(k.args, want, "{}", k.name);
        assert!(
            body.contains(&format!("__kernel void {}(", k.name)),
            "{}",
            k.name
        );
    }
    // Every kernel, and the one helper reached through a plain call (`put`), gets the report.
    assert_eq!(body.matches("__global uint* __cltrap_rep").count(), 19);
    assert_eq!(EXTRA_ARGS, 4);
}

#[test]
fn accesses_become_sites_on_the_users_columns_and_the_rest_is_listed() {
    let src = fixture();
    let s = sanitize(&parse_program(&src, "").expect("parses")).expect("sanitizes");
    let at = |kernel: &str| -> Vec<(u32, u32, String)> {
        s.map
            .sites
            .iter()
            .filter(|x| x.kernel == kernel)
            .map(|x| (x.line, x.column, x.object.clone()))
            .collect()
    };
    // `out[g + 1] = in[g + 1];` on line 40: the store at column 5, the load at 18.
    assert_eq!(
        at("off_by_one"),
        vec![(40, 5, "out".to_string()), (40, 18, "in".to_string())]
    );
    // A private pointer into `out` is checked against `out`.
    assert_eq!(
        at("pointer_overrun"),
        vec![(98, 5, "out".to_string()), (98, 12, "in".to_string())]
    );
    // The `__local` array of local_race: its store on line 10, its load on line 12.
    assert!(at("local_race").contains(&(10, 5, "tile".to_string())));
    assert!(at("local_race").contains(&(12, 29, "tile".to_string())));
    let k = s
        .map
        .kernels
        .iter()
        .find(|k| k.name == "local_race")
        .expect("local_race");
    assert_eq!(k.statics, vec![("tile".to_string(), Some(64))]);
    assert_eq!(k.no_local_shadow, None);
    // A helper's store is instrumented on the helper's line (the report follows it through
    // the call); the helper called inside a macro is not, and says so. helper_store knows it
    // calls `put`.
    assert!(
        s.map.sites.iter().any(|x| (x.line, x.column) == (94, 53)),
        "{:?}",
        s.map.sites
    );
    assert_eq!(s.map.unchecked.len(), 1, "{:?}", s.map.unchecked);
    assert_eq!(
        (s.map.unchecked[0].line, s.map.unchecked[0].column),
        (144, 60)
    );
    let h = s
        .map
        .kernels
        .iter()
        .find(|k| k.name == "helper_store")
        .expect("helper_store");
    assert_eq!(h.helpers, vec!["put".to_string()]);
}

#[test]
fn a_pointer_the_pass_cannot_attribute_is_not_checked_and_a_barrier_counts_intervals() {
    let src = "__kernel void k(__global int *a, __global int *b, int c) {\n\
               __global int *p = c ? a : b;\n\
               p[0] = 1;\n\
               barrier(CLK_GLOBAL_MEM_FENCE);\n\
               a[1] = 2;\n\
               }\n";
    let s = sanitize(&parse_program(src, "").expect("parses")).expect("sanitizes");
    assert_eq!(s.map.unchecked.len(), 1, "{:?}", s.map.unchecked);
    assert_eq!(s.map.unchecked[0].line, 3);
    assert!(s.map.unchecked[0].why.contains("not known to point into"));
    assert_eq!(s.map.sites.len(), 1);
    assert!(
        s.source.contains(
            "(__cltrap_ep += __CLTRAP_FENCE(CLK_GLOBAL_MEM_FENCE), barrier(CLK_GLOBAL_MEM_FENCE))"
        ),
        "{}",
        s.source
    );
}

/// Image reads and writes have no pointer the rewrite could shadow: each is counted as not
/// checked (with the engine that does check them), so an image kernel is never reported clean.
#[test]
fn image_accesses_are_counted_as_not_checked() {
    let src =
        "__kernel void k(__read_only image2d_t src, __write_only image2d_t dst, sampler_t s) {\n\
               int2 p = (int2)(get_global_id(0), get_global_id(1));\n\
               float4 v = read_imagef(src, s, p);\n\
               write_imagef(dst, p, v * 2.0f);\n\
               }\n";
    let s = sanitize(&parse_program(src, "").expect("parses")).expect("sanitizes");
    let lines: Vec<u32> = s.map.unchecked.iter().map(|u| u.line).collect();
    assert_eq!(lines, vec![3, 4], "{:?}", s.map.unchecked);
    assert!(s
        .map
        .unchecked
        .iter()
        .all(|u| u.why.contains("image access") && u.why.contains("--engine oclgrind")));
}
