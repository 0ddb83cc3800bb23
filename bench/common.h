/*
 * Shared boilerplate of the cltrap benchmarks: pick the first device, build one program,
 * die with a clear message on any OpenCL error, and a monotonic clock. Kept out of the two
 * benchmark programs so each of them shows only the workload it measures.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cl_int err_ = (call);                                                              \
        if (err_ != CL_SUCCESS) {                                                          \
            fprintf(stderr, "bench: %s failed with %d (line %d)\n", #call, err_, __LINE__); \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)

struct bench {
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    cl_program program;
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Uses platform BENCH_PLATFORM (an index, or a part of the platform's name; default 0) and
 * its default device, so the same binary can be measured on each platform of a machine. */
static void bench_init(struct bench *b, const char *source) {
    cl_platform_id platforms[16], platform = NULL;
    cl_uint count = 0;
    cl_int err;
    CHECK(clGetPlatformIDs(16, platforms, &count));
    if (count > 16)
        count = 16;
    const char *want = getenv("BENCH_PLATFORM");
    if (!want || !*want)
        want = "0";
    char *end;
    unsigned long index = strtoul(want, &end, 10);
    for (cl_uint i = 0; i < count && !platform; i++) {
        char name[256] = "";
        clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (*end ? strstr(name, want) != NULL : i == index)
            platform = platforms[i];
    }
    if (!platform) {
        fprintf(stderr, "bench: no OpenCL platform '%s' (%u found)\n", want, count);
        exit(2);
    }
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_DEFAULT, 1, &b->device, NULL));
    b->context = clCreateContext(NULL, 1, &b->device, NULL, NULL, &err);
    CHECK(err);
    b->queue = clCreateCommandQueue(b->context, b->device, 0, &err);
    CHECK(err);
    b->program = clCreateProgramWithSource(b->context, 1, &source, NULL, &err);
    CHECK(err);
    err = clBuildProgram(b->program, 1, &b->device, "", NULL, NULL);
    if (err != CL_SUCCESS) {
        static char log[16384];
        clGetProgramBuildInfo(b->program, b->device, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        fprintf(stderr, "bench: build failed (%d):\n%s\n", err, log);
        exit(2);
    }
}

static cl_kernel bench_kernel(struct bench *b, const char *name) {
    cl_int err;
    cl_kernel k = clCreateKernel(b->program, name, &err);
    CHECK(err);
    return k;
}

static cl_mem bench_buffer(struct bench *b, cl_mem_flags flags, size_t size, void *host) {
    cl_int err;
    cl_mem m = clCreateBuffer(b->context, flags, size, host, &err);
    CHECK(err);
    return m;
}
