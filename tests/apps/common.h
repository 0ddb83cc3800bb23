/* Shared helpers for the cltrap end-to-end fixtures.
 *
 * Every fixture checks its OWN results and exits non-zero when anything is wrong, so the test
 * harness can compare a native run with a run under the shim: same stdout, same exit code.
 * Nothing here prints timing or addresses: stdout must be byte-for-byte reproducible. */
#ifndef CLTRAP_FIXTURE_COMMON_H
#define CLTRAP_FIXTURE_COMMON_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef KERNEL_DIR
#error "build with -DKERNEL_DIR=\"/path/to/tests/kernels\""
#endif

/* Aborts the fixture with the failing call and its code when an OpenCL call fails. */
#define CHECK(call)                                                                   \
    do {                                                                              \
        cl_int check_err_ = (call);                                                   \
        if (check_err_ != CL_SUCCESS) {                                               \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call,      \
                    (int)check_err_);                                                 \
            exit(2);                                                                  \
        }                                                                             \
    } while (0)

/* For calls that return an object and report through an out-parameter. */
#define CHECK_ERR(err)                                                                \
    do {                                                                              \
        if ((err) != CL_SUCCESS) {                                                    \
            fprintf(stderr, "%s:%d: error %d\n", __FILE__, __LINE__, (int)(err));     \
            exit(2);                                                                  \
        }                                                                             \
    } while (0)

/* Counts failed expectations; fixtures exit with 1 when any failed. */
static int g_failures = 0;

#define EXPECT(cond, ...)                                                             \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: expectation failed: %s: ", __FILE__, __LINE__,    \
                    #cond);                                                           \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
            g_failures++;                                                             \
        }                                                                             \
    } while (0)

/* Reads a kernel file from the fixtures' kernel directory (the one compiled in, or
 * $FIXTURE_KERNEL_DIR when the fixture runs on another machine); the caller frees it. */
static char *read_kernel(const char *name) {
    char path[1024];
    const char *dir = getenv("FIXTURE_KERNEL_DIR");
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : KERNEL_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open kernel file %s\n", path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cannot read kernel file %s\n", path);
        exit(2);
    }
    s[n] = 0;
    fclose(f);
    return s;
}

/* The first device of the first platform that has one (PoCL's CPU device here). */
static void pick_device(cl_platform_id *platform, cl_device_id *device) {
    cl_uint np = 0;
    CHECK(clGetPlatformIDs(0, NULL, &np));
    cl_platform_id ps[16];
    if (np > 16) np = 16;
    CHECK(clGetPlatformIDs(np, ps, NULL));
    for (cl_uint i = 0; i < np; i++) {
        if (clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 1, device, NULL) == CL_SUCCESS) {
            *platform = ps[i];
            return;
        }
    }
    fprintf(stderr, "no OpenCL device found\n");
    exit(2);
}

/* The first device with a context and an in-order queue on it: how most fixtures start. */
static void open_queue(cl_device_id *dev, cl_context *ctx, cl_command_queue *q) {
    cl_platform_id plat;
    pick_device(&plat, dev);
    cl_int err;
    *ctx = clCreateContext(NULL, 1, dev, NULL, NULL, &err);
    CHECK_ERR(err);
    *q = clCreateCommandQueue(*ctx, *dev, 0, &err);
    CHECK_ERR(err);
}

/* An integer hash (a finaliser of MurmurHash3's kind): incompressible words from a counter,
 * computed alike by a fixture's kernel and its host-side model. */
static inline cl_uint mix(cl_uint x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* Builds a program from source text (`what` names it in the message), printing the build log
 * on failure. */
static cl_program build_source(cl_context ctx, cl_device_id dev, const char *src,
                               const char *options, const char *what) {
    cl_int err;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK_ERR(err);
    err = clBuildProgram(p, 1, &dev, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[16384];
        size_t n = 0;
        clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, &n);
        log[n < sizeof log ? n : sizeof log - 1] = 0;
        fprintf(stderr, "build of %s failed (%d):\n%s\n", what, (int)err, log);
        exit(2);
    }
    return p;
}

/* Builds a program from one kernel file, printing the build log on failure. */
static cl_program build_program(cl_context ctx, cl_device_id dev, const char *file,
                                const char *options) {
    char *src = read_kernel(file);
    cl_program p = build_source(ctx, dev, src, options, file);
    free(src);
    return p;
}

static cl_kernel make_kernel(cl_program p, const char *name) {
    cl_int err;
    cl_kernel k = clCreateKernel(p, name, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clCreateKernel(%s) failed: %d\n", name, (int)err);
        exit(2);
    }
    return k;
}

/* Ends the fixture: prints the verdict line the tests compare and picks the exit code. */
static int finish(const char *what) {
    if (g_failures) {
        printf("%s: FAILED (%d)\n", what, g_failures);
        return 1;
    }
    printf("%s: all results correct\n", what);
    return 0;
}

/* PoCL 3.1 names kernels of linked programs `_cl_<name>`; take whichever spelling the
 * program reports, so the fixture runs on every implementation. */
static const char *linked_kernel_name(cl_program p, const char *name) {
    static char names[1024];
    CHECK(clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, sizeof names, names, NULL));
    for (char *tok = strtok(names, ";"); tok; tok = strtok(NULL, ";")) {
        size_t n = strlen(tok), m = strlen(name);
        if (n >= m && strcmp(tok + n - m, name) == 0) return tok;
    }
    return name;
}

#endif
