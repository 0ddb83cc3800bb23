/* Fixture: two programs of other sources that each define a kernel `scale`, one launch of
 * each: analyses that list kernels by name must tell the two apart. */
#include "common.h"

enum { N = 8 };

static void run(cl_context ctx, cl_device_id dev, cl_command_queue q, const char *file,
                int n, int *got) {
    cl_int err;
    cl_program p = build_program(ctx, dev, file, "");
    cl_kernel k = make_kernel(p, "scale");
    cl_mem b = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(int) * N, NULL, &err);
    CHECK_ERR(err);
    CHECK(clSetKernelArg(k, 0, sizeof b, &b));
    CHECK(clSetKernelArg(k, 1, sizeof n, &n));
    size_t g = N;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof(int) * N, got, 0, NULL, NULL));
    clReleaseMemObject(b);
    clReleaseKernel(k);
    clReleaseProgram(p);
}

int main(void) {
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    int a[N], b[N];
    run(ctx, dev, q, "samename_a.cl", 5, a);
    run(ctx, dev, q, "samename_b.cl", 5, b);
    for (int i = 0; i < N; i++) {
        EXPECT(a[i] == i * 5, "a[%d]=%d", i, a[i]);
        EXPECT(b[i] == ((i & 1) ? i + 5 : i - 5), "b[%d]=%d", i, b[i]);
    }
    printf("samename: two programs, two kernels named scale, ok\n");
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return finish("samename");
}
