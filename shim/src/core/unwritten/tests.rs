//! The scan against programs that read, write, or hide a write from a token scan.

use super::{unwritten, Headers};

fn check(src: &str, kernel: &str, params: &[&str]) -> Vec<bool> {
    unwritten(&[src.as_bytes()], None, "", kernel, params)
}

/// Rodinia's Gaussian elimination (`gaussianElim_kernels.cl`, as the project's bench
/// carries it): Fan1 writes only `m`, Fan2 writes `a` and `b` and only reads `m`.
#[test]
fn rodinia_gaussian_elimination() {
    let src = "__kernel void Fan1(__global float *m_dev, __global float *a_dev,\n\
               __global float *b_dev, const int size, const int t) {\n\
               int globalId = get_global_id(0);\n\
               if (globalId < size-1-t) {\n\
               *(m_dev + size * (globalId + t + 1)+t) = *(a_dev + size * (globalId + t + 1) + t) / *(a_dev + size * t + t);\n\
               }\n}\n\
               __kernel void Fan2(__global float *m_dev, __global float *a_dev,\n\
               __global float *b_dev, const int size, const int t) {\n\
               int globalId = get_global_id(0); int globalIdx = get_global_id(0);\n\
               int globalIdy = get_global_id(1);\n\
               if (globalIdx < size-1-t && globalIdy < size-t) {\n\
               a_dev[size*(globalIdx+1+t)+(globalIdy+t)] -= m_dev[size*(globalIdx+1+t)+t] * a_dev[size*t+(globalIdy+t)];\n\
               if(globalIdy == 0){\n\
               b_dev[globalIdx+1+t] -= m_dev[size*(globalIdx+1+t)+(globalIdy+t)] * b_dev[t];\n\
               }\n}\n}\n";
    let p = ["m_dev", "a_dev", "b_dev", "size", "t"];
    // Fan1 reads and writes through `*(p + …)`.
    assert_eq!(check(src, "Fan1", &p), [false, true, true, false, false]);
    assert_eq!(check(src, "Fan2", &p), [true, false, false, false, false]);
}

#[test]
fn indexed_reads_count_and_every_kind_of_write_does_not() {
    let reads = "__kernel void k(__global float *in, __global float4 *v, __global float *out) {\n\
                 int i = get_global_id(0);\n\
                 float x = in[i] + (in[i+1]) * -in[i-1] ? in[0] : in[1];\n\
                 float4 y = v[i]; float z = v[i].x + v[i].s0 + vload4(0, in + 4 * i).y;\n\
                 out[i] = x + max(in[i], 0.0f) + (float)in[2] + sizeof(in[0]) + *in + *(in + i * 2);\n}";
    assert_eq!(check(reads, "k", &["in", "v", "out"]), [true, true, false]);
    for write in [
        "in[i] = 1;",
        "in[i] += 1;",
        "in[i]++;",
        "++in[i];",
        "--in[i];",
        "(in[i]) = 2;",
        "((in[i])) *= 2;",
        "in[i] <<= 1;",
        "*in = 3;",
        "*(in + i) = 3;",
        "*(in + i) += 3;",
        "(*in)++;",
        "atomic_inc(&(in[i]));",
        "++(in[i]);",
        "*(in + i++) = 3;",
        "__global float *q = in; q[i] = 1;",
        "helper(in, i);",
        "vstore4(x, 0, in);",
        "atomic_add((__global int *)&in[i], 1);",
        "atomic_inc(in + i);",
        "v[i].x = 1;",
        "v[i].s01 = (float2)(1);",
        "v[i] = 0;",
        "SET(in[i]);",
        "vload4(0, in = in + 1);",
        "in[i] OPERATOR 3;",
    ] {
        let src = format!(
            "#define SET(x) x = 0\n#define OPERATOR =\n\
             void helper(__global float *p, int i) {{ p[i] = 0; }}\n\
             __kernel void k(__global float *in, __global float4 *v) {{\n\
             int i = get_global_id(0); float4 x = 0;\n{write}\n}}"
        );
        let got = check(&src, "k", &["in", "v"]);
        assert!(!(got[0] && got[1]), "{write}: {got:?}");
    }
}

