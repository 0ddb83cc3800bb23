/* Fixture: completes a few launches, checks them, then abort()s without releasing anything
 * or returning from main. A capture must stay readable up to its last complete launch. */
#include "common.h"

enum { N = 32, LAUNCHES = 5 };

int main(void) {
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    cl_program p = build_program(ctx, dev, "tagged.cl", "");
    cl_kernel k = make_kernel(p, "tagged");
    cl_mem out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(int) * N, NULL, &err);
    CHECK_ERR(err);
    int thread = 9;
    CHECK(clSetKernelArg(k, 0, sizeof out, &out));
    CHECK(clSetKernelArg(k, 1, sizeof thread, &thread));
    size_t g = N;
    int got[N];
    for (int it = 0; it < LAUNCHES; it++) {
        CHECK(clSetKernelArg(k, 2, sizeof it, &it));
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
        for (int i = 0; i < N; i++)
            EXPECT(got[i] == 900000 + it * 100 + i, "launch %d out[%d]=%d", it, i, got[i]);
    }
    CHECK(clFinish(q));
    printf("crash: %d launches done, %d failures; aborting now\n", LAUNCHES, g_failures);
    fflush(stdout);
    abort();
}
