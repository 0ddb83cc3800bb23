//! Condition coverage of `&&` / `||` operands on the real PoCL runtime: a right operand whose
//! left is always false is reported unreached, both outcomes are counted where they happen,
//! every left operand (nested ones included) has its true/false slots on exactly its own
//! range (what mutation keys its NO-COVERAGE guards on), LCOV gets the `BRDA` records, and the
//! instrumented kernel computes what the original does (operands with side effects run once,
//! short-circuiting kept).

mod common;
use common::{buffer, bytes_of, fixture, ints, launch, session, DEVICE};

use cltrap_analyzer::executor::{InputArg, LaunchInput, Session};
use cltrap_kernel::coverage::{
    instrument_coverage, Construct, CoverageMap, CoverageOptions, Outcome,
};
use cltrap_kernel::coverage_result::CoverageResult;
use cltrap_kernel::frontend::is_vector_type;
use cltrap_kernel::interface::{self as iface, ArgKind};
use cltrap_kernel::lcov::to_lcov;
use cltrap_kernel::model::{visit_exprs, BinOp, ExprKind};
use cltrap_kernel::parse_program;
use cltrap_kernel::symbolic::{self, Geometry, Limits, SymArg, Target, Verdict};

const X: [i32; 8] = [3, -1, 0, 5, -2, 7, 0, 4];

fn input(mode: i32) -> LaunchInput {
    launch(
        "short_circuit",
        &[8],
        Some(&[4]),
        None,
        vec![
            buffer(vec![0; 32]),
            buffer(bytes_of(&X)),
            InputArg::Scalar(8i32.to_le_bytes().to_vec()),
            InputArg::Scalar(mode.to_le_bytes().to_vec()),
        ],
    )
}

/// Runs `source` on `input` with `extras` appended; returns every memory argument afterwards.
fn run(
    session: &Session,
    source: &str,
    input: &LaunchInput,
    extras: &[InputArg],
) -> Vec<Option<Vec<u8>>> {
    let program = session
        .build_source(source, "")
        .unwrap_or_else(|e| panic!("{e}\n{source}"));
    session
        .run(&program, input, extras)
        .unwrap_or_else(|e| panic!("{e}"))
        .outputs
}

/// Runs the original and the instrumented fixture; returns the original's `out` buffer, the
/// map and the evaluated coverage, after checking the instrumented run wrote the same `out`.
fn cover(session: &Session, mode: i32) -> (Vec<i32>, CoverageMap, CoverageResult) {
    let src = fixture("short_circuit.cl");
    let program = parse_program(&src, "").expect("fixture parses");
    let ins = instrument_coverage(&program, CoverageOptions::default()).expect("instrumented");
    let input = input(mode);
    let plain = run(session, &src, &input, &[]);
    let counters = ins
        .map
        .initial_buffer(&input.global_size, input.local_size.as_deref());
    let words: Vec<u8> = counters.iter().flat_map(|w| w.to_le_bytes()).collect();
    let outs = run(session, &ins.source, &input, &[buffer(words)]);
    assert_eq!(
        &outs[..plain.len()],
        &plain[..],
        "instrumentation changed the kernel's own results"
    );
    let raw: Vec<u32> = outs
        .last()
        .cloned()
        .flatten()
        .expect("counter buffer read back")
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let res = ins
        .map
        .evaluate(&input.kernel, &raw, &input.global_size)
        .expect("counters evaluate");
    let out = ints(plain[0].as_deref().expect("out read back"));
    (out, ins.map, res)
}

/// Labels of the slots `res` hit (`true`) or missed (`false`), in map order.
fn labels(map: &CoverageMap, res: &CoverageResult, hit: bool) -> Vec<String> {
    res.slots
        .iter()
        .filter(|s| s.hit == hit)
        .map(|s| {
            map.slots[(s.index - map.header_slots) as usize]
                .label
                .clone()
        })
        .collect()
}

