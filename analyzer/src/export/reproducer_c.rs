//! `cltrap export CAP ID --c DIR`: one launch as a standalone C host program.
//!
//! The program needs nothing of cltrap: `cc main.c -o repro -lOpenCL && ./repro [PLATFORM
//! [DEVICE]]`. It rebuilds the program from `program.cl` (headers inlined) with the captured
//! options (a linked program: each `unit<I>.cl` compiled with its own options and headers, then
//! linked), recreates every memory object from `mem<M>.bin` (aliases share one object,
//! sub-buffers are cut from their parent, images keep their format), sets every argument,
//! runs the launch, reads every buffer and image argument back and compares it bit for bit
//! with `arg<I>.expected.bin`. Exit status: 0 all outputs match, 1 a mismatch (the first
//! differing element of each differing argument is printed), 2 it could not run.
//!
//! The launch is described by [`Plan`], shared with the pyopencl variant
//! ([`super::reproducer_py`]) so both restore exactly the same objects.

use super::plan::{plan, write_data, MemObject, Plan, PlanArg};
use super::{c_comment, write_file, ExportError};
use cltrap_capture::{Capture, ImageRecord};
use std::fmt::Write;
use std::path::Path;

/// A Rust string as a C string literal: quotes, backslashes and `?` (trigraphs, under
/// `-std=c99`) escaped, bytes outside printable ASCII as octal escapes. Every string of a
/// capture reaches generated C code only through this.
pub(crate) fn c_string(s: &str) -> String {
    let mut o = String::from("\"");
    for b in s.bytes() {
        match b {
            b'"' => o.push_str("\\\""),
            b'\\' => o.push_str("\\\\"),
            b'?' => o.push_str("\\?"),
            b'\n' => o.push_str("\\n"),
            0x20..=0x7e => o.push(b as char),
            _ => o.push_str(&format!("\\{b:03o}")),
        }
    }
    o.push('"');
    o
}

fn c_bytes(b: &[u8]) -> String {
    if b.is_empty() {
        return "{0}".into();
    }
    let items: Vec<String> = b.iter().map(|x| format!("0x{x:02x}")).collect();
    format!("{{{}}}", items.join(", "))
}

fn c_sizes(v: &[u64]) -> String {
    let items: Vec<String> = v.iter().map(|x| format!("{x}")).collect();
    format!("{{{}}}", items.join(", "))
}

/// The fixed part of every generated `main.c`: loading files, choosing the device, comparing.
const PRELUDE: &str = r#"#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char data_dir[4096] = ".";

static void fail(const char *what, cl_int err) {
    fprintf(stderr, "repro: %s failed with OpenCL error %d\n", what, (int)err);
    exit(2);
}

#define CHECK(call) do { cl_int e_ = (call); if (e_ != CL_SUCCESS) fail(#call, e_); } while (0)

/* Reads data_dir/name; its size must be `expect` bytes unless expect is (size_t)-1. */
static unsigned char *load(const char *name, size_t expect, size_t *got_size) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", data_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "repro: cannot open %s (run from the reproducer's directory or set REPRO_DATA)\n", path); exit(2); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n < 0 || (expect != (size_t)-1 && (size_t)n != expect)) {
        fprintf(stderr, "repro: %s holds %ld bytes, expected %lu\n", path, n, (unsigned long)expect);
        exit(2);
    }
    unsigned char *b = malloc((size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) { fprintf(stderr, "repro: cannot read %s\n", path); exit(2); }
    b[n] = 0;
    fclose(f);
    if (got_size) *got_size = (size_t)n;
    return b;
}

/* Chooses among `count` names: `want` NULL or empty = the first, all digits = that index,
   otherwise the first name containing `want`. */
static int choose(const char *want, char names[][256], unsigned count) {
    if (!want || !*want) return count ? 0 : -1;
    char *end;
    unsigned long i = strtoul(want, &end, 10);
    if (*end == 0) return i < count ? (int)i : -1;
    for (unsigned k = 0; k < count; k++)
        if (strstr(names[k], want)) return (int)k;
    return -1;
}

