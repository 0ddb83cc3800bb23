/*
 * A 1-D three-point stencil as iterative solvers run it: STEPS launches, each reading one
 * buffer and writing the other (ping-pong) and followed by clFinish, the pattern of the
 * real application that a `--buffers full` capture slowed 8x when it compressed in the
 * application's process. N floats per buffer (default 1 << 20: 4 MB).
 *
 * BENCH_CHECK=0 skips the host reference and prints check=skipped.
 * Prints: "stencil1d launches=L loop_s=S check=ok"   (the result compared with the host)
 * Usage: stencil1d [STEPS [N]]   (default 2000 steps)
 */
#include "common.h"
#include <math.h>

static const char *SOURCE =
    "__kernel void stencil(__global const float *in, __global float *out, const int n) {\n"
    "    int i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    float l = in[i > 0 ? i - 1 : i], r = in[i < n - 1 ? i + 1 : i];\n"
    "    out[i] = 0.25f * l + 0.5f * in[i] + 0.25f * r;\n"
    "}\n";

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 2000;
    int n = argc > 2 ? atoi(argv[2]) : 1 << 20;
    if (steps < 1 || n < 2) {
        fprintf(stderr, "usage: stencil1d [STEPS>0 [N>1]]\n");
        return 2;
    }
    float *h = malloc((size_t)n * sizeof(float)), *t = malloc((size_t)n * sizeof(float));
    float *g = malloc((size_t)n * sizeof(float));
    if (!h || !t || !g) {
        fprintf(stderr, "bench: out of memory\n");
        return 2;
    }
    for (int i = 0; i < n; i++)
        h[i] = (float)((i * 7919) % 1000) * 0.001f;
    struct bench bn;
    bench_init(&bn, SOURCE);
    cl_mem buf[2] = {
        bench_buffer(&bn, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, (size_t)n * sizeof(float), h),
        bench_buffer(&bn, CL_MEM_READ_WRITE, (size_t)n * sizeof(float), NULL)};
    cl_kernel k = bench_kernel(&bn, "stencil");
    CHECK(clSetKernelArg(k, 2, sizeof n, &n));
    size_t local = 64, global = ((size_t)n + 63) / 64 * 64;
    double t0 = now_s();
    for (int s = 0; s < steps; s++) {
        CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &buf[s & 1]));
        CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &buf[(s + 1) & 1]));
        CHECK(clEnqueueNDRangeKernel(bn.queue, k, 1, NULL, &global, &local, 0, NULL, NULL));
        CHECK(clFinish(bn.queue));
    }
    double t1 = now_s();
    CHECK(clEnqueueReadBuffer(bn.queue, buf[steps & 1], CL_TRUE, 0, (size_t)n * sizeof(float), g,
                              0, NULL, NULL));
    /* BENCH_CHECK=0: no host reference (it would take longer than the device's run). */
    const char *check_env = getenv("BENCH_CHECK");
    if (check_env && strcmp(check_env, "0") == 0) {
        printf("stencil1d launches=%d loop_s=%.6f check=skipped\n", steps, t1 - t0);
        return 0;
    }
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < n; i++) {
            float l = h[i > 0 ? i - 1 : i], r = h[i < n - 1 ? i + 1 : i];
            t[i] = 0.25f * l + 0.5f * h[i] + 0.25f * r;
        }
        float *x = h;
        h = t;
        t = x;
    }
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)g[i] - h[i]);
        if (!(d <= worst)) worst = d;
    }
    int ok = worst < 1e-3;
    printf("stencil1d launches=%d loop_s=%.6f check=%s\n", steps, t1 - t0, ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
