//! The solver's OpenCL C semantics (no OpenCL needed): shift masking, integer promotions and
//! usual arithmetic conversions, signed division, loops with argument trip counts and inlined
//! helpers, vectors, NaN, dead branches and unsupported constructs.

use cltrap_kernel::coverage::{instrument_coverage, Outcome};
use cltrap_kernel::interface::{self, ArgKind};
use cltrap_kernel::symbolic::{self, Geometry, Limits, SymArg, Target, Verdict};

fn source() -> String {
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/kernels/fuzz_semantics.cl"
    );
    std::fs::read_to_string(p).unwrap()
}

/// Verdicts for every slot of `kernel` whose label starts with `prefix`.
fn solve(kernel: &str, prefix: &str) -> Vec<(String, Verdict)> {
    let src = source();
    let p = cltrap_kernel::parse_program(&src, "").unwrap();
    let iface = interface::derive(&p, kernel).unwrap();
    let args: Vec<SymArg> = iface
        .args
        .iter()
        .map(|a| match &a.kind {
            ArgKind::Value { ty } => SymArg::Value(*ty),
            ArgKind::Buffer {
                layout: Some(l), ..
            } => SymArg::StructBuffer {
                layout: l.clone(),
                len: 16,
            },
            ArgKind::Buffer { elem: Some(t), .. } => SymArg::Buffer { elem: *t, len: 16 },
            _ => SymArg::Other,
        })
        .collect();
    let map = instrument_coverage(&p, Default::default()).unwrap().map;
    let slots: Vec<_> = map
        .slots
        .iter()
        .filter(|s| s.function == kernel && s.label.starts_with(prefix))
        .collect();
    assert!(!slots.is_empty(), "{kernel}: no slot {prefix}");
    let targets: Vec<Target> = slots.iter().map(|s| Target::from(*s)).collect();
    let geo = Geometry {
        global: vec![4],
        local: Some(vec![2]),
        offset: None,
    };
    let r = symbolic::solve(&p, kernel, &geo, &args, &targets, &Limits::default()).unwrap();
    r.into_iter()
        .map(|r| {
            let label = slots
                .iter()
                .find(|s| s.index == r.id)
                .unwrap()
                .label
                .clone();
            (label, r.verdict)
        })
        .collect()
}

fn scalar(v: &Verdict, arg: usize) -> Vec<u8> {
    match v {
        Verdict::Solved(a) => a
            .scalars
            .iter()
            .find(|(i, _)| *i == arg)
            .map(|(_, b)| b.clone())
            .unwrap_or_else(|| panic!("arg {arg} not in {a:?}")),
        other => panic!("not solved: {other:?}"),
    }
}

fn i32_of(b: &[u8]) -> i32 {
    i32::from_le_bytes(b[..4].try_into().unwrap())
}

#[test]
fn shift_count_is_masked() {
    let r = solve("shift_mask", "if");
    let t = r.iter().find(|(l, _)| l.ends_with("true")).unwrap();
    let x = i32_of(&scalar(&t.1, 1));
    assert_eq!(x.wrapping_shl(1), 6, "x = {x}");
}

#[test]
fn promotion_and_wrap() {
    let r = solve("promotion", "if");
    for (l, v) in &r {
        if l.ends_with("true") {
            assert_eq!(scalar(v, 1)[0], 255, "{l}");
        }
    }
}

#[test]
fn usual_arithmetic_conversions() {
    let r = solve("usual_conversions", "if");
    let t = r.iter().find(|(l, _)| l.ends_with("true")).unwrap();
    let u = u32::from_le_bytes(scalar(&t.1, 1)[..4].try_into().unwrap());
    let s = i32_of(&scalar(&t.1, 2));
    assert!(s < 0 && u > s as u32, "u = {u}, s = {s}");
}

#[test]
fn signed_division_truncates() {
    let r = solve("division", "if");
    let t = r.iter().find(|(l, _)| l.ends_with("true")).unwrap();
    assert_eq!(i32_of(&scalar(&t.1, 1)), -11);
}

#[test]
fn loop_trip_count_and_inlined_helper() {
    let r = solve("loop_helper", "if");
    let t = r.iter().find(|(l, _)| l.ends_with("true")).unwrap();
    // 2 * (0 + 1 + 2 + 3) = 12
    assert_eq!(i32_of(&scalar(&t.1, 1)), 4);
    let loops = solve("loop_helper", "for");
    for (l, v) in &loops {
        assert!(matches!(v, Verdict::Solved(_)), "{l}: {v:?}");
    }
    assert!(loops.iter().any(|(l, _)| l.contains("ran 0 times")));
}

#[test]
fn vectors_lane_wise() {
    let r = solve("vectors", "if");
    let t = r.iter().find(|(l, _)| l.ends_with("true")).unwrap();
    let b = scalar(&t.1, 1);
    assert_eq!(i32_of(&b[8..12]), 7);
    assert_eq!(i32_of(&b[12..16]), -8);
}

