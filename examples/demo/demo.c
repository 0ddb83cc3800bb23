/*
 * cltrap-demo: the bundled example OpenCL application.
 *
 * A small, ordinary OpenCL 1.2 host program with three kernels, written the way real
 * applications are (no cltrap headers, no special build): it is what `scripts/setup.sh`
 * captures, lists and replays to show the whole tool working on the PoCL CPU device.
 *
 *   vec_add     1-D, NULL local size, a scalar `n` guarding a rounded-up global size
 *   reduce_sum  1-D, explicit local size, a `__local` scratch argument, partial sums
 *   blur3x3     2-D, global offset (1,1) so the one-pixel border is skipped, local 8x8
 *
 * Every result is checked on the host; the program prints one line per kernel and exits
 * non-zero if any result is wrong, so "the app's own results are unchanged" is testable.
 *
 * Build: cc -O2 -o demo demo.c -lOpenCL
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *SOURCE =
    "__kernel void vec_add(__global const float *a, __global const float *b,\n"
    "                      __global float *c, uint n) {\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i < n)\n"
    "        c[i] = a[i] + b[i];\n"
    "}\n"
    "\n"
    "__kernel void reduce_sum(__global const int *in, __global int *partial,\n"
    "                         __local int *scratch, uint n) {\n"
    "    size_t gid = get_global_id(0);\n"
    "    size_t lid = get_local_id(0);\n"
    "    scratch[lid] = gid < n ? in[gid] : 0;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {\n"
    "        if (lid < s)\n"
    "            scratch[lid] += scratch[lid + s];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (lid == 0)\n"
    "        partial[get_group_id(0)] = scratch[0];\n"
    "}\n"
    "\n"
    "__kernel void blur3x3(__global const float *src, __global float *dst,\n"
    "                      int width, float weight) {\n"
    "    int x = get_global_id(0);\n"
    "    int y = get_global_id(1);\n"
    "    float s = 0.0f;\n"
    "    for (int dy = -1; dy <= 1; dy++)\n"
    "        for (int dx = -1; dx <= 1; dx++)\n"
    "            s += src[(y + dy) * width + (x + dx)];\n"
    "    dst[y * width + x] = s * weight;\n"
    "}\n";

#define CHECK(call)                                                                   \
    do {                                                                              \
        cl_int err_ = (call);                                                         \
        if (err_ != CL_SUCCESS) {                                                     \
            fprintf(stderr, "cltrap-demo: %s failed with %d (line %d)\n", #call, err_, \
                    __LINE__);                                                        \
            exit(2);                                                                  \
        }                                                                             \
    } while (0)

struct ctx {
    cl_context context;
    cl_command_queue queue;
    cl_program program;
    cl_device_id device;
};

static cl_mem buffer(struct ctx *c, cl_mem_flags flags, size_t size, void *host) {
    cl_int err;
    cl_mem m = clCreateBuffer(c->context, flags, size, host, &err);
    CHECK(err);
    return m;
}

static cl_kernel kernel(struct ctx *c, const char *name) {
    cl_int err;
    cl_kernel k = clCreateKernel(c->program, name, &err);
    CHECK(err);
    return k;
}

/* c = a + b over 1000 floats; global size rounded up to 1024, NULL local size. */
static int run_vec_add(struct ctx *c) {
    enum { N = 1000, GLOBAL = 1024 };
    float a[N], b[N], out[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)i * 0.5f;
        b[i] = (float)(N - i) * 0.25f;
        out[i] = -1.0f;
    }
    cl_mem da = buffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof a, a);
    cl_mem db = buffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof b, b);
    cl_mem dc = buffer(c, CL_MEM_WRITE_ONLY, sizeof out, NULL);
    cl_kernel k = kernel(c, "vec_add");
    cl_uint n = N;
    CHECK(clSetKernelArg(k, 0, sizeof da, &da));
    CHECK(clSetKernelArg(k, 1, sizeof db, &db));
    CHECK(clSetKernelArg(k, 2, sizeof dc, &dc));
    CHECK(clSetKernelArg(k, 3, sizeof n, &n));
    size_t global = GLOBAL;
    CHECK(clEnqueueNDRangeKernel(c->queue, k, 1, NULL, &global, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(c->queue, dc, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
    int bad = 0;
    for (int i = 0; i < N; i++)
        if (out[i] != a[i] + b[i])
            bad++;
    printf("vec_add     n=%-18d c[0]=%g c[%d]=%g  %s\n", N, out[0], N - 1, out[N - 1],
           bad ? "WRONG" : "ok");
    clReleaseKernel(k);
    clReleaseMemObject(da);
    clReleaseMemObject(db);
    clReleaseMemObject(dc);
    return bad != 0;
}

/* Sum of 1..4096 in work-groups of 64 with a __local scratch array; run twice with
 * different inputs so the capture shows two launches of one kernel. */
static int run_reduce(struct ctx *c, int scale) {
    enum { N = 4096, LOCAL = 64, GROUPS = N / LOCAL };
    int in[N], partial[GROUPS];
    long long expect = 0;
    for (int i = 0; i < N; i++) {
        in[i] = (i + 1) * scale;
        expect += in[i];
    }
    cl_mem din = buffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof in, in);
    cl_mem dpart = buffer(c, CL_MEM_READ_WRITE, sizeof partial, NULL);
    cl_kernel k = kernel(c, "reduce_sum");
    cl_uint n = N;
    CHECK(clSetKernelArg(k, 0, sizeof din, &din));
    CHECK(clSetKernelArg(k, 1, sizeof dpart, &dpart));
    CHECK(clSetKernelArg(k, 2, LOCAL * sizeof(int), NULL));
    CHECK(clSetKernelArg(k, 3, sizeof n, &n));
    size_t global = N, local = LOCAL;
    CHECK(clEnqueueNDRangeKernel(c->queue, k, 1, NULL, &global, &local, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(c->queue, dpart, CL_TRUE, 0, sizeof partial, partial, 0, NULL,
                              NULL));
    long long sum = 0;
    for (int g = 0; g < GROUPS; g++)
        sum += partial[g];
    printf("reduce_sum  n=%d x%-12d sum=%lld (expected %lld)  %s\n", N, scale, sum, expect,
           sum == expect ? "ok" : "WRONG");
    clReleaseKernel(k);
    clReleaseMemObject(din);
    clReleaseMemObject(dpart);
    return sum != expect;
}

/* 3x3 box blur of a 66x34 image, launched over the 64x32 interior with offset (1,1). */
static int run_blur(struct ctx *c) {
    enum { W = 66, H = 34 };
    static float src[W * H], dst[W * H];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            src[y * W + x] = (float)((x * 7 + y * 13) % 17);
            dst[y * W + x] = 0.0f;
        }
    cl_mem dsrc = buffer(c, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof src, src);
    cl_mem ddst = buffer(c, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof dst, dst);
    cl_kernel k = kernel(c, "blur3x3");
    cl_int width = W;
    cl_float weight = 1.0f / 9.0f;
    CHECK(clSetKernelArg(k, 0, sizeof dsrc, &dsrc));
    CHECK(clSetKernelArg(k, 1, sizeof ddst, &ddst));
    CHECK(clSetKernelArg(k, 2, sizeof width, &width));
    CHECK(clSetKernelArg(k, 3, sizeof weight, &weight));
    size_t offset[2] = {1, 1}, global[2] = {W - 2, H - 2}, local[2] = {8, 8};
    CHECK(clEnqueueNDRangeKernel(c->queue, k, 2, offset, global, local, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(c->queue, ddst, CL_TRUE, 0, sizeof dst, dst, 0, NULL, NULL));
    int bad = 0;
    double checksum = 0.0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            float expect = 0.0f;
            if (x > 0 && y > 0 && x < W - 1 && y < H - 1) {
                float s = 0.0f;
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++)
                        s += src[(y + dy) * W + (x + dx)];
                expect = s * weight;
            }
            if (fabsf(dst[y * W + x] - expect) > 1e-4f)
                bad++;
            checksum += dst[y * W + x];
        }
    printf("blur3x3     %dx%d offset 1,1     checksum=%.3f  %s\n", W - 2, H - 2, checksum,
           bad ? "WRONG" : "ok");
    clReleaseKernel(k);
    clReleaseMemObject(dsrc);
    clReleaseMemObject(ddst);
    return bad != 0;
}

