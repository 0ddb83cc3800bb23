//! Instrumented kernels built and run on the real PoCL runtime through the analyzer's
//! executor: coverage counts that are exact with early returns and whole groups returning,
//! barrier divergence with its group, race-free barriers never flagged, and schedule
//! permutations that keep every work-item's ids (identity: bit-exact outputs).

mod common;
use common::{buffer, fixture, launch, session, to_words, words, DEVICE};

use cltrap_analyzer::executor::{InputArg, LaunchInput, Session};
use cltrap_kernel::coverage::{instrument_coverage, CoverageMap, CoverageOptions};
use cltrap_kernel::coverage_result::CoverageResult;
use cltrap_kernel::lcov::to_lcov;
use cltrap_kernel::parse_program;
use cltrap_kernel::permute::{
    check_permutation, identity_permutation, permute_schedule, random_permutation,
};

/// Runs `input` on `source` built with `options`, with `extras` appended; returns every
/// memory argument's words afterwards.
fn run(
    session: &Session,
    source: &str,
    options: &str,
    input: &LaunchInput,
    extras: &[InputArg],
) -> Vec<Option<Vec<u32>>> {
    let program = session
        .build_source(source, options)
        .unwrap_or_else(|e| panic!("{e}\n{source}"));
    let out = session
        .run(&program, input, extras)
        .unwrap_or_else(|e| panic!("{e}"));
    out.outputs
        .into_iter()
        .map(|o| o.map(|b| to_words(&b)))
        .collect()
}

/// Runs the original and the coverage-instrumented kernel; checks the kernel's own outputs are
/// unchanged and returns the evaluated coverage.
fn cover(
    session: &Session,
    file: &str,
    options: &str,
    input: &LaunchInput,
) -> (CoverageMap, CoverageResult) {
    let src = fixture(file);
    let program = parse_program(&src, options).unwrap();
    let ins = instrument_coverage(&program, CoverageOptions::default()).unwrap();
    let plain = run(session, &src, options, input, &[]);
    let counters = ins
        .map
        .initial_buffer(&input.global_size, input.local_size.as_deref());
    let outs = run(
        session,
        &ins.source,
        options,
        input,
        &[buffer(words(&counters))],
    );
    assert_eq!(
        &outs[..plain.len()],
        &plain[..],
        "instrumentation changed the kernel's own results"
    );
    let raw = outs
        .last()
        .cloned()
        .flatten()
        .expect("counter buffer read back");
    let res = ins
        .map
        .evaluate(&input.kernel, &raw, &input.global_size)
        .unwrap();
    (ins.map, res)
}

fn hit_labels(map: &CoverageMap, res: &CoverageResult) -> Vec<String> {
    res.slots
        .iter()
        .filter(|s| s.hit)
        .map(|s| {
            map.slots[(s.index - map.header_slots) as usize]
                .label
                .clone()
        })
        .collect()
}

#[test]
fn coverage_is_exact_when_work_items_return_early_and_from_inside_loops() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let input = launch(
        "early",
        &[8],
        Some(&[4]),
        None,
        vec![
            buffer(vec![0; 32]),
            InputArg::Scalar(6u32.to_le_bytes().to_vec()),
        ],
    );
    let (map, res) = cover(&s, "early_return.cl", "", &input);
    // Every side is reached: items 6, 7 return at once; item 0 runs the loop 0 times, item 1
    // once, items 2..5 more; items 4 and 5 return from inside the loop.
    assert_eq!(
        hit_labels(&map, &res).len(),
        9,
        "{:?}",
        hit_labels(&map, &res)
    );
    assert_eq!((res.branches, res.loop_boundaries), ((6, 6), (3, 3)));

    // n = 4: nobody returns at the top; item 4.. never exist; loop of item 3 runs 3 times.
    let input = launch(
        "early",
        &[4],
        Some(&[2]),
        None,
        vec![
            buffer(vec![0; 16]),
            InputArg::Scalar(4u32.to_le_bytes().to_vec()),
        ],
    );
    let (map, res) = cover(&s, "early_return.cl", "", &input);
    assert_eq!(
        hit_labels(&map, &res),
        [
            "if (i >= n) false",
            "for (j < i) ran 0 times",
            "for (j < i) ran 1 time",
            "for (j < i) ran more than once",
            "for (j < i) true",
            "for (j < i) false",
            "if (j == 3) false",
        ]
    );
    let lcov = to_lcov(&map, &[res], "early n=4", "kernels/early_return.cl");
    let records: Vec<&str> = lcov
        .lines()
        .filter(|l| {
            l.starts_with("BRDA")
                || l.starts_with("BR")
                || l.starts_with("DA")
                || l.starts_with("FN")
        })
        .collect();
    assert_eq!(
        records,
        [
            "FN:4,early",
            "FNDA:1,early",
            "FNF:1",
            "FNH:1",
            "BRDA:6,0,0,0",
            "BRDA:6,0,1,1",
            "BRDA:8,1,0,1",
            "BRDA:8,1,1,1",
            "BRDA:8,1,2,1",
            "BRDA:8,2,0,1",
            "BRDA:8,2,1,1",
            "BRDA:9,3,0,0",
            "BRDA:9,3,1,1",
            "BRF:9",
            "BRH:7",
            "DA:4,1",
            "DA:5,1",
            "DA:6,1",
            "DA:7,1",
            "DA:8,1",
            "DA:9,1",
            "DA:10,1",
            "DA:12,1",
        ]
    );
    assert!(
        lcov.starts_with("TN:early_n_4\nSF:kernels/early_return.cl\n")
            && lcov.ends_with("end_of_record\n")
    );
}

