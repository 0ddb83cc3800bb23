//! The mutation pass: operators found where they should be, stable ids, schemata and
//! one-mutant programs that parse, and — on PoCL — every mutant selected in the schema
//! computing exactly what the same mutant compiled on its own computes.

use cltrap_analyzer::executor::{BuiltProgram, DeviceSelector, InputArg, LaunchInput, Session};
use cltrap_kernel::mutate::{self, MutateOptions, Operator};
use cltrap_kernel::parse_program;
use std::collections::BTreeSet;

mod common;
use common::{buffer, bytes_of, fixture, to_words, words};

fn all() -> Vec<mutate::Mutant> {
    let p = parse_program(&fixture("mutate_mix.cl"), "").expect("parses");
    mutate::find_mutants(&p, &MutateOptions::default())
}

#[test]
fn every_operator_finds_its_mutants_with_the_right_text() {
    let ms = all();
    let has = |op: Operator, line: u32, original: &str, replacement: &str| {
        assert!(
            ms.iter().any(|m| m.operator == op
                && m.line == line
                && m.original == original
                && m.replacement == replacement),
            "no {op} {original:?} -> {replacement:?} on line {line}; found:\n{}",
            ms.iter()
                .filter(|m| m.line == line)
                .map(|m| format!("{} {:?} -> {:?}", m.operator, m.original, m.replacement))
                .collect::<Vec<_>>()
                .join("\n")
        )
    };
    has(Operator::RelationalBoundary, 5, "<", "<=");
    has(Operator::RelationalNegation, 5, "<", ">=");
    has(Operator::Shift, 6, "<<", ">>");
    has(Operator::CompoundAssignment, 6, "+=", "-=");
    has(Operator::Bitwise, 6, "^", "&");
    has(Operator::LogicalNotRemoval, 7, "!", "");
    has(Operator::BitwiseNotRemoval, 7, "~", "");
    has(Operator::Arithmetic, 7, "-", "+");
    has(Operator::LogicalConnector, 14, "&&", "||");
    has(Operator::RelationalNegation, 14, "!=", "==");
    has(Operator::Condition, 14, "v < w && v != 0 || w >= 7", "1");
    has(
        Operator::AtomicPlain,
        15,
        "atomic_inc",
        "__cltrap_plain_inc",
    );
    has(Operator::Arithmetic, 16, "%", "/");
    has(Operator::Arithmetic, 16, "*", "/");
    has(Operator::CompoundAssignment, 17, "|=", "&=");
    has(Operator::Bitwise, 17, "&", "|");
    has(Operator::CompoundAssignment, 18, ">>=", "<<=");
    has(Operator::Increment, 19, "++", "--");
    has(Operator::Increment, 20, "--", "++");
    has(Operator::UnaryMinus, 21, "-", "");
    has(Operator::UnaryMinus, 21, "-x + v - w", "-(-x + v - w)");
    has(
        Operator::BarrierRemoval,
        22,
        "barrier(CLK_GLOBAL_MEM_FENCE)",
        "(void)0",
    );
    has(
        Operator::BarrierFence,
        22,
        "CLK_GLOBAL_MEM_FENCE",
        "CLK_LOCAL_MEM_FENCE",
    );
    has(Operator::IdSwap, 11, "get_global_id", "get_local_id");
    has(Operator::IdSwap, 23, "get_local_id", "get_group_id");
    has(Operator::IdSwap, 24, "get_group_id", "get_local_id");
    has(
        Operator::IdOffset,
        11,
        "get_global_id(0)",
        "(get_global_id(0)+1)",
    );
    has(Operator::DimensionSwap, 11, "0", "1");
    assert!(ms.iter().any(|m| m.operator == Operator::LaunchGeometry));
    // No `-` on the pointer difference side, none inside the masked constant expressions.
    assert!(!ms.iter().any(|m| m.operator == Operator::LocalToPrivate));
}

#[test]
fn ids_are_stable_unique_and_numbers_dense() {
    let (a, b) = (all(), all());
    assert_eq!(a, b);
    let ids: BTreeSet<&str> = a.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids.len(), a.len());
    for (i, m) in a.iter().enumerate() {
        assert_eq!(m.number, i as u32 + 1);
    }
    let json = serde_json::to_string(&a).expect("mutants serialise");
    let back: Vec<mutate::Mutant> = serde_json::from_str(&json).expect("and read back");
    assert_eq!(back, a);
}

