//! Trivial Compiler Equivalence with the real clang binary: mutants made by the mutation
//! operators are compiled at -O2 and judged by their optimised code, each verdict hand-checked
//! against the fixture's source.

use cltrap_kernel::mutate::{self, Mutant, MutateOptions, Operator};
use cltrap_kernel::tce::{self, TceError, TceSource, Verdict};
use cltrap_kernel::{parse_program, ParseOptions, Program};

mod common;
use common::{fixture, kernels_dir};

/// A parsed fixture, its mutants, and the verdict of each against the original.
struct Judged {
    mutants: Vec<Mutant>,
    verdicts: Vec<Verdict>,
}

impl Judged {
    fn of(name: &str) -> Judged {
        let p = parse_program(&fixture(name), "").expect("parses");
        let mutants: Vec<Mutant> = mutate::find_mutants(&p, &MutateOptions::default())
            .into_iter()
            .filter(|m| m.launch.is_none())
            .collect();
        let (original, digests) = digests(&p, &mutants);
        let verdicts = tce::verdicts(&original, &digests, &[]);
        Judged { mutants, verdicts }
    }

    /// Index of the mutant `original`→`replacement` by `op` on `line`.
    fn index(&self, op: Operator, line: u32, original: &str, replacement: &str) -> usize {
        self.mutants
            .iter()
            .position(|m| {
                m.operator == op
                    && m.line == line
                    && m.original == original
                    && m.replacement == replacement
            })
            .unwrap_or_else(|| panic!("no {op:?} {original:?} -> {replacement:?} on line {line}"))
    }

    fn verdict(&self, op: Operator, line: u32, original: &str, replacement: &str) -> &Verdict {
        &self.verdicts[self.index(op, line, original, replacement)]
    }
}

fn digests(
    p: &Program,
    mutants: &[Mutant],
) -> (tce::IrDigest, Vec<Result<tce::IrDigest, TceError>>) {
    let opts = ParseOptions::default();
    let mut jobs = vec![TceSource::new(p.source.clone(), "")];
    jobs.extend(
        mutants
            .iter()
            .map(|m| tce::mutant_source(p, m, &opts).expect("a source mutant")),
    );
    let mut all = tce::ir_digests(&jobs);
    let original = all.remove(0).expect("the original compiles");
    (original, all)
}

#[test]
fn mutants_the_optimiser_proves_equivalent_are_same_as_original_though_syntax_misses_them() {
    let j = Judged::of("tce_equivalent.cl");
    let only_after_optimisation = [
        // `a >= b ? a : b`: at a == b both arms are the same value; both are smax.
        (Operator::RelationalBoundary, 6, ">", ">="),
        // `a <= 0 ? -a : a`: at a == 0, -a == a; both are abs.
        (Operator::RelationalBoundary, 7, "<", "<="),
        // `scratch` is never read: any mutant of its initialiser is a dead store.
        (Operator::UnaryMinus, 8, "a * b", "-(a * b)"),
        (Operator::Arithmetic, 8, "*", "/"),
    ];
    for (op, line, from, to) in only_after_optimisation {
        let i = j.index(op, line, from, to);
        assert_eq!(
            j.verdicts[i],
            Verdict::SameAsOriginal,
            "{op:?} {from:?} -> {to:?} on line {line}"
        );
        assert_eq!(
            j.mutants[i].equivalent, None,
            "the syntactic rule already knew {from:?} -> {to:?}, pick another example"
        );
    }
    // The syntactic rule's own case is found too.
    assert_eq!(
        j.verdict(Operator::UnaryMinus, 9, "0", "-(0)"),
        &Verdict::SameAsOriginal
    );
}