#[test]
fn lcov_has_a_line_record_for_every_statement_counted_by_its_block() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let input = launch(
        "lines",
        &[2],
        Some(&[2]),
        None,
        vec![
            buffer(vec![0; 8]),
            InputArg::Scalar(2i32.to_le_bytes().to_vec()),
        ],
    );
    let (map, res) = cover(&s, "lcov_lines.cl", "", &input);
    let lcov = to_lcov(&map, &[res], "lines", "kernels/lcov_lines.cl");
    let field = |prefix: &str| -> Vec<String> {
        lcov.lines()
            .filter_map(|l| l.strip_prefix(prefix))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(field("FNDA:"), ["1,twice", "0,never", "1,lines"], "{lcov}");
    let da: Vec<(u32, u32)> = field("DA:")
        .iter()
        .map(|d| {
            let (line, count) = d.split_once(',').unwrap();
            (line.parse().unwrap(), count.parse().unwrap())
        })
        .collect();
    let ran: Vec<u32> = da.iter().filter(|(_, c)| *c > 0).map(|(l, _)| *l).collect();
    let not: Vec<u32> = da
        .iter()
        .filter(|(_, c)| *c == 0)
        .map(|(l, _)| *l)
        .collect();
    // Lines of statements, case labels and function names only: no braces or blank lines.
    assert_eq!(
        ran,
        [3, 4, 5, 10, 11, 12, 13, 17, 19, 22, 23, 24, 29, 30, 31],
        "{lcov}"
    );
    assert_eq!(not, [7, 8, 14, 15, 20, 21, 25, 26, 27], "{lcov}");
    // The summary counts are those of the DA records, as genhtml reads them.
    assert_eq!(field("LF:"), [da.len().to_string()]);
    assert_eq!(field("LH:"), [ran.len().to_string()]);
}

#[test]
fn a_goto_out_of_a_loop_still_records_the_loops_iterations() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let input = launch("jump", &[3], Some(&[1]), None, vec![buffer(vec![0; 12])]);
    let (map, res) = cover(&s, "goto_out.cl", "", &input);
    let hit = hit_labels(&map, &res);
    assert_eq!(
        hit,
        [
            "for (j < 10) ran 1 time",
            "for (j < 10) ran more than once",
            "for (j < 10) true",
            "if (j == i) true",
            "if (j == i) false",
        ]
    );
}

#[test]
fn pragma_unrolled_loops_keep_their_results_and_are_counted() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let input = launch(
        "unrolled",
        &[4],
        Some(&[2]),
        None,
        vec![
            buffer(vec![0; 4]),
            InputArg::Scalar(7i32.to_le_bytes().to_vec()),
        ],
    );
    let (map, res) = cover(&s, "unroll.cl", "", &input);
    assert_eq!(
        hit_labels(&map, &res),
        [
            "for (i < n) ran more than once",
            "for (i < n) true",
            "for (i < n) false",
            "for (j < n) ran more than once",
            "for (j < n) true",
            "for (j < n) false",
            "if (j > 2) true",
            "if (j > 2) false",
        ]
    );
}

