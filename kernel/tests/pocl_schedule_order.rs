//! The permutation table really decides which logical group each physical group runs: with one
//! PoCL thread, physical groups run in order, so a ticket taken by each logical group reveals
//! the inverse of the table. (Its own test binary: the thread count must be set before PoCL
//! starts.)

mod common;
use common::{buffer, fixture, launch, to_words, words};

use cltrap_analyzer::executor::{DeviceSelector, Session};
use cltrap_kernel::parse_program;
use cltrap_kernel::permute::{permute_schedule, random_permutation};

#[test]
fn logical_groups_run_in_the_order_the_table_says() {
    // SAFETY (edition 2021: safe fn): set before any OpenCL call, in this single-test binary.
    std::env::set_var("POCL_MAX_PTHREAD_COUNT", "1");
    let src = fixture("group_order.cl");
    let perm = permute_schedule(&parse_program(&src, "").unwrap()).unwrap();
    let s = Session::open(&DeviceSelector::default()).expect("PoCL");
    let built = s.build_source(&perm.source, "").unwrap();
    let table = random_permutation(&[64], &[4], 42);
    let input = launch(
        "order",
        &[64],
        Some(&[4]),
        None,
        vec![buffer(vec![0; 16 * 4]), buffer(vec![0; 4])],
    );
    let out = s.run(&built, &input, &[buffer(words(&table))]).unwrap();
    let order = to_words(out.outputs[0].as_ref().unwrap());
    let mut inverse = vec![0u32; table.len()];
    for (physical, logical) in table.iter().enumerate() {
        inverse[*logical as usize] = physical as u32;
    }
    assert_ne!(table, (0..16).collect::<Vec<u32>>());
    assert_eq!(order, inverse);
}