#[test]
fn a_mutant_that_changes_behaviour_has_a_different_digest() {
    let j = Judged::of("tce_equivalent.cl");
    for (op, line, from, to) in [
        // max becomes min.
        (Operator::RelationalNegation, 6, ">", "<="),
        // five iterations instead of four.
        (Operator::RelationalBoundary, 10, "<", "<="),
        (Operator::Arithmetic, 12, "+", "-"),
        (
            Operator::IdOffset,
            3,
            "get_global_id(0)",
            "(get_global_id(0)+1)",
        ),
    ] {
        assert_eq!(
            j.verdict(op, line, from, to),
            &Verdict::Different,
            "{op:?} {from:?} -> {to:?} on line {line}"
        );
    }
    let p = parse_program(&fixture("tce_equivalent.cl"), "").expect("parses");
    let i = j.index(Operator::Arithmetic, 12, "+", "-");
    let (original, mutant) = digests(&p, &j.mutants[i..=i]);
    let mutant = mutant[0].as_ref().expect("compiles");
    assert_ne!(mutant.program, original.program);
    assert_ne!(
        mutant.kernels["tce_equivalent"],
        original.kernels["tce_equivalent"]
    );
}

#[test]
fn mutants_with_the_same_optimised_code_are_duplicates_of_the_first() {
    let j = Judged::of("tce_equivalent.cl");
    // `k >= 4` is false at k == 0: the loop never runs, as with the condition `0`.
    let never = j.index(Operator::Condition, 10, "k < 4", "0");
    assert_eq!(j.verdicts[never], Verdict::Different);
    assert_eq!(
        j.verdict(Operator::RelationalNegation, 10, "<", ">="),
        &Verdict::SameAsMutant(never)
    );
    // `a < 0 ? a : a` is `a`, as is `0 ? -a : a`.
    let plain = j.index(Operator::Condition, 7, "a < 0", "0");
    assert_eq!(
        j.verdict(Operator::UnaryMinus, 7, "-", ""),
        &Verdict::SameAsMutant(plain)
    );
    // Subtracting the maximum four times is adding its negation four times.
    let negated = j.index(Operator::UnaryMinus, 6, "a > b ? a : b", "-(a > b ? a : b)");
    assert_eq!(
        j.verdict(Operator::CompoundAssignment, 11, "+=", "-="),
        &Verdict::SameAsMutant(negated)
    );
}