#[test]
fn nan_is_unequal_to_itself() {
    let r = solve("nan", "if");
    let t = r.iter().find(|(l, _)| l.ends_with("true")).unwrap();
    let f = f32::from_le_bytes(scalar(&t.1, 1)[..4].try_into().unwrap());
    assert!(f.is_nan());
}

#[test]
fn promoted_comparison_is_dead() {
    let r = solve("promotion", "if (a + 1 == 256)");
    let f = r.iter().find(|(l, _)| l.ends_with("false")).unwrap();
    assert!(matches!(f.1, Verdict::Solved(_)));
    let t = r.iter().find(|(l, _)| l.ends_with("true")).unwrap();
    assert!(matches!(t.1, Verdict::Solved(_)), "255 + 1 == 256 in int");
}

#[test]
fn struct_members_are_solved() {
    let r = solve("member", "if");
    let t = r.iter().find(|(l, _)| l.ends_with("true")).unwrap();
    let Verdict::Solved(a) = &t.1 else {
        panic!("{t:?}")
    };
    let (_, idx, bytes) = a.elements.iter().find(|(arg, _, _)| *arg == 1).unwrap();
    assert_eq!((*idx, i32_of(bytes)), (0, 3));
}

#[test]
fn unsupported_construct_is_named_with_its_line() {
    let r = solve("address", "if");
    for (l, v) in &r {
        match v {
            Verdict::Unsupported(what) => assert!(
                what.contains("address of a variable") && what.contains("line 62"),
                "{l}: {what}"
            ),
            other => panic!("{l}: {other:?}"),
        }
    }
    let _ = Outcome::True;
}

#[test]
fn constant_tables_arrays_and_atomics() {
    let r = solve("tables", "if (table");
    let t = r.iter().find(|(l, _)| l.ends_with("true")).unwrap();
    let i = i32_of(&scalar(&t.1, 2));
    let j = i32_of(&scalar(&t.1, 3));
    // table[1][2] + loc[1][0] = -6 + 9 is the only way to make 3.
    assert_eq!((i, j), (1, 2));
    let r = solve("tables", "if (atomic_inc");
    let t = r.iter().find(|(l, _)| l.ends_with("true")).unwrap();
    let Verdict::Solved(a) = &t.1 else {
        panic!("{t:?}")
    };
    let (_, idx, bytes) = a.elements.iter().find(|(arg, _, _)| *arg == 1).unwrap();
    assert_eq!((*idx, i32_of(bytes)), (0, 41));
}

#[test]
fn builtins() {
    let r = solve("builtins", "if (floor");
    let t = r.iter().find(|(l, _)| l.ends_with("true")).unwrap();
    let f = f32::from_le_bytes(scalar(&t.1, 1)[..4].try_into().unwrap());
    assert!(f > 3.75 && f < 4.0, "{f}");
    let r = solve("builtins", "if (mad24");
    let t = r.iter().find(|(l, _)| l.ends_with("true")).unwrap();
    let (a, b) = (i32_of(&scalar(&t.1, 2)), i32_of(&scalar(&t.1, 3)));
    // select(a, b, a > b) is b when a > b, else a; with b > a it is a.
    assert_eq!((a, a * 3 + b), (7, 100));
    let r = solve("builtins", "if (isnan");
    let t = r.iter().find(|(l, _)| l.ends_with("true")).unwrap();
    let f = f32::from_le_bytes(scalar(&t.1, 1)[..4].try_into().unwrap());
    assert!(f.is_nan() || f.is_infinite(), "{f}");
}

#[test]
fn loop_bound_hit_is_a_timeout_naming_the_loop() {
    let src = source();
    let p = cltrap_kernel::parse_program(&src, "").unwrap();
    let map = instrument_coverage(&p, Default::default()).unwrap().map;
    let slot = map
        .slots
        .iter()
        .find(|s| s.function == "long_loop" && s.label == "if (s == 5050) true")
        .unwrap();
    let t = Target::from(slot);
    let int = cltrap_kernel::interface::parse_value_type("int").unwrap();
    let out = cltrap_kernel::interface::parse_value_type("int").unwrap();
    let args = [SymArg::Buffer { elem: out, len: 4 }, SymArg::Value(int)];
    let geo = Geometry {
        global: vec![1],
        local: Some(vec![1]),
        offset: None,
    };
    let short = Limits {
        loop_bound: 8,
        ..Limits::default()
    };
    let r = symbolic::solve(&p, "long_loop", &geo, &args, &[t], &short).unwrap();
    match &r[0].verdict {
        Verdict::Timeout(why) => assert!(why.contains("loop bound 8"), "{why}"),
        other => panic!("{other:?}"),
    }
    // With room to unroll (n = 101), it is solved.
    let long = Limits {
        loop_bound: 128,
        ..Limits::default()
    };
    let r = symbolic::solve(&p, "long_loop", &geo, &args, &[t], &long).unwrap();
    assert_eq!(i32_of(&scalar(&r[0].verdict, 1)), 101);
}
