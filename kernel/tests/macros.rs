//! Macros and typedefs in every pass: the interface types arguments by their canonical type,
//! the model carries the operators, literals and swizzles macros write, the solver reasons over
//! the expanded code, and coverage and mutation either instrument code inside a macro correctly
//! or leave it out with a note — the programs they hand the driver build and run on PoCL.
//! Fixture: `tests/kernels/macros.cl`, one kernel per kind of use.

mod common;
use common::{buffer, bytes_of, fixture, launch, session, words, DEVICE};

use cltrap_analyzer::executor::{InputArg, LaunchInput, Session};
use cltrap_kernel::coverage::{instrument_coverage, Construct, CoverageOptions, Outcome};
use cltrap_kernel::interface::{self, ArgKind, Role, Scalar, ValueType};
use cltrap_kernel::model::{visit_exprs, ExprKind};
use cltrap_kernel::mutate::{self, MutateOptions};
use cltrap_kernel::parse_program;
use cltrap_kernel::symbolic::{self, Geometry, Limits, SymArg, Target, Verdict};

const FLOAT: ValueType = ValueType {
    scalar: Scalar::Float { bits: 32 },
    lanes: 1,
};
const FLOAT4: ValueType = ValueType {
    scalar: Scalar::Float { bits: 32 },
    lanes: 4,
};
const UINT: ValueType = ValueType {
    scalar: Scalar::Int {
        bits: 32,
        signed: false,
    },
    lanes: 1,
};

fn program() -> cltrap_kernel::Program {
    parse_program(&fixture("macros.cl"), "").expect("macros.cl parses")
}

#[test]
fn typedefd_scalars_and_buffers_get_their_canonical_types() {
    let p = program();
    let scale = interface::derive(&p, "scale").unwrap();
    let kinds: Vec<&ArgKind> = scale.args.iter().map(|a| &a.kind).collect();
    assert!(
        matches!(kinds[0], ArgKind::Buffer { elem: Some(t), role: Role::Both, .. } if *t == FLOAT),
        "{:?}",
        kinds[0]
    );
    assert!(
        matches!(kinds[1], ArgKind::Buffer { elem: Some(t), role: Role::Input, .. } if *t == FLOAT),
        "{:?}",
        kinds[1]
    );
    assert_eq!(kinds[2], &ArgKind::Value { ty: FLOAT });
    assert_eq!(kinds[3], &ArgKind::Value { ty: UINT });
    let vec = interface::derive(&p, "vec").unwrap();
    assert!(
        matches!(&vec.args[0].kind, ArgKind::Buffer { elem: Some(t), .. } if *t == FLOAT4),
        "{:?}",
        vec.args[0]
    );
    assert_eq!(vec.args[2].kind, ArgKind::Value { ty: FLOAT4 });
    // Literals written by macros are the kernel's constants too: LIMIT (0x10), TWICE's 2,
    // ALPHA (0.5f).
    assert!(
        scale.int_constants.contains(&16),
        "{:?}",
        scale.int_constants
    );
    assert!(
        scale.int_constants.contains(&2),
        "{:?}",
        scale.int_constants
    );
    assert!(
        scale.float_constants.contains(&0.5),
        "{:?}",
        scale.float_constants
    );
}

#[test]
fn operators_literals_and_swizzles_written_by_macros_are_in_the_model() {
    let p = program();
    let mut ops = Vec::new();
    let mut holes = Vec::new();
    for f in p.kernels() {
        visit_exprs(f.body.as_ref().unwrap(), &mut |e| match &e.kind {
            ExprKind::Binary { op: Some(op), .. } if !e.span.is_exact() => ops.push(*op),
            ExprKind::Binary { op: None, .. } | ExprKind::Unary { op: None, .. } => {
                holes.push(format!("operator at {}:{}", e.span.line, e.span.col))
            }
            ExprKind::IntLit(t) if interface::parse_int_literal(t).is_none() => {
                holes.push(format!("literal {t}"))
            }
            ExprKind::FloatLit(t) if interface::parse_float_literal(t).is_none() => {
                holes.push(format!("literal {t}"))
            }
            _ => {}
        });
    }
    assert!(holes.is_empty(), "{holes:?}");
    use cltrap_kernel::model::BinOp::*;
    // IMUL's `*`, IS_BIG's `>`, SUM's `<`, `+=` and `+`, ACCUMULATE's `<` and `+=`.
    for op in [Mul, Gt, Lt, AddAssign, Add] {
        assert!(ops.contains(&op), "{op:?} not recovered: {ops:?}");
    }
}