#[test]
fn macros_are_expanded_or_answer_may_write() {
    let kernel = |body: &str| {
        format!("__kernel void k(__global float *in, __global float *out) {{\n{body}\nout[0] = in[0];\n}}")
    };
    let p = ["in", "out"];
    assert_eq!(check(&kernel(""), "k", &p), [true, false]);
    // Expanded: a macro defined once before the kernel, its writes seen through it.
    for (pre, use_) in [
        ("#define W in[1] = 0\n", "W;"),
        ("#define W \\\n in[1] = 0\n", "W;"),
        ("#define SET(x) x = 0\n", "SET(in[2]);"),
        ("#define AT(p, i) (p)[i]\n", "AT(in, 2) += 1;"),
        ("#define PTR(p) p\n", "__global float *q = PTR(in);"),
    ] {
        let src = format!("{pre}{}", kernel(use_));
        assert_eq!(check(&src, "k", &p), [false, false], "{pre}{use_}");
    }
    // clpeak's bandwidth kernels read through nested macros that take the pointer.
    // Macros that parenthesise their parameters.
    let paren = format!(
        "#define AT(p, i) ((p)[i])\n{}",
        kernel("out[1] = AT(in, 2) + *((in)) + *((in) + 1);")
    );
    assert_eq!(check(&paren, "k", &p), [true, false]);
    for write in [
        "(in)[0] = 1;",
        "((in))[0]++;",
        "*((in)) = 1;",
        "f((in));",
        "__global float *q = (in);",
        "(float *)(in);",
    ] {
        assert_eq!(check(&kernel(write), "k", &p), [false, false], "{write}");
    }
    let clpeak = "#define FETCH_2(sum, id, A, jumpBy) sum += A[id]; id += jumpBy; sum += A[id]; id += jumpBy;\n\
                  #define FETCH_4(sum, id, A, jumpBy) FETCH_2(sum, id, A, jumpBy); FETCH_2(sum, id, A, jumpBy);\n\
                  __kernel void bw(__global float *A, __global float *B) {\n\
                  int id = get_global_id(0); float sum = 0;\n\
                  for (int i = 0; i < 4; i++) { FETCH_4(sum, id, A, get_local_size(0)); }\n\
                  B[get_global_id(0)] = sum;\n}";
    assert_eq!(check(clpeak, "bw", &["A", "B"]), [true, false]);
    // As clpeak writes it, `#undef` first: still expanded.
    let undef_first = format!("#undef FETCH_2\n{clpeak}");
    assert_eq!(check(&undef_first, "bw", &["A", "B"]), [true, false]);
    // A definition under `#if` may be the one that counts, or not: not expanded.
    let guarded = format!(
        "#if defined(X)\n#define FETCH_2(sum, id, A, jumpBy) sum += A[id];\n#endif\n{clpeak}"
    );
    assert_eq!(check(&guarded, "bw", &["A", "B"]), [false, false]);
    // Not expanded, so "may write": defined after the kernel, twice, or undefined; with
    // `#` or `...`; from the options; a header (`#include` unknown); token pasting.
    for src in [
        format!("{}\n#define W in[1] = 0\n", kernel("")),
        format!("#define W 1\n#define W in[1] = 0\n{}", kernel("W;")),
        format!(
            "#if A\n#define W 1\n#else\n#define W in[1] = 0\n#endif\n{}",
            kernel("W;")
        ),
        format!(
            "#define W 1\n#undef W\n#define W in[1] = 0\n{}",
            kernel("W;")
        ),
        format!("#define W in[1] = 0\n#undef W\n{}", kernel("")),
        format!("#define S(x) #x\n#define N in\n{}", kernel("S(in[0]);")),
        format!("#define V(...) __VA_ARGS__ = 0\n{}", kernel("V(in[0]);")),
        format!("#define F G\n#define G(x) x = 0\n{}", kernel("F(in[0]);")),
        format!("#define in in\n{}", kernel("")),
        format!("%:define W in[0] = 1\n{}", kernel("W;")),
        format!("#define k k2\n{}", kernel("")),
        format!("#include \"defs.h\"\n{}", kernel("")),
        format!("#define CAT(a, b) a ## b\n{}", kernel("")),
    ] {
        let got = check(&src, "k", &p);
        assert!(!got[0], "{src}: {got:?}");
    }
    let with_option = unwritten(&[kernel("").as_bytes()], None, "-D W=in[1]", "k", &p);
    assert_eq!(with_option, [false, false]);
    let cpp = unwritten(&[kernel("").as_bytes()], None, "-cl-std=CLC++", "k", &p);
    assert_eq!(cpp, [false, false]);
    let opt = unwritten(
        &[kernel("Z(in[0]);").as_bytes()],
        None,
        "-DZ(x)=x=0",
        "k",
        &p,
    );
    assert_eq!(opt, [false, false]);
    // An invocation whose arguments never close, or with too few: give up.
    for src in [
        format!("#define F(a, b) a\n{}", kernel("F(in[0]);")),
        "#define F(a) a\n__kernel void k(__global float *in, __global float *out) { out[0] = F(in[0]; }".to_string(),
    ] {
        assert_eq!(check(&src, "k", &p), [false, false], "{src}");
    }
}