#[test]
fn a_right_operand_behind_an_always_false_left_is_unreached_and_both_outcomes_are_counted() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let (out, map, res) = cover(&s, 0);
    // Worked out by hand in the fixture's terms: `k++` runs once per item (k = i + 1, and
    // item 7 never reads x[8]), `acc += 32` runs only where `i >= 6` is false.
    assert_eq!(
        out,
        [1034, 2153, 13029, 14407, 15157, 16407, 17061, 8311],
        "the original kernel's results"
    );
    assert_eq!(
        labels(&map, &res, false),
        [
            "if (mode > 0 && x[i] > 0) true",
            "&& operand (mode > 0) true",
            "&& operand (x[i] > 0) true",
            "&& operand (x[i] > 0) false",
            "|| operand ((acc += 32) < 0) true",
        ]
    );
    let hit = labels(&map, &res, true);
    for both in [
        "&& operand (v >= 0)",
        "&& operand (v < n)",
        "|| operand (i % 2 == 0)",
        "|| operand (x[i] < 0)",
        "&& operand (k++ < n - 1)",
        "&& operand (x[k] > 0)",
        "|| operand (i >= 6)",
        "&& operand (i > 0 && i < n - 1)",
        "&& operand (i > 0)",
        "&& operand (i < n - 1)",
        "&& operand (x[i] != 0)",
        "&& operand (p)",
        "&& operand (p[i] > 0)",
    ] {
        for side in ["true", "false"] {
            let label = format!("{both} {side}");
            assert!(hit.contains(&label), "{label} not hit: {hit:?}");
        }
    }
    let short: Vec<_> = map
        .slots
        .iter()
        .filter(|s| s.construct == Construct::ShortCircuit && s.function != "nested")
        .collect();
    assert_eq!(
        short.len(),
        2 * 16,
        "16 counted operands, two outcomes each"
    );
    assert_eq!(
        (res.branches.0, res.branches.1),
        (res.slots.len() as u32 - 5, res.slots.len() as u32),
        "every slot of the fixture is a branch side"
    );

    // With mode = 1 the right operand runs, and the merged report covers it both ways.
    let (_, _, res1) = cover(&s, 1);
    let merged: Vec<String> = labels(&map, &res1, true);
    for side in ["true", "false"] {
        assert!(merged.contains(&format!("&& operand (x[i] > 0) {side}")));
    }
}

#[test]
fn vector_operands_are_skipped_and_listed_not_counted() {
    let program = parse_program(&fixture("short_circuit.cl"), "").expect("fixture parses");
    let ins = instrument_coverage(&program, CoverageOptions::default()).expect("instrumented");
    let listed: Vec<(String, u32)> = ins
        .map
        .skipped
        .iter()
        .map(|s| (s.construct.clone(), s.line))
        .collect();
    assert_eq!(listed, [("&& with vector operands".to_string(), 23)]);
    assert!(ins
        .map
        .slots
        .iter()
        .all(|s| s.line != 23 || s.construct != Construct::ShortCircuit));
    let strict = instrument_coverage(&program, CoverageOptions { strict: true });
    assert!(strict.is_err(), "strict mode refuses what it cannot count");
}

#[test]
fn every_scalar_left_operand_has_true_and_false_slots_on_exactly_its_range() {
    let program = parse_program(&fixture("short_circuit.cl"), "").expect("fixture parses");
    let ins = instrument_coverage(&program, CoverageOptions::default()).expect("instrumented");
    let mut lefts = Vec::new();
    for f in program.functions.iter().filter(|f| f.name != "folded") {
        let Some(body) = &f.body else { continue };
        visit_exprs(body, &mut |e| {
            if let ExprKind::Binary {
                op: Some(BinOp::LAnd | BinOp::LOr),
                lhs,
                ..
            } = &e.kind
            {
                if !is_vector_type(&lhs.peel().ty) {
                    lefts.push((lhs.span.start, lhs.span.end));
                }
            }
        });
    }
    assert_eq!(lefts.len(), 10, "the fixture's scalar `&&`/`||`");
    for (start, end) in lefts {
        for outcome in [Outcome::True, Outcome::False] {
            let n = ins
                .map
                .slots
                .iter()
                .filter(|s| (s.start, s.end, s.outcome) == (start, end, outcome))
                .count();
            assert_eq!(n, 1, "left operand {start}..{end} {outcome:?}");
        }
    }
}

