/* Host program for `cltrap check`: launches every kernel of kernels/check.cl once (or only
 * those named on the command line), each over N = 64 work-items in groups of 16, with a
 * fresh input buffer in[i] = i and a zeroed output buffer of exactly N elements (and, for a
 * kernel with a fourth argument, a __local one of GROUP elements).
 * Half of the kernels are wrong on purpose (races, an off-by-one, an uninitialised read, a
 * divergent barrier); the program only checks that the correct twins compute out[i]. */
#include "common.h"

#define N 64
#define GROUP 16

static const char *KERNELS[] = {
    "local_race",   "local_race_fixed",   "global_race",       "global_race_fixed",
    "off_by_one",   "off_by_one_fixed",   "uninit_local",      "uninit_local_fixed",
    "divergent_barrier", "divergent_barrier_fixed",
};

/* What a correct twin leaves in out[i], or -1 when the kernel is not checked. */
static long expected(const char *kernel, cl_uint i) {
    if (!strcmp(kernel, "local_race_fixed")) return (i / GROUP) * GROUP + (i + 1) % GROUP;
    if (!strcmp(kernel, "global_race_fixed"))
        return (i % GROUP == GROUP - 1 && i + 1 < N) ? 2 * i + 1 : i;
    if (!strcmp(kernel, "off_by_one_fixed")) return i == 0 ? 0 : i;
    if (!strcmp(kernel, "uninit_local_fixed")) return (i ^ 1) + 1;
    if (!strcmp(kernel, "divergent_barrier_fixed")) return i;
    return -1;
}

static void launch(cl_context ctx, cl_command_queue q, cl_program p, const char *name) {
    cl_uint in[N], out[N];
    for (cl_uint i = 0; i < N; i++) in[i] = i, out[i] = 0;
    cl_int err;
    cl_mem din = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof in, in, &err);
    CHECK_ERR(err);
    cl_mem dout = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof out, out, &err);
    CHECK_ERR(err);
    cl_kernel k = make_kernel(p, name);
    cl_uint n = N;
    CHECK(clSetKernelArg(k, 0, sizeof dout, &dout));
    CHECK(clSetKernelArg(k, 1, sizeof din, &din));
    CHECK(clSetKernelArg(k, 2, sizeof n, &n));
    cl_uint nargs = 3;
    CHECK(clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL));
    if (nargs > 3) CHECK(clSetKernelArg(k, 3, GROUP * sizeof(cl_uint), NULL)); /* __local tile */
    size_t global = N, local = GROUP;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, dout, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
    for (cl_uint i = 0; i < N; i++) {
        long want = expected(name, i);
        if (want >= 0) EXPECT(out[i] == (cl_uint)want, "%s: out[%u] = %u, want %ld", name, i, out[i], want);
    }
    clReleaseKernel(k);
    clReleaseMemObject(din);
    clReleaseMemObject(dout);
}

int main(int argc, char **argv) {
    cl_platform_id platform;
    cl_device_id dev;
    pick_device(&platform, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    cl_program p = build_program(ctx, dev, "check.cl", "");
    if (argc > 1) {
        for (int i = 1; i < argc; i++) launch(ctx, q, p, argv[i]);
    } else {
        for (size_t i = 0; i < sizeof KERNELS / sizeof *KERNELS; i++) launch(ctx, q, p, KERNELS[i]);
    }
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return finish("check");
}