#[test]
fn a_source_that_does_not_compile_is_a_typed_error_and_the_rest_of_the_batch_goes_on() {
    let good = fixture("tce_equivalent.cl");
    let broken = good.replace("int sum = 0;", "int sum = undefined_name;");
    let jobs = [
        TceSource::new(good.clone(), ""),
        TceSource::new(broken, ""),
        TceSource::new(good, "-D UNUSED=1"),
    ];
    let r = tce::ir_digests(&jobs);
    assert_eq!(r.len(), 3);
    let (Ok(a), Ok(c)) = (&r[0], &r[2]) else {
        panic!("the good sources must compile: {r:?}")
    };
    assert_eq!(a, c, "an unused macro changes no code");
    match &r[1] {
        Err(e @ TceError::Compile { message, errors }) => {
            assert!(message.starts_with("program.cl:9:"), "{message}");
            assert!(message.contains("undefined_name"), "{message}");
            assert_eq!(*errors, 1);
            assert!(
                e.to_string()
                    .starts_with("clang does not compile the source: program.cl:9:"),
                "{e}"
            );
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

#[test]
fn build_option_macros_are_honoured() {
    let src = fixture("tce_options.cl");
    let r = tce::ir_digests(&[
        TceSource::new(src.clone(), "-D N=4"),
        TceSource::new(src.clone(), "-DN=4 -cl-nv-verbose"),
        TceSource::new(src.clone(), "-D N=5"),
        TceSource::new(src, ""),
    ]);
    let four = r[0].as_ref().expect("compiles with N=4");
    assert_eq!(
        Some(four),
        r[1].as_ref().ok(),
        "same macro, other spelling, vendor option"
    );
    let five = r[2].as_ref().expect("compiles with N=5");
    assert_ne!(four.program, five.program);
    assert!(
        matches!(&r[3], Err(TceError::Compile { message, .. }) if message.contains("'N'")),
        "{:?}",
        r[3]
    );
}

#[test]
fn include_paths_from_the_build_options_are_searched() {
    let src = fixture("with_include.cl");
    let with = format!("-I {}/include -D SCALE=3", kernels_dir());
    assert!(tce::ir_digest(&TceSource::new(src.clone(), &with)).is_ok());
    assert!(matches!(
        tce::ir_digest(&TceSource::new(src, "-D SCALE=3")),
        Err(TceError::Compile { message, .. }) if message.contains("helpers.h")
    ));
}

#[test]
fn each_kernel_digest_covers_the_helpers_it_calls_and_only_those() {
    let p = parse_program(&fixture("tce_two_kernels.cl"), "").expect("parses");
    let mutants = mutate::find_mutants(&p, &MutateOptions::default());
    let pick = |line: u32, from: &str, to: &str| {
        mutants
            .iter()
            .find(|m| m.line == line && m.original == from && m.replacement == to)
            .unwrap_or_else(|| panic!("no {from:?} -> {to:?} on line {line}"))
            .clone()
    };
    let in_helper = pick(2, "+", "-");
    let in_dead_helper = pick(3, "*", "/");
    let in_second = pick(10, "-", "+");
    let helper_text =
        tce::mutant_source(&p, &in_helper, &ParseOptions::default()).expect("a source mutant");
    for job in [TceSource::new(p.source.clone(), ""), helper_text] {
        let ir = tce::optimised_ir(&job).expect("compiles");
        assert!(
            ir.contains("call spir_func i32 @shifted("),
            "`first` must still call the helper, else this test proves nothing:\n{ir}"
        );
    }
    let (original, d) = digests(&p, &[in_helper, in_dead_helper, in_second]);
    let d: Vec<tce::IrDigest> = d.into_iter().map(|r| r.expect("compiles")).collect();
    let first = ["first".to_string()];
    let second = ["second".to_string()];

    // `shifted` stays a call in `first`; its body is part of `first`'s digest all the same.
    assert!(!d[0].same_code(&original, &first));
    assert!(d[0].same_code(&original, &second));
    // No kernel calls `never_called`: the module changed, no kernel's code did.
    assert!(d[1].same_code(&original, &[]));
    // A mutant of `second` leaves `first` alone.
    assert!(d[2].same_code(&original, &first));
    assert!(!d[2].same_code(&original, &second));
    assert!(!d[2].same_code(&original, &[]));
    assert_eq!(
        tce::verdicts(&original, &[Ok(d[2].clone())], &first),
        [Verdict::SameAsOriginal]
    );
}

#[test]
fn every_source_mutant_of_the_mix_compiles_and_launch_and_atomic_mutants_are_left_out() {
    let p = parse_program(&fixture("mutate_mix.cl"), "").expect("parses");
    let all = mutate::find_mutants(&p, &MutateOptions::default());
    let opts = ParseOptions::default();
    let (kept, left): (Vec<&Mutant>, Vec<&Mutant>) = all
        .iter()
        .partition(|m| tce::mutant_source(&p, m, &opts).is_some());
    assert!(left
        .iter()
        .all(|m| m.launch.is_some() || m.operator == Operator::AtomicPlain));
    assert!(left.iter().any(|m| m.launch.is_some()));
    assert!(left.iter().any(|m| m.operator == Operator::AtomicPlain));
    let jobs: Vec<TceSource> = kept
        .iter()
        .filter_map(|m| tce::mutant_source(&p, m, &opts))
        .collect();
    for (m, r) in kept.iter().zip(tce::ir_digests(&jobs)) {
        assert!(r.is_ok(), "{:?} on line {}: {r:?}", m.operator, m.line);
    }
}

#[test]
fn clang_is_found_with_its_version_and_a_missing_one_is_a_typed_error() {
    let clang = tce::clang_available().expect("clang on this machine");
    assert!(clang.major >= 14, "{clang:?}");
    assert_eq!(tce::describe(&clang), format!("clang {}, -O2", clang.major));
    let missing = tce::clang_at(std::path::Path::new("/nonexistent/clang-99"));
    match missing {
        Err(e @ TceError::NoClang { .. }) => {
            assert!(e.to_string().contains("CLTRAP_CLANG"), "{e}");
        }
        other => panic!("expected NoClang, got {other:?}"),
    }
}
