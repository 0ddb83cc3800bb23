/* Fixture: one launch of kernel `large` (tests/kernels/large.cl) over 2^20 work-items in
 * work-groups of 64, with mode 1 and data[i] = i, except that the work-items of work-group
 * 9000 hold negative values. Built with -DBAD_GROUP=5 -DNEGATIVE_GROUP=9000. Checks every
 * output. */
#include "common.h"

enum { N = 1 << 20, LOCAL = 64, NEGATIVE = 9000 };

int main(void) {
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    cl_program p = build_program(ctx, dev, "large.cl", "-DBAD_GROUP=5 -DNEGATIVE_GROUP=9000");
    cl_kernel k = make_kernel(p, "large");
    int *data = malloc(sizeof(int) * N), *out = malloc(sizeof(int) * N);
    for (int i = 0; i < N; i++)
        data[i] = i / LOCAL == NEGATIVE ? -i : i;
    cl_mem d = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(int) * N, data,
                              &err);
    CHECK_ERR(err);
    cl_mem o = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(int) * N, NULL, &err);
    CHECK_ERR(err);
    int mode = 1;
    CHECK(clSetKernelArg(k, 0, sizeof d, &d));
    CHECK(clSetKernelArg(k, 1, sizeof o, &o));
    CHECK(clSetKernelArg(k, 2, sizeof mode, &mode));
    size_t global = N, local = LOCAL;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, o, CL_TRUE, 0, sizeof(int) * N, out, 0, NULL, NULL));
    int bad = 0;
    for (int i = 0; i < N; i++) {
        int want = i == N - 1 ? 7 : data[i] < 0 ? -data[i] : data[i] + 1;
        bad += out[i] != want;
    }
    EXPECT(bad == 0, "%d wrong outputs", bad);
    printf("large: %d work-items, %s\n", N, bad ? "wrong" : "ok");
    return bad != 0;
}