/// `cases/`: programs that really write a parameter in ways a naive scan misses (each write
/// confirmed with clang-15); the scan must answer "may write" for every one, or the capture
/// would record stale contents.
#[test]
fn programs_that_really_write_answer_may_write() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core/unwritten/cases");
    let mut checked = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("cases")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "cl"))
    {
        let src = std::fs::read(path).expect("case");
        let meta = std::fs::read_to_string(path.with_extension("cl.meta")).unwrap_or_default();
        let field = |key: &str| {
            meta.lines()
                .find_map(|l| l.strip_prefix(key))
                .map(str::to_string)
        };
        let options = field("options=").unwrap_or_default();
        let written = field("written=").unwrap_or_else(|| "in".into());
        let header_texts: Option<Vec<Vec<u8>>> = field("headers=").map(|h| {
            h.split(',')
                .map(|n| std::fs::read(dir.join(n)).expect("header"))
                .collect()
        });
        let headers = header_texts.as_ref().map(|t| Headers {
            texts: t.iter().map(Vec::as_slice).collect(),
            directives: std::iter::once(&src)
                .chain(t)
                .map(|x| String::from_utf8_lossy(x).matches("#include").count())
                .sum(),
        });
        let got = unwritten(&[&src], headers.as_ref(), &options, "k", &[&written]);
        assert_eq!(got, [false], "{} writes {written}", path.display());
        checked += 1;
    }
    assert!(checked >= 30, "{checked} cases");
}

/// With the headers given, an `#include` no longer blocks; a header's macro that names
/// the parameter, or a kernel defined in a header, are read as if in the program.
#[test]
fn included_headers_are_read_with_the_program() {
    let with_header = |main: &[u8], header: &[u8], kernel: &str| {
        let headers = Headers {
            texts: vec![header],
            directives: 1,
        };
        unwritten(&[main], Some(&headers), "", kernel, &["in", "out"])
    };
    let main = b"#include \"defs.h\"\n\
                __kernel void k(__global float *in, __global float *out) { out[0] = SCALE * in[0]; }";
    assert_eq!(
        with_header(main, b"#define SCALE 2.0f\n", "k"),
        [true, false]
    );
    assert_eq!(
        with_header(main, b"#define SCALE (in[1] = 2.0f)\n", "k"),
        [false, false]
    );
    let in_header = b"__kernel void h(__global float *in, __global float *out) { out[0] = in[0]; }";
    assert_eq!(
        with_header(b"#include \"h.h\"\n", in_header, "h"),
        [true, false]
    );
}

#[test]
fn several_source_strings_comments_and_literals() {
    let a = "// in[0] = 1 in a comment\n/* in[0] = 2; */\n__kernel void k(__global float *in,";
    let b = " __global float *out) { out[0] = in[0]; printf(\"in[0] = %f\", in[0]); }";
    assert_eq!(
        unwritten(&[a.as_bytes(), b.as_bytes()], None, "", "k", &["in", "out"]),
        [true, false]
    );
}

#[test]
fn unknown_kernels_and_names_answer_may_write() {
    let src = "__kernel void k(__global float *in) { float x = in[0]; }";
    assert_eq!(check(src, "other", &["in"]), [false]);
    assert_eq!(check(src, "k", &["", "nope"]), [false, false]);
    let twice = format!("{src}\n{src}");
    assert_eq!(check(&twice, "k", &["in"]), [false]);
    assert_eq!(
        check(
            "__kernel void k(__global float *in) { /* never",
            "k",
            &["in"]
        ),
        [false]
    );
    // A member of the same name is not the parameter.
    let member = "typedef struct { float in[4]; } S;\n\
                  __kernel void k(__global float *in, __global S *s) { s->in[0] = in[0]; }";
    assert_eq!(check(member, "k", &["in", "s"]), [true, false]);
    // Attributes between the parameters and the body.
    let attr = "__kernel void k(__global float *in, __global float *o) __attribute__((reqd_work_group_size(1,1,1))) { o[0] = in[0]; }";
    assert_eq!(check(attr, "k", &["in", "o"]), [true, false]);
}
