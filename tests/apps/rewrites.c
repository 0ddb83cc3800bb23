/* Fixture: `rewrites [L]`: L (default 20) launches of vadd (tests/kernels/vadd.cl) over 1 MiB
 * float buffers, each followed by clFinish, each writing the same sums into c. A `full`
 * capture stores c's contents after the launches once and names them after every launch.
 * Checks c. */
#include "common.h"

enum { N = 1 << 18 };

int main(int argc, char **argv) {
    int launches = argc > 1 ? atoi(argv[1]) : 20;
    if (launches <= 0) {
        fprintf(stderr, "usage: rewrites [L>0]\n");
        return 2;
    }
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    open_queue(&dev, &ctx, &q);
    cl_int err;
    cl_program p = build_program(ctx, dev, "vadd.cl", "");
    cl_kernel k = make_kernel(p, "vadd");
    float *a = malloc(sizeof(float) * N), *b = malloc(sizeof(float) * N),
          *c = calloc(N, sizeof(float));
    if (!a || !b || !c) {
        fprintf(stderr, "rewrites: out of memory\n");
        return 2;
    }
    for (int i = 0; i < N; i++) {
        a[i] = (float)(i % 1000);
        b[i] = (float)(i % 7) * 0.5f;
    }
    cl_mem ba = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(float) * N, a, &err);
    CHECK_ERR(err);
    cl_mem bb = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(float) * N, b, &err);
    CHECK_ERR(err);
    cl_mem bc = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(float) * N, c, &err);
    CHECK_ERR(err);
    CHECK(clSetKernelArg(k, 0, sizeof ba, &ba));
    CHECK(clSetKernelArg(k, 1, sizeof bb, &bb));
    CHECK(clSetKernelArg(k, 2, sizeof bc, &bc));
    size_t g = N;
    for (int l = 0; l < launches; l++) {
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
    }
    CHECK(clEnqueueReadBuffer(q, bc, CL_TRUE, 0, sizeof(float) * N, c, 0, NULL, NULL));
    for (int i = 0; i < N; i++)
        EXPECT(c[i] == a[i] + b[i], "c[%d]=%g want %g", i, c[i], a[i] + b[i]);
    clReleaseMemObject(ba);
    clReleaseMemObject(bb);
    clReleaseMemObject(bc);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    free(a);
    free(b);
    free(c);
    return finish("rewrites");
}