#[test]
fn lcov_has_a_brda_record_per_operand_outcome_on_the_users_line() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let (_, map, res) = cover(&s, 0);
    let lcov = to_lcov(&map, &[res], "short circuit", "kernels/short_circuit.cl");
    let line9: Vec<&str> = lcov.lines().filter(|l| l.starts_with("BRDA:9,")).collect();
    // Blocks in range order: the `mode > 0` operand, the `if`, the `x[i] > 0` operand.
    assert_eq!(
        line9,
        [
            "BRDA:9,2,0,0",
            "BRDA:9,2,1,1",
            "BRDA:9,3,0,0",
            "BRDA:9,3,1,1",
            "BRDA:9,4,0,-",
            "BRDA:9,4,1,-",
        ]
    );
    let line18: Vec<&str> = lcov.lines().filter(|l| l.starts_with("BRDA:18,")).collect();
    assert_eq!(
        line18.len(),
        2 * 5,
        "if, nested left, and three leaf operands"
    );
    assert!(line18.iter().all(|l| l.ends_with(",1")), "{line18:?}");
}

#[test]
fn the_solver_answers_every_operand_slot_nested_left_operands_included() {
    let program = parse_program(&fixture("short_circuit.cl"), "").expect("fixture parses");
    let map = instrument_coverage(&program, CoverageOptions::default())
        .expect("instrumented")
        .map;
    let args: Vec<SymArg> = iface::derive(&program, "nested")
        .expect("interface")
        .args
        .iter()
        .map(|a| match &a.kind {
            ArgKind::Value { ty } => SymArg::Value(*ty),
            ArgKind::Buffer { elem: Some(t), .. } => SymArg::Buffer { elem: *t, len: 1 },
            _ => SymArg::Other,
        })
        .collect();
    let slots: Vec<_> = map
        .slots
        .iter()
        .filter(|s| s.function == "nested" && s.construct == Construct::ShortCircuit)
        .collect();
    let targets: Vec<Target> = slots.iter().map(|s| Target::from(*s)).collect();
    let geometry = Geometry {
        global: vec![1],
        local: Some(vec![1]),
        offset: None,
    };
    let results = symbolic::solve(
        &program,
        "nested",
        &geometry,
        &args,
        &targets,
        &Limits::default(),
    )
    .expect("solves");
    let mut solved: Vec<String> = results
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Solved(_)))
        .filter_map(|r| slots.iter().find(|s| s.index == r.id))
        .map(|s| s.label.clone())
        .collect();
    solved.sort();
    assert_eq!(
        solved,
        [
            "&& operand (a > 3) false",
            "&& operand (a > 3) true",
            "&& operand (b < a) false",
            "&& operand (b < a) true",
            "|| operand (a > 3 && b < a) false",
            "|| operand (a > 3 && b < a) true",
            "|| operand (c == 7) false",
            "|| operand (c == 7) true",
        ]
    );
}

#[test]
fn constant_initializers_have_no_counters_and_still_build() {
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let program = parse_program(&fixture("short_circuit.cl"), "").expect("fixture parses");
    let ins = instrument_coverage(&program, CoverageOptions::default()).expect("instrumented");
    assert!(ins.map.slots.iter().all(|s| s.function != "folded"));
    let s = session();
    let input = launch("folded", &[1], None, None, vec![buffer(vec![0; 4])]);
    let counters = ins.map.initial_buffer(&input.global_size, None);
    let words: Vec<u8> = counters.iter().flat_map(|w| w.to_le_bytes()).collect();
    let outs = run(&s, &ins.source, &input, &[buffer(words)]);
    assert_eq!(ints(outs[0].as_deref().expect("out")), [1 + 5]);
}

#[test]
fn float_operands_and_conditions_are_instrumented_into_code_that_builds_and_counts() {
    let src = fixture("float_logic.cl");
    let program = parse_program(&src, "").expect("fixture parses");
    let ins = instrument_coverage(&program, CoverageOptions::default()).expect("instruments");
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let input = |a: f32, b: f32| {
        launch(
            "float_logic",
            &[1],
            None,
            None,
            vec![
                buffer(vec![0; 12]),
                InputArg::Scalar(a.to_le_bytes().to_vec()),
                InputArg::Scalar(b.to_le_bytes().to_vec()),
            ],
        )
    };
    for (a, b, want) in [
        (1.5f32, 0.0f32, [0, 1, 1]),
        (0.0, 2.0, [0, 1, 0]),
        (-3.0, 0.5, [1, 1, 1]),
    ] {
        let i = input(a, b);
        let counters = ins.map.initial_buffer(&i.global_size, None);
        let words: Vec<u8> = counters.iter().flat_map(|w| w.to_le_bytes()).collect();
        let out = run(&s, &ins.source, &i, &[buffer(words)]);
        assert_eq!(ints(out[0].as_ref().unwrap()), want, "a={a} b={b}");
    }
}
