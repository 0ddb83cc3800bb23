//! The solver's breadth, checked end to end: for every `if` / `&&` side of
//! `tests/kernels/solve_breadth.cl` the solver answers (no "unsupported"), and every answer for
//! the exactly modelled constructs — `true`, vector arguments and element access, casts
//! through typedefs, `convert_*` (saturating, rounding), `as_*`, `fabs`/`fmin`/`fmax`/`min`/
//! `max`/`clamp`/`mad`/`sqrt`/`abs`, `any` — is confirmed by running the coverage build of the
//! kernel on PoCL with the solved inputs. Transcendental functions are uninterpreted: their
//! answers are candidates the confirming run checks, so only "answered" is asserted there.

mod common;
use common::{buffer, fixture, launch, session, to_words, words, DEVICE};

use cltrap_analyzer::executor::InputArg;
use cltrap_kernel::coverage::{instrument_coverage, Construct};
use cltrap_kernel::interface::{self, ArgKind};
use cltrap_kernel::parse_program;
use cltrap_kernel::symbolic::{self, Assignment, Geometry, Limits, SymArg, Target, Verdict};

const LEN: u64 = 16;

fn check(kernel: &str, exact: bool) {
    let src = fixture("solve_breadth.cl");
    let p = parse_program(&src, "").unwrap();
    let iface = interface::derive(&p, kernel).unwrap();
    let args: Vec<SymArg> = iface
        .args
        .iter()
        .map(|a| match &a.kind {
            ArgKind::Value { ty } => SymArg::Value(*ty),
            ArgKind::Buffer { elem: Some(t), .. } => SymArg::Buffer { elem: *t, len: LEN },
            other => panic!("{kernel}: argument {other:?}"),
        })
        .collect();
    let ins = instrument_coverage(&p, Default::default()).unwrap();
    let slots: Vec<_> = ins
        .map
        .slots
        .iter()
        .filter(|s| {
            s.function == kernel && matches!(s.construct, Construct::If | Construct::ShortCircuit)
        })
        .collect();
    let targets: Vec<Target> = slots.iter().map(|s| Target::from(*s)).collect();
    let geo = Geometry {
        global: vec![4],
        local: None,
        offset: None,
    };
    let results = symbolic::solve(&p, kernel, &geo, &args, &targets, &Limits::default()).unwrap();
    let label = |id: u32| slots.iter().find(|s| s.index == id).unwrap().label.clone();
    let unsupported: Vec<String> = results
        .iter()
        .filter_map(|r| match &r.verdict {
            Verdict::Unsupported(w) | Verdict::Timeout(w) => Some(format!("{}: {w}", label(r.id))),
            _ => None,
        })
        .collect();
    assert!(unsupported.is_empty(), "{kernel}: {unsupported:#?}");
    if !exact {
        assert!(results
            .iter()
            .any(|r| matches!(r.verdict, Verdict::Solved(_))));
        return;
    }
    let _g = DEVICE.lock().unwrap_or_else(|p| p.into_inner());
    let s = session();
    let prog = s.build_source(&ins.source, "").expect("coverage build");
    let mut unconfirmed = Vec::new();
    for r in &results {
        let Verdict::Solved(a) = &r.verdict else {
            continue;
        };
        let input = launch(kernel, &[4], None, None, inputs(&iface, a));
        let counters = ins.map.initial_buffer(&input.global_size, None);
        let out = s
            .run(&prog, &input, &[buffer(words(&counters))])
            .expect("runs");
        let raw = out.outputs.last().cloned().flatten().expect("counters");
        let res = ins
            .map
            .evaluate(kernel, &to_words(&raw), &input.global_size)
            .unwrap();
        let hit = res.slots.iter().any(|x| x.index == r.id && x.hit);
        if !hit {
            unconfirmed.push(format!("{}: {a:?}", label(r.id)));
        }
    }
    assert!(unconfirmed.is_empty(), "{kernel}: {unconfirmed:#?}");
}

/// The launch arguments an assignment describes (everything it leaves free is zero).
fn inputs(iface: &interface::KernelInterface, a: &Assignment) -> Vec<InputArg> {
    iface
        .args
        .iter()
        .enumerate()
        .map(|(i, arg)| match &arg.kind {
            ArgKind::Value { ty } => {
                let mut b = vec![0u8; ty.size()];
                if let Some((_, v)) = a.scalars.iter().find(|(j, _)| *j == i) {
                    b[..v.len()].copy_from_slice(v);
                }
                InputArg::Scalar(b)
            }
            ArgKind::Buffer { elem: Some(t), .. } => {
                let w = t.size();
                let mut b = vec![0u8; LEN as usize * w];
                for (_, at, v) in a.elements.iter().filter(|(j, _, _)| *j == i) {
                    let at = *at as usize * w;
                    b[at..at + v.len().min(w)].copy_from_slice(&v[..v.len().min(w)]);
                }
                buffer(b)
            }
            other => panic!("argument {other:?}"),
        })
        .collect()
}

#[test]
fn vector_arguments_element_access_and_true_are_solved_and_confirmed() {
    check("vectors", true);
}

#[test]
fn casts_through_typedefs_convert_and_as_are_solved_and_confirmed() {
    check("casts", true);
    check("casts2", true);
}

#[test]
fn exact_math_builtins_are_solved_and_confirmed() {
    check("exact_math", true);
    check("exact_math2", true);
}

#[test]
fn transcendental_builtins_are_answered_as_uninterpreted_functions() {
    check("transcendental", false);
}

#[test]
fn vload_and_vstore_are_solved_and_confirmed() {
    check("vector_memory", true);
}