#[test]
fn loops_with_constant_bounds_have_only_the_boundary_classes_an_input_can_reach() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let input = launch(
        "fixed",
        &[2],
        Some(&[2]),
        None,
        vec![
            buffer(vec![0; 8]),
            InputArg::Scalar(5i32.to_le_bytes().to_vec()),
        ],
    );
    let (map, res) = cover(&s, "constant_loops.cl", "", &input);
    let boundaries: Vec<(String, bool)> = res
        .slots
        .iter()
        .filter(|h| h.kind == cltrap_kernel::coverage::SlotKind::LoopBoundary)
        .map(|h| {
            let label = map.slots[(h.index - map.header_slots) as usize]
                .label
                .clone();
            (label, h.hit)
        })
        .collect();
    let want = [
        ("for (k < 16) ran more than once", true),
        ("for (k < N) ran more than once", true),
        ("for (k < 4) ran more than once", true),
        ("for (k < 1) ran 1 time", true),
        ("for (k < 8) ran 1 time", false),
        ("for (k < 8) ran more than once", true),
        ("for (k < n) ran 0 times", false),
        ("for (k < n) ran 1 time", false),
        ("for (k < n) ran more than once", true),
    ];
    let want: Vec<(String, bool)> = want.iter().map(|(l, h)| (l.to_string(), *h)).collect();
    assert_eq!(boundaries, want);
    assert_eq!(res.loop_boundaries, (6, 9));
}

#[test]
fn coverage_is_exact_when_every_group_returns_at_once() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    for groups in [1u64, 3, 64] {
        let input = launch(
            "early",
            &[groups * 4],
            Some(&[4]),
            None,
            vec![
                buffer(vec![0; 4 * groups as usize * 4]),
                InputArg::Scalar(0u32.to_le_bytes().to_vec()),
            ],
        );
        let (map, res) = cover(&s, "early_return.cl", "", &input);
        assert_eq!(
            hit_labels(&map, &res),
            ["if (i >= n) true"],
            "{groups} groups"
        );
        assert_eq!(res.loop_boundaries, (0, 3));
    }
}

#[test]
fn switch_fallthrough_implicit_default_short_circuits_and_loops_are_counted() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let input = launch(
        "branches",
        &[4],
        Some(&[2]),
        None,
        vec![
            buffer(vec![0; 16]),
            InputArg::Scalar(1i32.to_le_bytes().to_vec()),
        ],
    );
    let (map, res) = cover(&s, "branches.cl", "", &input);
    let mut hit = hit_labels(&map, &res);
    hit.sort();
    let mut want = vec![
        "case 1",
        "case 2",
        "switch (x) no case matched",
        "?: (x > 1) true",
        "?: (x > 1) false",
        "if (x == 0 || x == mode + 2) true",
        "if (x == 0 || x == mode + 2) false",
        "|| operand (x == 0) true",
        "|| operand (x == 0) false",
        "|| operand (x == mode + 2) true",
        "|| operand (x == mode + 2) false",
        "do-while (k < x) ran 1 time",
        "do-while (k < x) ran more than once",
        "do-while (k < x) true",
        "do-while (k < x) false",
        "while (mode > 5) ran 0 times",
        "while (mode > 5) false",
    ];
    want.sort();
    assert_eq!(hit, want);
    let missed: Vec<String> = map
        .slots
        .iter()
        .map(|s| s.label.clone())
        .filter(|l| !hit.contains(l))
        .collect();
    assert_eq!(
        missed,
        [
            "case 5",
            "while (mode > 5) ran 1 time",
            "while (mode > 5) ran more than once",
            "while (mode > 5) true",
        ]
    );
}

#[test]
fn a_barrier_in_a_group_uniform_branch_is_all_or_none_per_group() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let input = launch(
        "branch_barrier",
        &[16],
        Some(&[4]),
        None,
        vec![buffer(vec![0; 64]), InputArg::Local(16)],
    );
    let (map, res) = cover(&s, "barrier_in_branch.cl", "", &input);
    assert_eq!((map.barriers.len(), map.barriers[0].line), (1, 7));
    let b = &res.barriers[0];
    assert_eq!(
        (b.groups_all, b.groups_none, b.divergent.len()),
        (1, 3, 0),
        "{b:?}"
    );
    assert!(b.covered() && !res.overflow);
}

