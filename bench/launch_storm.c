/*
 * Launch storm: N (default 100000) enqueues of a tiny kernel, no reads in between, one
 * clFinish at the end. Measures the per-enqueue cost the shim adds: pass-through must be
 * within 2% of native. The scalar cycles through 4 values, so the outputs repeat and a
 * deduplicating capture stores only a handful of distinct buffer contents.
 *
 * Prints: "launch-storm launches=N loop_s=S check=ok"   (S: first enqueue to clFinish)
 * Usage: launch-storm [N] [ooo]   (ooo: on an out-of-order queue; the launches may then run
 *                                   in any order, so any of the 4 scalars may be the last)
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
    int ooo = argc > 2 && strcmp(argv[2], "ooo") == 0;
    if (n <= 0) {
        fprintf(stderr, "usage: launch-storm [N>0] [ooo]\n");
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
    cl_command_queue q = b.queue;
    if (ooo) {
        cl_int err;
        q = clCreateCommandQueue(b.context, b.device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
        CHECK(err);
    }

    double t0 = now_s();
    for (long j = 0; j < n; j++) {
        cl_float a = (cl_float)(j % 4);
        CHECK(clSetKernelArg(k, 2, sizeof a, &a));
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
    }
    CHECK(clFinish(q));
    double t1 = now_s();

    CHECK(clEnqueueReadBuffer(b.queue, dy, CL_TRUE, 0, sizeof y, y, 0, NULL, NULL));
    int ok = 0;
    for (int last = 0; last < 4; last++) {
        float a = (float)(ooo ? last : (n - 1) % 4);
        int same = 1;
        for (int i = 0; i < SIZE; i++)
            same &= y[i] == a * x[i] + 1.0f;
        ok |= same;
    }
    printf("launch-storm launches=%ld loop_s=%.6f check=%s\n", n, t1 - t0, ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
