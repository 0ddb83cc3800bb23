/* Host program for `cltrap check` tests of single kernels: builds kernels/FILE and launches
 * each kernel named after it once, with arguments (out, in, n[, tile]):
 *   check_kernels FILE KERNEL[:GLOBAL[:LOCAL]] ...   (default 64 work-items in groups of 16)
 * `out` is a zeroed buffer of 16 bytes per work-item, `in` one of 16 bytes per work-item
 * holding in[b] = b % 251 as bytes, n the number of work-items, and a fourth argument (when
 * the kernel has one) a __local buffer of 16 bytes per work-item of a group. Nothing is
 * compared: the kernels are the tests' subjects, correct or wrong on purpose. */
#include "common.h"

static void launch(cl_context ctx, cl_command_queue q, cl_program p, const char *spec) {
    char name[256];
    size_t global = 64, local = 16;
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    if (len >= sizeof name) len = sizeof name - 1;
    memcpy(name, spec, len);
    name[len] = 0;
    if (colon) {
        global = strtoul(colon + 1, NULL, 10);
        const char *second = strchr(colon + 1, ':');
        if (second) local = strtoul(second + 1, NULL, 10);
    }
    size_t bytes = 16 * global;
    unsigned char *in = malloc(bytes), *out = calloc(bytes, 1);
    if (!in || !out) exit(2);
    for (size_t i = 0; i < bytes; i++) in[i] = (unsigned char)(i % 251);
    cl_int err;
    cl_mem din = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, in, &err);
    CHECK_ERR(err);
    cl_mem dout = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, out, &err);
    CHECK_ERR(err);
    cl_kernel k = make_kernel(p, name);
    cl_uint n = (cl_uint)global;
    CHECK(clSetKernelArg(k, 0, sizeof dout, &dout));
    CHECK(clSetKernelArg(k, 1, sizeof din, &din));
    CHECK(clSetKernelArg(k, 2, sizeof n, &n));
    cl_uint nargs = 3;
    CHECK(clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL));
    if (nargs > 3) CHECK(clSetKernelArg(k, 3, 16 * local, NULL));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, dout, CL_TRUE, 0, bytes, out, 0, NULL, NULL));
    clReleaseKernel(k);
    clReleaseMemObject(din);
    clReleaseMemObject(dout);
    free(in);
    free(out);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: check_kernels FILE KERNEL[:GLOBAL[:LOCAL]] ...\n");
        return 2;
    }
    cl_platform_id platform;
    cl_device_id dev;
    pick_device(&platform, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    cl_program p = build_program(ctx, dev, argv[1], "");
    for (int i = 2; i < argc; i++) launch(ctx, q, p, argv[i]);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return finish("check_kernels");
}