#[test]
fn trivial_equivalences_are_recognised_and_others_are_not() {
    let src = "__kernel void k(__global int* o, int a) { o[0] = a * 1; o[1] = a - 0; o[2] = a * 2; o[3] = a << 0; }";
    let p = parse_program(src, "").expect("parses");
    let ms = mutate::find_mutants(&p, &MutateOptions::default());
    let eq = |orig: &str, repl: &str| {
        ms.iter()
            .find(|m| {
                m.original == orig && m.replacement == repl && m.operator != Operator::UnaryMinus
            })
            .unwrap_or_else(|| panic!("{orig} -> {repl}"))
            .equivalent
            .is_some()
    };
    assert!(
        ms.iter()
            .filter(|m| m.original == "*" && m.replacement == "/")
            .count()
            == 2
    );
    let times: Vec<bool> = ms
        .iter()
        .filter(|m| m.original == "*")
        .map(|m| m.equivalent.is_some())
        .collect();
    assert_eq!(
        times,
        vec![true, false],
        "a*1 is equivalent to a/1, a*2 is not a/2"
    );
    assert!(eq("-", "+"));
    assert!(eq("<<", ">>"));
}

#[test]
fn the_schema_and_every_one_mutant_program_parse() {
    let src = fixture("mutate_mix.cl");
    let p = parse_program(&src, "").expect("parses");
    let ms = mutate::find_mutants(&p, &MutateOptions::default());
    let schema = mutate::schema(&p, &ms).expect("schema");
    assert!(schema.excluded.is_empty(), "{:?}", schema.excluded);
    let code: Vec<u32> = ms
        .iter()
        .filter(|m| m.launch.is_none())
        .map(|m| m.number)
        .collect();
    assert_eq!(schema.mutants, code);
    for m in ms.iter().filter(|m| m.launch.is_none()) {
        let selected = schema
            .source
            .contains(&format!("__cltrap_mutant == {}u ?", m.number));
        assert_eq!(selected, !mutate::needs_kernel_copy(m), "{}", m.number);
    }
    parse_program(&schema.source, "").expect("the schema is valid OpenCL C");
    assert_eq!(schema.kernels, vec![("mutate_mix".to_string(), 3)]);
    for m in ms.iter().filter(|m| m.launch.is_none()) {
        let one = mutate::single(&p, m).expect("one mutant");
        parse_program(&one.source, "")
            .unwrap_or_else(|e| panic!("mutant {} {}: {e}\n{}", m.number, m.operator, one.source));
    }
}

/// A helper called inside a macro cannot get the selector: the rest of the program is still
/// a schema, and the helper's mutants are compiled on their own, with the reason.
#[test]
fn a_helper_called_inside_a_macro_leaves_the_rest_of_the_program_in_the_schema() {
    let src = "static uint twice(uint v) { return v + v; }\n\
               static void put(__global uint *p, uint i, uint v) { p[i] = twice(v) + 1u; }\n\
               #define PUT(o, i, v) put(o, i, v)\n\
               uint add(uint a, uint b) { return a + b; }\n\
               __kernel void k(__global uint *out, uint n) {\n\
                   uint g = get_global_id(0);\n\
                   if (g < n) out[g] = add(g, 3u);\n\
                   PUT(out, 0, n);\n\
               }\n";
    let p = parse_program(src, "").expect("parses");
    let ms = mutate::find_mutants(&p, &MutateOptions::default());
    let schema = mutate::schema(&p, &ms).expect("a schema despite the macro call");
    parse_program(&schema.source, "").expect("the schema is valid OpenCL C");
    let in_helpers: Vec<u32> = ms
        .iter()
        .filter(|m| m.launch.is_none() && (m.function == "put" || m.function == "twice"))
        .map(|m| m.number)
        .collect();
    assert!(!in_helpers.is_empty());
    for n in &in_helpers {
        let why = schema
            .excluded
            .iter()
            .find(|(m, _)| m == n)
            .map(|(_, w)| w.as_str())
            .unwrap_or_else(|| panic!("mutant {n} in the schema\n{}", schema.source));
        assert!(why.contains("is called inside a macro"), "{why}");
    }
    assert!(
        ms.iter()
            .any(|m| m.function == "k" && schema.mutants.contains(&m.number)),
        "the kernel's own mutants stay in the schema"
    );
    assert!(
        ms.iter()
            .any(|m| m.function == "add" && schema.mutants.contains(&m.number)),
        "a helper called normally stays in the schema"
    );
    for m in ms.iter().filter(|m| m.launch.is_none()) {
        let one = mutate::single(&p, m).expect("one mutant");
        parse_program(&one.source, "")
            .unwrap_or_else(|e| panic!("mutant {} {}: {e}\n{}", m.number, m.operator, one.source));
    }
}