static void print_element(const unsigned char *p, size_t size, char kind) {
    if (kind == 'f' && size == 4) { float v; memcpy(&v, p, 4); printf("%.9g", (double)v); return; }
    if (kind == 'f' && size == 8) { double v; memcpy(&v, p, 8); printf("%.17g", v); return; }
    if ((kind == 'i' || kind == 'u') && size <= 8) {
        unsigned long long u = 0;
        memcpy(&u, p, size);
        if (kind == 'i' && size < 8 && (u >> (size * 8 - 1)) & 1) u |= ~0ULL << (size * 8);
        if (kind == 'i') printf("%lld", (long long)u); else printf("%llu", u);
        return;
    }
    printf("0x");
    for (size_t k = 0; k < size; k++) printf("%02x", p[k]);
}

/* 0 when equal; otherwise prints the first differing element and returns 1. */
static int compare(const char *label, const unsigned char *got, const unsigned char *want,
                   size_t n, size_t element, char kind) {
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            size_t e = i / element, at = e * element;
            size_t size = at + element <= n ? element : n - at;
            printf("MISMATCH %s: first difference at element %lu (byte %lu): expected ",
                   label, (unsigned long)e, (unsigned long)i);
            print_element(want + at, size, kind);
            printf(", got ");
            print_element(got + at, size, kind);
            printf("\n");
            return 1;
        }
    }
    printf("ok %s (%lu bytes)\n", label, (unsigned long)n);
    return 0;
}

static void set_data_dir(const char *argv0) {
    const char *env = getenv("REPRO_DATA");
    if (env && *env) { snprintf(data_dir, sizeof data_dir, "%s", env); return; }
    const char *slash = strrchr(argv0, '/');
    if (slash) {
        size_t n = (size_t)(slash - argv0);
        if (n >= sizeof data_dir) n = sizeof data_dir - 1;
        memcpy(data_dir, argv0, n);
        data_dir[n] = 0;
        /* Built elsewhere and run from the data directory: fall back to ".". */
        char probe[8192];
        snprintf(probe, sizeof probe, "%s/program.cl", data_dir);
        FILE *f = fopen(probe, "rb");
        if (f) fclose(f); else snprintf(data_dir, sizeof data_dir, ".");
    }
}
"#;

fn image_desc_c(id: u64, flags: u64, image: &ImageRecord) -> String {
    let (w, h, d) = crate::executor::image_region(image);
    format!(
        "    cl_image_format fmt{id} = {{0x{:x}, 0x{:x}}};\n    cl_image_desc desc{id};\n    memset(&desc{id}, 0, sizeof desc{id});\n    desc{id}.image_type = 0x{:x};\n    desc{id}.image_width = {};\n    desc{id}.image_height = {};\n    desc{id}.image_depth = {};\n    desc{id}.image_array_size = {};\n    cl_mem m{id} = clCreateImage(ctx, 0x{:x}, &fmt{id}, &desc{id}, NULL, &err);\n    if (err != CL_SUCCESS) fail(\"clCreateImage (memory object {id})\", err);\n    size_t region{id}[3] = {{{w}, {h}, {d}}};\n",
        image.channel_order,
        image.channel_data_type,
        image.image_type,
        image.width,
        image.height,
        image.depth,
        image.array_size,
        flags,
    )
}

/// Prints the build log of `prog` and fails, for a failed compile, build or link.
const BUILD_FAILED: &str = r#"static void build_failed(cl_program prog, cl_device_id dev, const char *what, cl_int err) {
    size_t n = 0;
    if (prog && clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS) {
        char *log = malloc(n + 1);
        if (log && clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL) == CL_SUCCESS) {
            log[n] = 0;
            fprintf(stderr, "%s\n", log);
        }
    }
    fail(what, err);
}
"#;

