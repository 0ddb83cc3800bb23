/* Fixture: 100 launches of one kernel on the same unchanged 1 MiB buffer. A capture that
 * deduplicates contents stores that megabyte about once, not a hundred times. */
#include "common.h"

enum { INTS = 1 << 18, OUT = 64, LAUNCHES = 100 };

int main(void) {
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    cl_program p = build_program(ctx, dev, "sampled_sum.cl", "");
    cl_kernel k = make_kernel(p, "sampled_sum");
    int *in = malloc(sizeof(int) * INTS);
    for (int i = 0; i < INTS; i++) in[i] = (int)((i * 2654435761u) >> 7);
    cl_mem bin = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(int) * INTS, in, &err);
    CHECK_ERR(err);
    cl_mem bout = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(int) * OUT, NULL, &err);
    CHECK_ERR(err);
    int stride = INTS / OUT;
    CHECK(clSetKernelArg(k, 0, sizeof bin, &bin));
    CHECK(clSetKernelArg(k, 1, sizeof bout, &bout));
    CHECK(clSetKernelArg(k, 2, sizeof stride, &stride));
    size_t g = OUT;
    for (int l = 0; l < LAUNCHES; l++)
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    int got[OUT];
    CHECK(clEnqueueReadBuffer(q, bout, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
    long total = 0;
    for (int i = 0; i < OUT; i++) {
        int want = in[i * stride] + in[i * stride + 1];
        EXPECT(got[i] == want, "out[%d]=%d want %d", i, got[i], want);
        total += got[i];
    }
    printf("dedup: %d launches on one 1 MiB buffer, result sum %ld\n", LAUNCHES, total);
    free(in);
    clReleaseMemObject(bin);
    clReleaseMemObject(bout);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return finish("dedup");
}