/// A watchdog buffer: flag, barrier-loop budget, the original's barrier-loop need.
fn watchdog(barrier_budget: u32) -> Vec<u8> {
    words(&[0, barrier_budget, 0])
}

fn run(s: &Session, src: &str, selector: u32) -> (Vec<u8>, Vec<u8>, u32) {
    run_kernel(s, src, "mutate_mix", selector)
}

fn run_kernel(s: &Session, src: &str, kernel: &str, selector: u32) -> (Vec<u8>, Vec<u8>, u32) {
    let prog = s
        .build_source(src, "-D__CLTRAP_BUDGET=1000u")
        .unwrap_or_else(|e| panic!("{e}\n{src}"));
    let input = bytes_of(&[3, -4, 7, 0, 12, 5, 5, -9, 1, 8, 2, 6, -1, 9, 4, 7]);
    let launch = LaunchInput {
        kernel: kernel.into(),
        work_dim: 1,
        global_offset: None,
        global_size: vec![16],
        local_size: Some(vec![4]),
        args: vec![
            buffer(input),
            buffer(vec![0; 64 * 4]),
            buffer(vec![0; 8 * 4]),
        ],
        stand_ins: vec![],
    };
    let out = s
        .run(
            &prog,
            &launch,
            &[
                InputArg::Scalar(selector.to_le_bytes().to_vec()),
                buffer(watchdog(u32::MAX)),
            ],
        )
        .expect("runs");
    let get = |i: usize| out.outputs[i].clone().expect("buffer");
    let wd = get(4);
    (
        get(1),
        get(2),
        u32::from_le_bytes([wd[0], wd[1], wd[2], wd[3]]),
    )
}

#[test]
fn each_mutant_selected_in_the_schema_computes_what_it_computes_compiled_alone() {
    let src = fixture("mutate_mix.cl");
    let p = parse_program(&src, "").expect("parses");
    let ms = mutate::find_mutants(&p, &MutateOptions::default());
    let schema = mutate::schema(&p, &ms).expect("schema");
    let s = Session::open(&DeviceSelector::default()).expect("an OpenCL device (PoCL)");
    let original = run(&s, &mutate::original(&p).expect("original").source, 0);
    assert_eq!(
        run(&s, &schema.source, 0),
        original,
        "selector 0 is the original"
    );
    let code: Vec<&mutate::Mutant> = ms
        .iter()
        .filter(|m| m.launch.is_none() && m.in_schema)
        .collect();
    // Every third mutant compiled alone (compiles are the slow part); all through the schema.
    let mut differing = 0;
    let mut timeouts = 0;
    for (i, m) in code.iter().enumerate() {
        let kernel = schema.launch_name(m.number, "mutate_mix");
        let in_schema = run_kernel(&s, &schema.source, kernel, m.number);
        if in_schema != original {
            differing += 1;
        }
        if in_schema.2 != 0 {
            timeouts += 1;
        }
        if i % 3 == 0 || m.operator == Operator::AtomicPlain || mutate::needs_kernel_copy(m) {
            let alone = run(&s, &mutate::single(&p, m).expect("single").source, 0);
            assert_eq!(
                in_schema, alone,
                "mutant {} {} {:?} -> {:?}",
                m.number, m.operator, m.original, m.replacement
            );
        }
    }
    assert!(differing > code.len() / 2, "{differing} of {}", code.len());
    assert!(
        timeouts >= 1,
        "the loop-condition mutant must trip the watchdog"
    );
}

