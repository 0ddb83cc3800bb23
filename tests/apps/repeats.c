/* Host program for tests of `replay --schedules --per-kernel`: launches one kernel of a
 * kernels file many times on the same two buffers, with inputs chosen by a pattern:
 *   repeats FILE KERNEL PATTERN
 * Each letter of PATTERN is one launch of KERNEL(out, in, n) in groups of 16: a lowercase
 * letter over n = 64 work-items, an uppercase one over n = 128; the letter picks the input,
 * in[i] = i * (letter - 'a' + 1) (case folded), and out is zeroed before every launch. So
 * equal letters are launches with the same sizes and the same contents before the launch.
 * Nothing is compared: the kernels are the tests' subjects. */
#include "common.h"
#include <ctype.h>

#define MAX_N 128
#define GROUP 16

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: repeats FILE KERNEL PATTERN\n");
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
    cl_kernel k = make_kernel(p, argv[2]);
    cl_uint in[MAX_N], out[MAX_N];
    cl_mem din = clCreateBuffer(ctx, CL_MEM_READ_ONLY, sizeof in, NULL, &err);
    CHECK_ERR(err);
    cl_mem dout = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof out, NULL, &err);
    CHECK_ERR(err);
    for (const char *c = argv[3]; *c; c++) {
        if (!isalpha((unsigned char)*c)) {
            fprintf(stderr, "repeats: '%c' is not a letter\n", *c);
            return 2;
        }
        cl_uint n = isupper((unsigned char)*c) ? MAX_N : MAX_N / 2;
        cl_uint factor = (cl_uint)(tolower((unsigned char)*c) - 'a' + 1);
        for (cl_uint i = 0; i < MAX_N; i++) in[i] = i * factor, out[i] = 0;
        CHECK(clEnqueueWriteBuffer(q, din, CL_TRUE, 0, sizeof in, in, 0, NULL, NULL));
        CHECK(clEnqueueWriteBuffer(q, dout, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
        CHECK(clSetKernelArg(k, 0, sizeof dout, &dout));
        CHECK(clSetKernelArg(k, 1, sizeof din, &din));
        CHECK(clSetKernelArg(k, 2, sizeof n, &n));
        size_t global = n, local = GROUP;
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL));
        CHECK(clEnqueueReadBuffer(q, dout, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
    }
    clReleaseMemObject(din);
    clReleaseMemObject(dout);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return finish("repeats");
}
