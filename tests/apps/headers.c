/* Fixture: a kernel that #includes headers the way real applications do — one relative to
 * the working directory (`./main.h`), one through an -I directory given as argv[1] (relative
 * to the working directory too), which includes a third from a folder next to itself. The
 * test lays the headers out, runs this program in their directory, then deletes them. */
#include "common.h"

enum { N = 64 };

int main(int argc, char **argv) {
    const char *options = argc > 1 ? argv[1] : "";
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    cl_program p = build_program(ctx, dev, "headers.cl", options);
    cl_kernel k = make_kernel(p, "scaled");
    int host[N];
    for (int i = 0; i < N; i++) host[i] = i;
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host, &err);
    CHECK_ERR(err);
    CHECK(clSetKernelArg(k, 0, sizeof a, &a));
    size_t g = N;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, a, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    /* The headers the test writes: SCALE 3, OFFSET 7, LIMIT 100. */
    for (int i = 0; i < N; i++) {
        int want = 3 * i + 7;
        if (want > 100) want = 100;
        EXPECT(host[i] == want, "a[%d] = %d, want %d", i, host[i], want);
    }
    clReleaseMemObject(a);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return finish("headers");
}