#[test]
fn nested_loops_without_braces_get_a_watchdog_that_still_parses() {
    let src = "__kernel void k(__global float* o, int n) {\n    float s = 0.0f;\n    for (int a = 0; a < n; a++)\n        for (int b = 0; b < n; b++)\n            if (b > a)\n                s += b;\n    while (n-- > 0) s += 1.0f;\n    o[0] = s;\n}\n";
    let p = parse_program(src, "").expect("parses");
    let ms = mutate::find_mutants(&p, &MutateOptions::default());
    let schema = mutate::schema(&p, &ms).expect("schema");
    assert_eq!(
        schema.source.matches("__cltrap_wd[0] = 1u; break;").count(),
        3
    );
    parse_program(&schema.source, "").unwrap_or_else(|e| panic!("{e}\n{}", schema.source));
}

#[test]
fn device_binaries_tell_equal_code_from_different_code() {
    // EQUIVALENT for mutants compiled on their own compares device binaries: the same source
    // must give the same binary and different code a different one. (PoCL 3.1's binary holds
    // unoptimised bitcode, so `x + 0` and `x - 0` still differ there: on PoCL this method only
    // finds mutants whose text compiles identically; the syntactic rules find the rest.)
    let s = Session::open(&DeviceSelector::default()).expect("an OpenCL device (PoCL)");
    let bin = |src: &str| {
        let p = s.build_source(src, "").expect("builds");
        cltrap_capture::writer::digest(&s.program_binary(&p).expect("binary"))
    };
    let a = "__kernel void k(__global int* o, int x) { o[0] = x + 0; }";
    let same_code = "__kernel void k(__global int* o, int x) { o[0] = x - 0; }";
    let other = "__kernel void k(__global int* o, int x) { o[0] = x - 1; }";
    assert_eq!(bin(a), bin(a), "the same source twice");
    assert_ne!(bin(a), bin(other), "different code");
    let _ = bin(same_code);
}

fn barriers_fixture() -> (String, cltrap_kernel::Program) {
    let src = fixture("mutate_barriers.cl");
    let parsed = parse_program(&src, "").expect("parses");
    (src, parsed)
}

/// Runs `kernel` of the barriers fixture on `input` (32 work-items in groups of 8) with
/// `selector` and a barrier-loop `budget`: its output buffer and the watchdog's words.
fn run_barriers(
    s: &Session,
    prog: &BuiltProgram,
    kernel: &str,
    input: &[i32],
    selector: u32,
    budget: u32,
) -> (Vec<u8>, Vec<u32>) {
    let launch = LaunchInput {
        kernel: kernel.into(),
        work_dim: 1,
        global_offset: None,
        global_size: vec![32],
        local_size: Some(vec![8]),
        args: vec![buffer(bytes_of(input)), buffer(vec![0; 64 * 4])],
        stand_ins: vec![],
    };
    let extras = [
        InputArg::Scalar(selector.to_le_bytes().to_vec()),
        buffer(watchdog(budget)),
    ];
    let out = s.run(prog, &launch, &extras).expect("runs");
    let wd = out.outputs[3].clone().expect("watchdog");
    (out.outputs[1].clone().expect("out"), to_words(&wd))
}

#[test]
fn barrier_mutants_are_renamed_copies_of_every_kernel_that_reaches_them() {
    let (_, p) = barriers_fixture();
    let ms = mutate::find_mutants(&p, &MutateOptions::default());
    let schema = mutate::schema(&p, &ms).expect("schema");
    // Both kernels pass their `__local` array to `stage(__local int*, ...)`: turned private,
    // it would not compile there, so those two mutants get programs of their own.
    for (n, _) in &schema.excluded {
        let op = ms[*n as usize - 1].operator;
        assert_eq!(op, Operator::LocalToPrivate, "only declarations stay out");
    }
    assert_eq!(schema.excluded.len(), 2, "{:?}", schema.excluded);
    let barrier: Vec<&mutate::Mutant> = ms
        .iter()
        .filter(|m| mutate::needs_kernel_copy(m) && m.operator != Operator::LocalToPrivate)
        .collect();
    // stage() and each kernel's first barrier: removal + fence swap; the loop's barrier:
    // removal (two flags, no swap).
    assert_eq!(barrier.len(), 7, "{barrier:#?}");
    for m in &barrier {
        let names = &schema.launch_names[&m.number];
        let want: Vec<&str> = match m.function.as_str() {
            "stage" => vec!["reduce_pairs", "rotate"],
            k => vec![k],
        };
        assert_eq!(names.keys().map(String::as_str).collect::<Vec<_>>(), want);
        for (k, copy) in names {
            assert_eq!(*copy, format!("__cltrap_m{}_{k}", m.number));
            assert_eq!(schema.launch_name(m.number, k), copy);
        }
        if m.function == "stage" {
            assert!(schema
                .source
                .contains(&format!("void __cltrap_m{}_stage(", m.number)));
        }
    }
    let fences = ms
        .iter()
        .filter(|m| m.operator == Operator::FenceRemoval)
        .count();
    assert_eq!(fences, 3);
    assert!(schema.launch_names.len() == barrier.len());
    // Copies keep the user's line numbers for diagnostics.
    assert!(
        schema.source.contains("\n#line 6\nvoid __cltrap_m"),
        "{}",
        schema.source
    );
    let reparsed =
        parse_program(&schema.source, "").unwrap_or_else(|e| panic!("{e}\n{}", schema.source));
    let kernels: Vec<&str> = reparsed.kernels().map(|k| k.name.as_str()).collect();
    // Two originals, two copies for each of the two mutants in stage(), one for each of the
    // other five.
    assert_eq!(kernels.len(), 2 + 2 * 2 + 5, "{kernels:?}");
}