/// Runs `input` on `source` (plus `extras`); every memory argument's bytes afterwards.
fn run(s: &Session, source: &str, input: &LaunchInput, extras: &[InputArg]) -> Vec<Vec<u8>> {
    let prog = s
        .build_source(source, "-D__CLTRAP_BUDGET=1000u")
        .unwrap_or_else(|e| panic!("the driver rejects it: {e}\n{source}"));
    let out = s.run(&prog, input, extras).expect("runs");
    out.outputs
        .into_iter()
        .map(|o| o.unwrap_or_default())
        .collect()
}

fn floats(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

/// One launch per kernel of the fixture.
fn launches() -> Vec<LaunchInput> {
    let scalar = |b: Vec<u8>| InputArg::Scalar(b);
    vec![
        launch(
            "scale",
            &[8],
            Some(&[4]),
            None,
            vec![
                buffer(vec![0; 32]),
                buffer(floats(&[1.0, -2.0, 0.25, 3.0, 0.0, 5.0, -0.5, 2.0])),
                scalar(2f32.to_le_bytes().to_vec()),
                scalar(6u32.to_le_bytes().to_vec()),
            ],
        ),
        launch(
            "prescan",
            &[8],
            Some(&[4]),
            None,
            vec![
                buffer(vec![0; 8]),
                buffer(words(&[1, 2, 3, 4, 5, 6, 7, 8])),
                InputArg::Local(16),
                scalar(3u32.to_le_bytes().to_vec()),
            ],
        ),
        launch(
            "vec",
            &[2],
            None,
            None,
            vec![
                buffer(floats(&[3.0, 0.0, 0.0, 0.25, 1.0, 0.0, 0.0, 9.0])),
                buffer(vec![0; 8]),
                scalar(floats(&[0.0, 2.0, 0.0, 0.0])),
            ],
        ),
    ]
}

#[test]
fn coverage_of_macro_code_builds_runs_and_says_what_it_left_out() {
    let p = program();
    let ins = instrument_coverage(&p, CoverageOptions::default()).unwrap();
    // SUM's `if` and barrier are inside the macro with other code: left out, with a note.
    let skipped: Vec<String> = ins
        .map
        .skipped
        .iter()
        .map(|s| format!("{} {}: {}", s.construct, s.line, s.why))
        .collect();
    assert!(
        skipped.iter().any(|s| s.starts_with("barrier 55")),
        "{skipped:?}"
    );
    // A do-while has no "ran 0 times" class (its body always runs).
    let do_slots: Vec<_> = ins
        .map
        .slots
        .iter()
        .filter(|s| s.construct == Construct::Do)
        .map(|s| s.outcome)
        .collect();
    assert!(!do_slots.is_empty());
    assert!(!do_slots.contains(&Outcome::Zero), "{do_slots:?}");
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    for input in launches() {
        let plain = run(&s, &p.source, &input, &[]);
        let counters = ins
            .map
            .initial_buffer(&input.global_size, input.local_size.as_deref());
        let covered = run(&s, &ins.source, &input, &[buffer(words(&counters))]);
        assert_eq!(
            plain[..],
            covered[..plain.len()],
            "{}: instrumentation changed the results",
            input.kernel
        );
    }
}

#[test]
fn the_mutation_schema_of_macro_code_builds_and_runs_the_original_unchanged() {
    let p = program();
    let ms = mutate::find_mutants(&p, &MutateOptions::default());
    assert!(!ms.is_empty());
    let schema = mutate::schema(&p, &ms).expect("schema");
    // Barrier mutants of `prescan` need kernel copies at the end of the file, where
    // ACCUMULATE is undefined: left out of the schema with a note (one compile each instead).
    assert!(
        schema
            .excluded
            .iter()
            .any(|(_, why)| why.contains("macro ACCUMULATE")),
        "{:?}",
        schema.excluded
    );
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    for input in launches() {
        let plain = run(&s, &p.source, &input, &[]);
        let selected = run(
            &s,
            &schema.source,
            &input,
            &[
                InputArg::Scalar(0u32.to_le_bytes().to_vec()),
                buffer(words(&[0, u32::MAX, 0])),
            ],
        );
        assert_eq!(plain[..], selected[..plain.len()], "{}", input.kernel);
    }
    // Every one-mutant program parses too.
    for m in ms.iter().filter(|m| m.in_schema).take(40) {
        let text = mutate::mutated_text(&p, m).unwrap();
        parse_program(&text, "").unwrap_or_else(|e| panic!("mutant {}: {e}", m.number));
    }
}

/// The solver's verdict for every `if` / `&&` slot of `kernel`.
fn solve(kernel: &str, geo: &Geometry) -> Vec<(String, Verdict)> {
    let p = program();
    let iface = interface::derive(&p, kernel).unwrap();
    let args: Vec<SymArg> = iface
        .args
        .iter()
        .map(|a| match &a.kind {
            ArgKind::Value { ty } => SymArg::Value(*ty),
            ArgKind::Buffer { elem: Some(t), .. } => SymArg::Buffer { elem: *t, len: 16 },
            ArgKind::Local { elem } => SymArg::Local { elem: *elem },
            _ => SymArg::Other,
        })
        .collect();
    let map = instrument_coverage(&p, Default::default()).unwrap().map;
    let slots: Vec<_> = map
        .slots
        .iter()
        .filter(|s| {
            s.function == kernel && matches!(s.construct, Construct::If | Construct::ShortCircuit)
        })
        .collect();
    let targets: Vec<Target> = slots.iter().map(|s| Target::from(*s)).collect();
    // Float multiplications make these queries slow on a loaded 2-core machine: a generous
    // time limit, so the test measures what is modelled rather than the machine's load.
    let limits = Limits {
        time: std::time::Duration::from_secs(180),
        query_ms: 30_000,
        ..Limits::default()
    };
    symbolic::solve(&p, kernel, geo, &args, &targets, &limits)
        .unwrap()
        .into_iter()
        .map(|r| {
            let s = slots.iter().find(|s| s.index == r.id).unwrap();
            (s.label.clone(), r.verdict)
        })
        .collect()
}

#[test]
fn the_solver_reasons_over_macro_literals_operators_typedefs_and_vectors() {
    let geo = Geometry {
        global: vec![8],
        local: Some(vec![4]),
        offset: None,
    };
    for kernel in ["scale", "vec", "flags"] {
        let verdicts = solve(kernel, &geo);
        assert!(verdicts.len() >= 4, "{kernel}: {verdicts:?}");
        for (label, v) in &verdicts {
            // `on` is `true`: its false side is dead, and the solver proves it.
            if label == "&& operand (on) false" {
                assert_eq!(v, &Verdict::Unsat);
                continue;
            }
            assert!(matches!(v, Verdict::Solved(_)), "{kernel}: {label}: {v:?}");
        }
    }
    // `IS_BIG(TWICE(n))` true needs n * 2 > 16 (unsigned): the model says so.
    let verdicts = solve("scale", &geo);
    let (_, v) = verdicts
        .iter()
        .find(|(l, _)| l.starts_with("if (IS_BIG(TWICE(n))) true"))
        .expect("the IS_BIG slot");
    let Verdict::Solved(a) = v else {
        unreachable!()
    };
    let n = a
        .scalars
        .iter()
        .find(|(i, _)| *i == 3)
        .expect("n is solved");
    let n = u32::from_le_bytes(n.1[..4].try_into().unwrap());
    assert!(n.wrapping_mul(2) > 16, "n = {n}");
    let _ = bytes_of;
}

/// hashcat spells `__kernel` as `KERNEL_FQ`, defined in a header it includes: no text of the
/// kernel's own file shows the keyword, yet the function is a kernel (clang says so through
/// its calling convention), and a helper beside it is not.
#[test]
fn a_kernel_whose_keyword_comes_from_a_header_macro_is_a_kernel() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("inc_vendor.h"),
        "#if defined IS_CUDA\n#define KERNEL_FQ extern \"C\" __global__\n#else\n#define KERNEL_FQ __kernel\n#endif\n",
    )
    .unwrap();
    let source = "#include \"inc_vendor.h\"\n\
                  void helper(__global int *a) { a[0] = 1; }\n\
                  KERNEL_FQ void m00000_sxx(__global int *a) { if (a[1] > 0) helper(a); }\n";
    let p = parse_program(source, &format!("-I {}", dir.display())).expect("parses");
    let kernels: Vec<(&str, bool)> = p
        .functions
        .iter()
        .map(|f| (f.name.as_str(), f.is_kernel))
        .collect();
    assert_eq!(kernels, [("helper", false), ("m00000_sxx", true)]);
    // Coverage instruments it (a kernel gets the counters argument).
    let cov = instrument_coverage(&p, CoverageOptions::default()).expect("instruments");
    assert_eq!(cov.map.kernels.len(), 1, "{:?}", cov.map.kernels);
}