fn build_from_source_c(o: &mut String, plan: &Plan) {
    o.push_str(
        r#"    size_t source_size = 0;
    const char *source = (const char *)load("program.cl", (size_t)-1, &source_size);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &source, &source_size, &err);
    if (err != CL_SUCCESS) fail("clCreateProgramWithSource", err);
"#,
    );
    let _ = writeln!(
        o,
        "    err = clBuildProgram(prog, 1, &dev, {}, NULL, NULL);\n    if (err != CL_SUCCESS) build_failed(prog, dev, \"clBuildProgram\", err);",
        c_string(&plan.options)
    );
}

/// `clCompileProgram` of every unit with its headers, then `clLinkProgram`, as the
/// application did.
fn build_linked_c(o: &mut String, plan: &Plan) {
    let n = plan.units.len();
    let _ = writeln!(o, "    cl_program units[{n}];");
    for (i, u) in plan.units.iter().enumerate() {
        let _ = writeln!(
            o,
            "    {{\n        size_t len = 0;\n        const char *text = (const char *)load(\"unit{i}.cl\", (size_t)-1, &len);\n        units[{i}] = clCreateProgramWithSource(ctx, 1, &text, &len, &err);\n        if (err != CL_SUCCESS) fail(\"clCreateProgramWithSource (unit {i})\", err);"
        );
        let h = u.headers.len();
        if h > 0 {
            let _ = writeln!(
                o,
                "        cl_program headers[{h}];\n        const char *names[{h}];"
            );
        }
        for (j, (name, _)) in u.headers.iter().enumerate() {
            let _ = writeln!(
                o,
                "        size_t hlen{j} = 0;\n        const char *htext{j} = (const char *)load(\"unit{i}.header{j}.h\", (size_t)-1, &hlen{j});\n        headers[{j}] = clCreateProgramWithSource(ctx, 1, &htext{j}, &hlen{j}, &err);\n        if (err != CL_SUCCESS) fail(\"clCreateProgramWithSource (header)\", err);\n        names[{j}] = {};",
                c_string(name)
            );
        }
        let _ = writeln!(
            o,
            "        err = clCompileProgram(units[{i}], 1, &dev, {}, {h}, {}, {}, NULL, NULL);\n        if (err != CL_SUCCESS) build_failed(units[{i}], dev, \"clCompileProgram (unit {i})\", err);\n    }}",
            c_string(&u.options),
            if h == 0 { "NULL" } else { "headers" },
            if h == 0 { "NULL" } else { "names" },
        );
    }
    let _ = writeln!(
        o,
        "    cl_program prog = clLinkProgram(ctx, 1, &dev, {}, {n}, units, NULL, NULL, &err);\n    if (err != CL_SUCCESS) build_failed(prog, dev, \"clLinkProgram\", err);",
        c_string(&plan.options)
    );
}

/// The generated `main.c` for `plan`.
pub fn main_c(plan: &Plan) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "/* Standalone reproducer of launch {} (kernel {}) captured by cltrap on {}.\n *\n *   cc main.c -o repro -lOpenCL && ./repro [PLATFORM [DEVICE]]\n *\n * PLATFORM and DEVICE (or $REPRO_PLATFORM, $REPRO_DEVICE) are an index or part of a name;\n * the data files are read from the executable's directory, or $REPRO_DATA.\n * Exit status: 0 every output matches the recording, 1 a mismatch, 2 could not run.\n */",
        plan.id,
        c_comment(&plan.kernel),
        c_comment(&plan.captured_on)
    );
    o.push_str(PRELUDE);
    o.push_str(BUILD_FAILED);
    o.push_str(
        "\nint main(int argc, char **argv) {\n    cl_int err;\n    set_data_dir(argv[0]);\n",
    );
    o.push_str(
        r#"    const char *want_platform = argc > 1 ? argv[1] : getenv("REPRO_PLATFORM");
    const char *want_device = argc > 2 ? argv[2] : getenv("REPRO_DEVICE");
    cl_platform_id platforms[16];
    cl_uint np = 0;
    CHECK(clGetPlatformIDs(16, platforms, &np));
    if (np > 16) np = 16;
    char pnames[16][256];
    for (cl_uint i = 0; i < np; i++)
        CHECK(clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, 256, pnames[i], NULL));
    int pi = choose(want_platform, pnames, np);
    if (pi < 0) { fprintf(stderr, "repro: no OpenCL platform matches %s\n", want_platform ? want_platform : "(any)"); return 2; }
    cl_device_id devices[64];
    cl_uint nd = 0;
    CHECK(clGetDeviceIDs(platforms[pi], CL_DEVICE_TYPE_ALL, 64, devices, &nd));
    if (nd > 64) nd = 64;
    char dnames[64][256];
    for (cl_uint i = 0; i < nd; i++)
        CHECK(clGetDeviceInfo(devices[i], CL_DEVICE_NAME, 256, dnames[i], NULL));
    int di = choose(want_device, dnames, nd);
    if (di < 0) { fprintf(stderr, "repro: no device matches %s on %s\n", want_device ? want_device : "(any)", pnames[pi]); return 2; }
    cl_device_id dev = devices[di];