#[test]
fn a_correct_local_reduction_never_shows_divergence() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let n = 64u32;
    let data: Vec<u32> = (0..n).collect();
    let input = launch(
        "reduce",
        &[n as u64],
        Some(&[8]),
        None,
        vec![
            buffer(words(&data)),
            buffer(vec![0; 32]),
            InputArg::Local(8 * 4),
        ],
    );
    let (map, res) = cover(&s, "local_reduce.cl", "", &input);
    assert_eq!(map.barriers.len(), 2);
    for b in &res.barriers {
        assert!(b.divergent.is_empty(), "{b:?}");
        assert_eq!((b.groups_all, b.groups_none), (8, 0));
    }
    // With an unknown (NULL) local size the buffer is sized for the worst case (groups of one
    // work-item) and the kernel itself reports the local size it ran with.
    let input = launch(
        "reduce",
        &[n as u64],
        None,
        None,
        vec![
            buffer(words(&data)),
            buffer(vec![0; 32]),
            InputArg::Local(8 * 4),
        ],
    );
    assert_eq!(
        map.buffer_len(&[64], None),
        map.static_len() as usize + 2 * 64
    );
    let (_, res) = cover(&s, "local_reduce.cl", "", &input);
    for b in &res.barriers {
        assert!(b.divergent.is_empty(), "{b:?}");
        assert!(b.groups_all >= 1 && b.groups_none == 0, "{b:?}");
    }
}

/// Runs `file`'s kernel plain and permuted under `tables`; every output must equal the plain one.
fn permuted_outputs_match(
    s: &Session,
    file: &str,
    options: &str,
    input: &LaunchInput,
    tables: &[Vec<u32>],
) {
    let src = fixture(file);
    let program = parse_program(&src, options).unwrap();
    let perm = permute_schedule(&program).unwrap();
    let k = perm
        .map
        .kernels
        .iter()
        .find(|k| k.name == input.kernel)
        .unwrap();
    assert_eq!(k.perm_arg_index as usize, input.args.len());
    let plain = run(s, &src, options, input, &[]);
    let built = s
        .build_source(&perm.source, options)
        .unwrap_or_else(|e| panic!("{e}\n{}", perm.source));
    for t in tables {
        let out = s.run(&built, input, &[buffer(words(t))]).unwrap();
        let got: Vec<Option<Vec<u32>>> = out
            .outputs
            .into_iter()
            .map(|o| o.map(|b| to_words(&b)))
            .collect();
        assert_eq!(&got[..plain.len()], &plain[..], "{file} under table {t:?}");
    }
}

#[test]
fn identity_and_random_schedules_keep_every_work_items_ids_in_3d_with_offsets() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let (global, local) = ([8u64, 4, 2], [2u64, 2, 1]);
    let input = launch(
        "ids",
        &global,
        Some(&local),
        Some(&[3, 5, 7]),
        vec![buffer(vec![0; 8 * 4 * 2 * 16])],
    );
    let mut tables = vec![identity_permutation(&global, &local)];
    for seed in 1..4 {
        let t = random_permutation(&global, &local, seed);
        check_permutation(&t, &global, &local).unwrap();
        tables.push(t);
    }
    assert_ne!(tables[0], tables[1]);
    permuted_outputs_match(&s, "ids.cl", "", &input, &tables);
    let input = launch(
        "ids",
        &[16],
        Some(&[4]),
        None,
        vec![buffer(vec![0; 16 * 16])],
    );
    permuted_outputs_match(
        &s,
        "ids.cl",
        "",
        &input,
        &[
            identity_permutation(&[16], &[4]),
            random_permutation(&[16], &[4], 9),
        ],
    );
}

#[test]
fn opencl_2_id_builtins_are_permuted_consistently() {
    // PoCL 3.1's CPU device has no non-uniform work-groups (CL_INVALID_WORK_GROUP_SIZE), so
    // this runs the OpenCL C 2.0 path (get_global_linear_id, get_enqueued_local_size) on a
    // uniform 2-D range; partial groups are covered by the table checks in the unit tests.
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let (global, local) = ([12u64, 6], [4u64, 2]);
    let input = launch(
        "partial",
        &global,
        Some(&local),
        Some(&[1, 2]),
        vec![buffer(vec![0; 12 * 6 * 8])],
    );
    let tables: Vec<Vec<u32>> = std::iter::once(identity_permutation(&global, &local))
        .chain((1..4).map(|seed| random_permutation(&global, &local, seed)))
        .collect();
    permuted_outputs_match(&s, "partial_groups.cl", "-cl-std=CL2.0", &input, &tables);
}