#[test]
fn barrier_copies_and_fences_in_the_schema_compute_what_they_compute_compiled_alone() {
    let (_, p) = barriers_fixture();
    let ms = mutate::find_mutants(&p, &MutateOptions::default());
    let schema = mutate::schema(&p, &ms).expect("schema");
    let s = Session::open(&DeviceSelector::default()).expect("an OpenCL device (PoCL)");
    let built = s
        .build_source(&schema.source, "-D__CLTRAP_BUDGET=1000u")
        .unwrap_or_else(|e| panic!("{e}\n{}", schema.source));
    let input: Vec<i32> = (0..32).map(|v| v * 7 - 40).collect();
    let run = |prog: &BuiltProgram, kernel: &str, selector: u32| {
        run_barriers(&s, prog, kernel, &input, selector, u32::MAX).0
    };
    let mut killed = 0;
    let gpu: Vec<&mutate::Mutant> = ms
        .iter()
        .filter(|m| {
            matches!(
                m.operator,
                Operator::BarrierRemoval | Operator::BarrierFence | Operator::FenceRemoval
            )
        })
        .collect();
    for m in &gpu {
        let alone = s
            .build_source(&mutate::single(&p, m).expect("single").source, "")
            .expect("builds");
        for k in ["reduce_pairs", "rotate"] {
            let original = run(&built, k, 0);
            let in_schema = run(&built, schema.launch_name(m.number, k), m.number);
            assert_eq!(
                in_schema,
                run(&alone, k, 0),
                "mutant {} {} in {k}",
                m.number,
                m.operator
            );
            if in_schema != original {
                killed += 1;
            }
        }
    }
    assert!(
        killed >= 2,
        "removing the barriers must change something ({killed})"
    );
}

#[test]
fn mutants_in_short_circuit_operands_and_conditional_arms_carry_their_guards() {
    let src = "__kernel void k(__global int* o, int a, int b, int4 v) {\n    if (a > 0 && b + 1 > 2)\n        o[0] = 1;\n    o[1] = (a < 3 || b * 2 == 4) ? a - 7 : b % 5;\n    int4 w = v > 0 ? v + 9 : v;\n    o[2] = w.x;\n}\n";
    let p = parse_program(src, "").expect("parses");
    let ms = mutate::find_mutants(&p, &MutateOptions::default());
    let guards = |original: &str, replacement: &str| -> Vec<(String, bool)> {
        let m = ms
            .iter()
            .find(|m| m.original == original && m.replacement == replacement)
            .unwrap_or_else(|| panic!("no {original} -> {replacement}"));
        m.guards
            .iter()
            .map(|g| (src[g.start as usize..g.end as usize].to_string(), g.outcome))
            .collect()
    };
    let g = |t: &str, o: bool| (t.to_string(), o);
    // `&&`: the right operand runs only when the left one was true.
    assert_eq!(guards("+", "-"), vec![g("a > 0", true)]);
    assert_eq!(
        guards("a > 0 && b + 1 > 2", "1"),
        vec![],
        "the if condition itself is unguarded"
    );
    // `||`: the right operand runs only when the left one was false; inside a `?:` condition.
    assert_eq!(guards("*", "/"), vec![g("a < 3", false)]);
    assert_eq!(guards("<", "<="), vec![], "the left operand always runs");
    // `?:` arms, keyed by the condition's range.
    let cond = "(a < 3 || b * 2 == 4)";
    assert_eq!(guards("-", "+"), vec![g(cond, true)]);
    assert_eq!(guards("%", "/"), vec![g(cond, false)]);
    // Vector `?:` selects per component and evaluates both arms: no guard.
    let vec_add = ms
        .iter()
        .find(|m| m.original == "+" && m.line == 5)
        .expect("v + 9");
    assert!(vec_add.guards.is_empty(), "{:?}", vec_add.guards);
}