"#,
    );
    let _ = writeln!(
        o,
        "    printf(\"%s on %s (%s)\\n\", {}, dnames[di], pnames[pi]);",
        c_string(&format!("launch {} ({})", plan.id, plan.kernel))
    );
    for n in &plan.notes {
        let _ = writeln!(
            o,
            "    printf(\"%s\\n\", {});",
            c_string(&format!("note: {n}"))
        );
    }
    o.push_str(
        r#"    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (err != CL_SUCCESS) fail("clCreateContext", err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    if (err != CL_SUCCESS) fail("clCreateCommandQueue", err);
"#,
    );
    if plan.units.is_empty() {
        build_from_source_c(&mut o, plan);
    } else {
        build_linked_c(&mut o, plan);
    }
    let _ = writeln!(
        o,
        "    cl_kernel k = clCreateKernel(prog, {}, &err);\n    if (err != CL_SUCCESS) fail(\"clCreateKernel\", err);",
        c_string(&plan.kernel)
    );
    o.push_str("    size_t zero3[3] = {0, 0, 0};\n    (void)zero3;\n");
    for obj in &plan.objects {
        match obj {
            MemObject::Buffer { id, flags, size } => {
                let _ = writeln!(
                    o,
                    "    cl_mem m{id} = clCreateBuffer(ctx, 0x{:x}, {}, NULL, &err);\n    if (err != CL_SUCCESS) fail(\"clCreateBuffer (memory object {id})\", err);",
                    *flags,
                    (*size).max(1)
                );
                if *size > 0 {
                    let _ = writeln!(
                        o,
                        "    CHECK(clEnqueueWriteBuffer(q, m{id}, CL_TRUE, 0, {size}, load(\"mem{id}.bin\", {size}, NULL), 0, NULL, NULL));"
                    );
                }
            }
            MemObject::SubBuffer {
                id,
                parent,
                origin,
                size,
                flags,
            } => {
                let _ = writeln!(
                    o,
                    "    cl_buffer_region r{id} = {{{origin}, {size}}};\n    cl_mem m{id} = clCreateSubBuffer(m{parent}, 0x{:x}, CL_BUFFER_CREATE_TYPE_REGION, &r{id}, &err);\n    if (err != CL_SUCCESS) fail(\"clCreateSubBuffer (memory object {id})\", err);",
                    *flags
                );
            }
            MemObject::Image { id, flags, image } => {
                o.push_str(&image_desc_c(*id, *flags, image));
                let size = crate::executor::image_bytes(image);
                let _ = writeln!(
                    o,
                    "    CHECK(clEnqueueWriteImage(q, m{id}, CL_TRUE, zero3, region{id}, 0, 0, load(\"mem{id}.bin\", {size}, NULL), 0, NULL, NULL));"
                );
            }
        }
    }
    for (i, a) in plan.args.iter().enumerate() {
        match a {
            PlanArg::Bytes(b) => {
                let _ = writeln!(
                    o,
                    "    static const unsigned char a{i}[] = {};\n    CHECK(clSetKernelArg(k, {i}, {}, a{i}));",
                    c_bytes(b),
                    b.len()
                );
            }
            PlanArg::Local(n) => {
                let _ = writeln!(o, "    CHECK(clSetKernelArg(k, {i}, {n}, NULL));");
            }
            PlanArg::Null => {
                let _ = writeln!(
                    o,
                    "    CHECK(clSetKernelArg(k, {i}, sizeof(cl_mem), NULL));"
                );
            }
            PlanArg::Mem(m) => {
                let _ = writeln!(
                    o,
                    "    CHECK(clSetKernelArg(k, {i}, sizeof(cl_mem), &m{m}));"
                );
            }
            PlanArg::Sampler {
                normalized,
                addressing,
                filter,
            } => {
                let _ = writeln!(
                    o,
                    "    cl_sampler s{i} = clCreateSampler(ctx, {}, 0x{addressing:x}, 0x{filter:x}, &err);\n    if (err != CL_SUCCESS) fail(\"clCreateSampler\", err);\n    CHECK(clSetKernelArg(k, {i}, sizeof(cl_sampler), &s{i}));",
                    if *normalized { "CL_TRUE" } else { "CL_FALSE" }
                );
            }
        }
    }
    let _ = writeln!(o, "    size_t global[] = {};", c_sizes(&plan.global_size));
    let local = match &plan.local_size {
        Some(l) => {
            let _ = writeln!(o, "    size_t local[] = {};", c_sizes(l));
            "local"
        }
        None => "NULL",
    };
    let offset = match &plan.global_offset {
        Some(off) => {
            let _ = writeln!(o, "    size_t offset[] = {};", c_sizes(off));
            "offset"
        }
        None => "NULL",
    };
    let _ = writeln!(
        o,
        "    CHECK(clEnqueueNDRangeKernel(q, k, {}, {offset}, global, {local}, 0, NULL, NULL));\n    CHECK(clFinish(q));\n    int mismatches = 0;",
        plan.work_dim
    );
    for (c, _) in &plan.checks {
        let id = c.mem;
        let read = match plan.objects.iter().find(|ob| matches!(ob, MemObject::Image { id: x, .. } if *x == id)) {
            Some(_) => format!("clEnqueueReadImage(q, m{id}, CL_TRUE, zero3, region{id}, 0, 0, got, 0, NULL, NULL)"),
            None => format!("clEnqueueReadBuffer(q, m{id}, CL_TRUE, 0, {}, got, 0, NULL, NULL)", c.size),
        };
        let _ = writeln!(
            o,
            "    {{\n        unsigned char *got = malloc({} + 1);\n        if (!got) fail(\"malloc\", 0);\n        CHECK({read});\n        unsigned char *want = load(\"{}\", {}, NULL);\n        mismatches += compare({}, got, want, {}, {}, '{}');\n        free(got);\n        free(want);\n    }}",
            c.size,
            c.file,
            c.size,
            c_string(&c.label),
            c.size,
            c.element,
            c.kind.letter()
        );
    }
    for u in &plan.unchecked {
        let _ = writeln!(
            o,
            "    printf(\"%s\\n\", {});",
            c_string(&format!("not compared: {u}"))
        );
    }
    o.push_str(
        r#"    if (mismatches) {
        printf("MISMATCH: %d output(s) differ from the recording\n", mismatches);
        return 1;
    }
    printf("ok: every output matches the recording\n");
    return 0;
}
"#,
    );
    o
}

/// `cltrap export CAP ID --c DIR`: writes `main.c` and the data files.
pub fn export(capture: &Capture, id: u64, dir: &Path) -> Result<Plan, ExportError> {
    let plan = plan(capture, id)?;
    write_data(&plan, dir)?;
    write_file(dir, "main.c", main_c(&plan).as_bytes())?;
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_strings_escape_quotes_newlines_and_bytes() {
        assert_eq!(c_string("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
        assert_eq!(c_string("é"), "\"\\303\\251\"");
        assert_eq!(c_string("??/"), "\"\\?\\?/\"");
    }
}