int main(void) {
    struct ctx c;
    cl_platform_id platform;
    cl_uint count = 0;
    cl_int err;
    CHECK(clGetPlatformIDs(1, &platform, &count));
    if (count == 0) {
        fprintf(stderr, "cltrap-demo: no OpenCL platform (is pocl-opencl-icd installed?)\n");
        return 2;
    }
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_DEFAULT, 1, &c.device, NULL));
    char name[256] = "";
    CHECK(clGetDeviceInfo(c.device, CL_DEVICE_NAME, sizeof name, name, NULL));
    printf("cltrap-demo on %s\n", name);

    c.context = clCreateContext(NULL, 1, &c.device, NULL, NULL, &err);
    CHECK(err);
    c.queue = clCreateCommandQueue(c.context, c.device, 0, &err);
    CHECK(err);
    c.program = clCreateProgramWithSource(c.context, 1, &SOURCE, NULL, &err);
    CHECK(err);
    err = clBuildProgram(c.program, 1, &c.device, "-cl-std=CL1.2", NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[8192] = "";
        clGetProgramBuildInfo(c.program, c.device, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        fprintf(stderr, "cltrap-demo: build failed (%d):\n%s\n", err, log);
        return 2;
    }

    int failures = 0;
    failures += run_vec_add(&c);
    failures += run_reduce(&c, 1);
    failures += run_reduce(&c, 3);
    failures += run_blur(&c);

    clReleaseProgram(c.program);
    clReleaseCommandQueue(c.queue);
    clReleaseContext(c.context);
    if (failures)
        printf("cltrap-demo: %d result(s) WRONG\n", failures);
    else
        printf("cltrap-demo: all results ok\n");
    return failures ? 1 : 0;
}
