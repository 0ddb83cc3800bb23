/* Fixture: Gaussian elimination as Rodinia's OpenCL `gaussian` does it (Fan1/Fan2 per pivot,
 * clFinish after each launch), 2 (N - 1) launches over an N x N matrix whose sub-block
 * changes at every step: under a small CLTRAP_MAX_MB most launches' inputs are derived
 * (re-created at replay by re-executing the launch before). With `hostwrite`, the host
 * adds 1 to the rows of b not eliminated yet before the launch of pivot N/2 (and so does the
 * host's reference), so that launch's b is not what the previous launch left: the capture
 * must read and store it.
 * Prints "gauss: all results correct" when the elimination matches the host's.
 * Usage: gauss [N] [hostwrite]   (default N = 64) */
#include "common.h"

static double absd(double x) { return x < 0 ? -x : x; }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 64;
    int hostwrite = argc > 2 && strcmp(argv[2], "hostwrite") == 0;
    if (n < 2) {
        fprintf(stderr, "usage: gauss [N>1] [hostwrite]\n");
        return 2;
    }
    size_t nn = (size_t)n * n;
    float *a = malloc(nn * sizeof(float)), *m = calloc(nn, sizeof(float));
    float *b = malloc(n * sizeof(float)), *ga = malloc(nn * sizeof(float));
    float *gb = malloc(n * sizeof(float));
    if (!a || !m || !b || !ga || !gb) {
        fprintf(stderr, "out of memory\n");
        return 2;
    }
    for (int i = 0; i < n; i++) {
        b[i] = 1.0f;
        for (int j = 0; j < n; j++) a[(size_t)i * n + j] = 10.0f / (1.0f + 0.01f * (float)abs(i - j));
    }
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    open_queue(&dev, &ctx, &q);
    cl_int err;
    cl_program p = build_program(ctx, dev, "gauss.cl", "");
    cl_kernel fan1 = make_kernel(p, "Fan1"), fan2 = make_kernel(p, "Fan2");
    cl_mem dm = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, nn * sizeof(float), m, &err);
    CHECK_ERR(err);
    cl_mem da = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, nn * sizeof(float), a, &err);
    CHECK_ERR(err);
    cl_mem db = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(float), b, &err);
    CHECK_ERR(err);
    cl_kernel both[2] = {fan1, fan2};
    for (int k = 0; k < 2; k++) {
        CHECK(clSetKernelArg(both[k], 0, sizeof dm, &dm));
        CHECK(clSetKernelArg(both[k], 1, sizeof da, &da));
        CHECK(clSetKernelArg(both[k], 2, sizeof db, &db));
        CHECK(clSetKernelArg(both[k], 3, sizeof n, &n));
    }
    size_t local1 = 16, global1 = ((size_t)n + 15) / 16 * 16;
    size_t local2[2] = {4, 4}, global2[2] = {((size_t)n + 3) / 4 * 4, ((size_t)n + 3) / 4 * 4};
    for (int t = 0; t < n - 1; t++) {
        if (hostwrite && t == n / 2) {
            CHECK(clEnqueueReadBuffer(q, db, CL_TRUE, 0, n * sizeof(float), gb, 0, NULL, NULL));
            for (int i = t + 1; i < n; i++) gb[i] += 1.0f;
            CHECK(clEnqueueWriteBuffer(q, db, CL_TRUE, 0, n * sizeof(float), gb, 0, NULL, NULL));
        }
        CHECK(clSetKernelArg(fan1, 4, sizeof t, &t));
        CHECK(clEnqueueNDRangeKernel(q, fan1, 1, NULL, &global1, &local1, 0, NULL, NULL));
        CHECK(clFinish(q));
        CHECK(clSetKernelArg(fan2, 4, sizeof t, &t));
        CHECK(clEnqueueNDRangeKernel(q, fan2, 2, NULL, global2, local2, 0, NULL, NULL));
        CHECK(clFinish(q));
    }
    CHECK(clEnqueueReadBuffer(q, da, CL_TRUE, 0, nn * sizeof(float), ga, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, db, CL_TRUE, 0, n * sizeof(float), gb, 0, NULL, NULL));
    /* The same elimination on the host; the device may contract a - m * p into an fma. */
    for (int t = 0; t < n - 1; t++) {
        if (hostwrite && t == n / 2)
            for (int i = t + 1; i < n; i++) b[i] += 1.0f;
        for (int i = t + 1; i < n; i++) {
            float f = a[(size_t)i * n + t] / a[(size_t)t * n + t];
            for (int j = t; j < n; j++) a[(size_t)i * n + j] -= f * a[(size_t)t * n + j];
            b[i] -= f * b[t];
        }
    }
    double worst = 0;
    for (size_t i = 0; i < nn; i++) {
        double d = absd((double)ga[i] - a[i]) / (absd((double)a[i]) + 1e-3);
        if (!(d <= worst)) worst = d;
    }
    for (int i = 0; i < n; i++) {
        double d = absd((double)gb[i] - b[i]) / (absd((double)b[i]) + 1e-3);
        if (!(d <= worst)) worst = d;
    }
    EXPECT(worst < 1e-2, "worst relative error %g", worst);
    free(a), free(m), free(b), free(ga), free(gb);
    return finish("gauss");
}
