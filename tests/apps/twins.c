/* Host program for the replay chain's test of buffers holding the same content: as clpeak's
 * kernel-latency test does on a GPU, one kernel reads a READ_ONLY buffer `a` and writes it
 * into a WRITE_ONLY buffer `b` that already held the same bytes, LAUNCHES times with a
 * clFinish after each. So before and after every launch both buffers hold one content, in
 * two objects with different access flags.
 *   twins [LAUNCHES]   (default 8) */
#include "common.h"

#define N 4096

static const char *SOURCE =
    "__kernel void pass(__global const float *a, __global float *b) {\n"
    "    size_t i = get_global_id(0);\n"
    "    b[i] = a[i];\n"
    "}\n";

int main(int argc, char **argv) {
    long launches = argc > 1 ? strtol(argv[1], NULL, 10) : 8;
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    open_queue(&dev, &ctx, &q);
    cl_program p = build_source(ctx, dev, SOURCE, "", "twins");
    cl_kernel k = make_kernel(p, "pass");
    static float host[N], back[N];
    for (int i = 0; i < N; i++) host[i] = (float)(mix((cl_uint)i) % 1000);
    cl_int err;
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof host, host, &err);
    CHECK_ERR(err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY | CL_MEM_COPY_HOST_PTR, sizeof host, host, &err);
    CHECK_ERR(err);
    CHECK(clSetKernelArg(k, 0, sizeof a, &a));
    CHECK(clSetKernelArg(k, 1, sizeof b, &b));
    for (long j = 0; j < launches; j++) {
        size_t global = N;
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
    }
    CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL));
    for (int i = 0; i < N; i++) EXPECT(back[i] == host[i], "b[%d] = %f, not %f", i, back[i], host[i]);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return finish("twins");
}
