/*
 * Launch storm: N (default 100000) enqueues of a tiny kernel, no reads in between, one
 * clFinish at the end. Measures the per-enqueue cost the shim adds: pass-through must be
 * within 2% of native. The scalar cycles through 4 values, so the outputs repeat and a
 * deduplicating capture stores only a handful of distinct buffer contents.
 *
 * Prints: "launch-storm launches=N loop_s=S check=ok"   (S: first enqueue to clFinish)
 * Usage: launch-storm [N]
 */
#include "common.h"
#include <string.h>

static const char *SOURCE =
    "__kernel void tiny(__global const float *x, __global float *y, float a) {\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = a * x[i] + 1.0f;\n"
    "}\n";

int main(int argc, char **argv) {
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
    if (n <= 0) {
        fprintf(stderr, "usage: launch-storm [N>0]\n");
        return 2;
    }
    enum { SIZE = 64 };
    float x[SIZE], y[SIZE];
    for (int i = 0; i < SIZE; i++)
        x[i] = (float)i;
    struct bench b;
    bench_init(&b, SOURCE);
    cl_mem dx = bench_buffer(&b, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof x, x);
    cl_mem dy = bench_buffer(&b, CL_MEM_WRITE_ONLY, sizeof y, NULL);
    cl_kernel k = bench_kernel(&b, "tiny");
    CHECK(clSetKernelArg(k, 0, sizeof dx, &dx));
    CHECK(clSetKernelArg(k, 1, sizeof dy, &dy));
    size_t global = SIZE;

    double t0 = now_s();
    for (long j = 0; j < n; j++) {
        cl_float a = (cl_float)(j % 4);
        CHECK(clSetKernelArg(k, 2, sizeof a, &a));
        CHECK(clEnqueueNDRangeKernel(b.queue, k, 1, NULL, &global, NULL, 0, NULL, NULL));
    }
    CHECK(clFinish(b.queue));
    double t1 = now_s();

    CHECK(clEnqueueReadBuffer(b.queue, dy, CL_TRUE, 0, sizeof y, y, 0, NULL, NULL));
    float a = (float)((n - 1) % 4);
    int ok = 1;
    for (int i = 0; i < SIZE; i++)
        ok &= y[i] == a * x[i] + 1.0f;
    printf("launch-storm launches=%ld loop_s=%.6f check=%s\n", n, t1 - t0, ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