#[test]
fn a_subset_of_groups_computes_exactly_what_those_groups_compute_in_the_whole_launch() {
    use cltrap_kernel::permute::{full_table, subset_groups, subset_table};
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let (global, local, offset) = ([8u64, 4, 2], [2u64, 2, 1], [3u64, 5, 7]);
    let input = launch(
        "ids",
        &global,
        Some(&local),
        Some(&offset),
        vec![buffer(vec![0; 8 * 4 * 2 * 16])],
    );
    let src = fixture("ids.cl");
    let plain = run(&s, &src, "", &input, &[]);
    let subset = subset_groups(&parse_program(&src, "").unwrap()).unwrap();
    let k = subset.map.kernels.iter().find(|k| k.name == "ids").unwrap();
    assert_eq!(k.perm_arg_index, 1);
    // The full table runs the launch unchanged.
    let whole = run(
        &s,
        &subset.source,
        "",
        &input,
        &[buffer(words(&full_table()))],
    );
    assert_eq!(whole[0], plain[0]);
    // Groups 0 (first), 15 (last) and 5, as a row of three groups along dimension 0.
    let groups = [0u64, 15, 5];
    let table = subset_table([4, 2, 2], global, &groups).unwrap();
    let mut reduced = input.clone();
    reduced.global_size = vec![2 * groups.len() as u64, 2, 1];
    let got = run(&s, &subset.source, "", &reduced, &[buffer(words(&table))]);
    let (full, part) = (plain[0].as_ref().unwrap(), got[0].as_ref().unwrap());
    let mut written = 0;
    for z in 0..2u64 {
        for y in 0..4u64 {
            for x in 0..8u64 {
                let i = ((z * 4 + y) * 8 + x) as usize;
                let group = x / 2 + 4 * (y / 2 + 2 * z);
                let cell = &part[4 * i..4 * i + 4];
                if groups.contains(&group) {
                    assert_eq!(cell, &full[4 * i..4 * i + 4], "work-item ({x},{y},{z})");
                    written += 1;
                } else {
                    assert_eq!(cell, &[0, 0, 0, 0], "work-item ({x},{y},{z}) ran");
                }
            }
        }
    }
    assert_eq!(written, 3 * 4);
}

#[test]
fn pragma_between_a_loop_header_and_its_unbraced_body_loop_stays_on_its_loop() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let input = launch(
        "unrolled_nest",
        &[4],
        Some(&[2]),
        None,
        vec![
            buffer(vec![0; 4]),
            InputArg::Scalar(8i32.to_le_bytes().to_vec()),
        ],
    );
    let (map, res) = cover(&s, "unroll_nested.cl", "", &input);
    let hit = hit_labels(&map, &res);
    for want in [
        "for (k < n) ran more than once",
        "for (kk < 4) ran more than once",
        "for (mm < 4) ran more than once",
    ] {
        assert!(hit.iter().any(|h| h == want), "{want} not in {hit:?}");
    }
}

#[test]
fn a_helper_called_inside_a_macro_is_skipped_and_the_rest_is_counted() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let input = launch(
        "macro_caller",
        &[1],
        Some(&[1]),
        None,
        vec![
            buffer(vec![0; 4]),
            InputArg::Scalar(5i32.to_le_bytes().to_vec()),
        ],
    );
    let (map, res) = cover(&s, "macro_call.cl", "", &input);
    let hit = hit_labels(&map, &res);
    assert!(hit.iter().any(|h| h == "if (n > 1) true"), "{hit:?}");
    assert!(hit.iter().any(|h| h == "if (x < 0) false"), "{hit:?}");
    assert!(!hit.iter().any(|h| h.contains("x > 3")), "{hit:?}");
    let skipped: Vec<&str> = map.skipped.iter().map(|s| s.construct.as_str()).collect();
    assert_eq!(skipped, ["function `gen_bits`"]);
    assert!(map.skipped[0].why.contains("macro"), "{:?}", map.skipped);
}
