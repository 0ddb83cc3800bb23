/*
 * Gaussian elimination as Rodinia's OpenCL `gaussian` does it: for each pivot t, `Fan1`
 * computes the multipliers of column t into m, `Fan2` subtracts the scaled pivot row from the
 * sub-block below it (rows > t, columns >= t) of the 4 MB matrix a and updates b. N = 1024
 * gives 2 * 1023 = 2 046 launches over one 4 MB matrix, each changing a shrinking sub-block:
 * the pattern that ran a capture past its 4 GB budget. The matrix is Rodinia's generated one
 * (symmetric Toeplitz, a_ij = 10 exp(-0.01 |i - j|)), b = 1.
 *
 * Prints: "gauss launches=L loop_s=S check=ok"   (S: first enqueue to clFinish; the check
 *         compares the eliminated matrix and b with the same elimination on the host)
 * Usage: gauss [N]   (N: matrix order, default 1024; launches = 2 (N - 1))
 */
#include "common.h"
#include <math.h>

static const char *SOURCE =
    "__kernel void Fan1(__global float *m, __global float *a, __global float *b,\n"
    "                   const int size, const int t) {\n"
    "    int g = get_global_id(0);\n"
    "    if (g < size - 1 - t)\n"
    "        m[size * (g + t + 1) + t] = a[size * (g + t + 1) + t] / a[size * t + t];\n"
    "}\n"
    "__kernel void Fan2(__global float *m, __global float *a, __global float *b,\n"
    "                   const int size, const int t) {\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    if (x < size - 1 - t && y < size - t) {\n"
    "        a[size * (x + 1 + t) + (y + t)] -= m[size * (x + 1 + t) + t] * a[size * t + (y + t)];\n"
    "        if (y == 0)\n"
    "            b[x + 1 + t] -= m[size * (x + 1 + t) + (y + t)] * b[t];\n"
    "    }\n"
    "}\n";

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1024;
    if (n < 2) {
        fprintf(stderr, "usage: gauss [N>1]\n");
        return 2;
    }
    size_t nn = (size_t)n * n;
    float *a = malloc(nn * sizeof(float)), *m = calloc(nn, sizeof(float));
    float *b = malloc(n * sizeof(float)), *ga = malloc(nn * sizeof(float));
    float *gb = malloc(n * sizeof(float));
    if (!a || !m || !b || !ga || !gb) {
        fprintf(stderr, "bench: out of memory\n");
        return 2;
    }
    for (int i = 0; i < n; i++) {
        b[i] = 1.0f;
        for (int j = 0; j < n; j++)
            a[(size_t)i * n + j] = 10.0f * expf(-0.01f * (float)abs(i - j));
    }
    struct bench bn;
    bench_init(&bn, SOURCE);
    cl_mem dm = bench_buffer(&bn, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, nn * sizeof(float), m);
    cl_mem da = bench_buffer(&bn, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, nn * sizeof(float), a);
    cl_mem db = bench_buffer(&bn, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(float), b);
    cl_kernel fan1 = bench_kernel(&bn, "Fan1"), fan2 = bench_kernel(&bn, "Fan2");
    cl_kernel both[2] = {fan1, fan2};
    for (int k = 0; k < 2; k++) {
        CHECK(clSetKernelArg(both[k], 0, sizeof dm, &dm));
        CHECK(clSetKernelArg(both[k], 1, sizeof da, &da));
        CHECK(clSetKernelArg(both[k], 2, sizeof db, &db));
        CHECK(clSetKernelArg(both[k], 3, sizeof n, &n));
    }
    size_t local1 = 64, global1 = round_up((size_t)n, local1);
    size_t local2[2] = {8, 8}, global2[2] = {round_up((size_t)n, 8), round_up((size_t)n, 8)};
    long launches = 0;
    double t0 = now_s();
    for (int t = 0; t < n - 1; t++) {
        CHECK(clSetKernelArg(fan1, 4, sizeof t, &t));
        CHECK(clEnqueueNDRangeKernel(bn.queue, fan1, 1, NULL, &global1, &local1, 0, NULL, NULL));
        CHECK(clSetKernelArg(fan2, 4, sizeof t, &t));
        CHECK(clEnqueueNDRangeKernel(bn.queue, fan2, 2, NULL, global2, local2, 0, NULL, NULL));
        launches += 2;
    }
    CHECK(clFinish(bn.queue));
    double t1 = now_s();
    CHECK(clEnqueueReadBuffer(bn.queue, da, CL_TRUE, 0, nn * sizeof(float), ga, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(bn.queue, db, CL_TRUE, 0, n * sizeof(float), gb, 0, NULL, NULL));
    /* The same elimination on the host; the device may contract a - m * p into an fma. */
    for (int t = 0; t < n - 1; t++)
        for (int i = t + 1; i < n; i++) {
            float f = a[(size_t)i * n + t] / a[(size_t)t * n + t];
            for (int j = t; j < n; j++)
                a[(size_t)i * n + j] -= f * a[(size_t)t * n + j];
            b[i] -= f * b[t];
        }
    double worst = 0;
    for (size_t i = 0; i < nn; i++) {
        double d = fabs((double)ga[i] - a[i]) / (fabs((double)a[i]) + 1e-3);
        if (!(d <= worst)) worst = d;
    }
    for (int i = 0; i < n; i++) {
        double d = fabs((double)gb[i] - b[i]) / (fabs((double)b[i]) + 1e-3);
        if (!(d <= worst)) worst = d;
    }
    int ok = worst < 1e-2;
    printf("gauss launches=%ld loop_s=%.6f worst_rel=%.2g check=%s\n", launches, t1 - t0, worst,
           ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