#[test]
fn an_endless_loop_with_a_barrier_is_stopped_uniformly_by_a_budget_derived_from_the_original() {
    let (_, p) = barriers_fixture();
    let ms = mutate::find_mutants(&p, &MutateOptions::default());
    let schema = mutate::schema(&p, &ms).expect("schema");
    let s = Session::open(&DeviceSelector::default()).expect("an OpenCL device (PoCL)");
    let built = s
        .build_source(&schema.source, "")
        .unwrap_or_else(|e| panic!("{e}\n{}", schema.source));
    let input: Vec<i32> = (0..32).map(|v| v * 5 - 9).collect();
    let run = |selector: u32, budget: u32| {
        run_barriers(&s, &built, "reduce_pairs", &input, selector, budget)
    };
    // `for (uint s = 4; s > 0; s >>= 1)`: three iterations, recorded by the original.
    let (original, wd) = run(0, u32::MAX);
    assert_eq!(wd, vec![0, u32::MAX, 3]);
    let budget = mutate::barrier_loop_budget(wd[2]);
    assert_eq!(budget, 4096);
    // With the derived budget the original runs unchanged.
    assert_eq!(run(0, budget), (original.clone(), vec![0, budget, 3]));
    // `s > 0` → `1` never ends: stopped by the barrier watchdog, every work-item in the same
    // iteration (a non-uniform break would hang PoCL's barrier or garble the sums).
    let endless = ms
        .iter()
        .find(|m| {
            m.operator == Operator::Condition && m.original == "s > 0" && m.replacement == "1"
        })
        .expect("the loop-condition mutant");
    let (_, wd) = run(endless.number, budget);
    assert_eq!(wd[0], 2, "the barrier watchdog fired: {wd:?}");
    assert_eq!(wd[2], 0, "only the original records its need");
}

#[test]
fn a_local_array_only_ever_subscripted_turns_private_in_a_kernel_copy() {
    let src = "void fill(__local int* p) { p[0] = 1; }\n\
__kernel void a(__global int* out) {\n\
    __local int t[4];\n\
    t[get_local_id(0) & 3] = 2;\n\
    barrier(CLK_LOCAL_MEM_FENCE);\n\
    out[get_global_id(0)] = t [0] + t[1];\n\
}\n\
__kernel void b(__global int* out) {\n\
    __local int u[4];\n\
    fill(u);\n\
    barrier(CLK_LOCAL_MEM_FENCE);\n\
    out[get_global_id(0)] = u[0];\n\
}\n\
__kernel void c(__global int* out) {\n\
    __local int v[4];\n\
    fill(&v[1]);\n\
    out[get_global_id(0)] = v[1];\n\
}\n";
    let p = parse_program(src, "").expect("parses");
    let ms = mutate::find_mutants(&p, &MutateOptions::default());
    let local: Vec<(&str, bool)> = ms
        .iter()
        .filter(|m| m.operator == Operator::LocalToPrivate)
        .map(|m| (m.function.as_str(), m.in_schema))
        .collect();
    assert_eq!(local, vec![("a", true), ("b", false), ("c", false)]);
    let schema = mutate::schema(&p, &ms).expect("schema");
    let n = ms
        .iter()
        .find(|m| m.operator == Operator::LocalToPrivate && m.function == "a")
        .map(|m| m.number)
        .expect("a's mutant");
    let copy = &schema.launch_names[&n]["a"];
    assert!(
        schema.source.contains(&format!("__kernel void {copy}(")),
        "{}",
        schema.source
    );
}
