/*
 * A 2-D FDTD (PolyBench fdtd-2d style): per time step three kernels update ey, ex and then
 * hz over an NX x NY grid (default 512 x 512 floats: 1 MB per field, three fields), the
 * multi-kernel pattern whose every launch rewrites a field. STEPS time steps, one clFinish at
 * the end.
 *
 * BENCH_CHECK=0 skips the host reference and prints check=skipped.
 * Prints: "fdtd launches=L loop_s=S check=ok"   (hz compared with the host)
 * Usage: fdtd [STEPS [NX [NY]]]   (default 500 steps)
 */
#include "common.h"
#include <math.h>

static const char *SOURCE =
    "__kernel void ey_step(__global float *ey, __global const float *hz, const int nx,\n"
    "                      const int ny, const float src) {\n"
    "    int j = get_global_id(0), i = get_global_id(1);\n"
    "    if (i >= nx || j >= ny) return;\n"
    "    if (i == 0) ey[j] = src;\n"
    "    else ey[i * ny + j] -= 0.5f * (hz[i * ny + j] - hz[(i - 1) * ny + j]);\n"
    "}\n"
    "__kernel void ex_step(__global float *ex, __global const float *hz, const int nx,\n"
    "                      const int ny) {\n"
    "    int j = get_global_id(0), i = get_global_id(1);\n"
    "    if (i >= nx || j >= ny || j == 0) return;\n"
    "    ex[i * ny + j] -= 0.5f * (hz[i * ny + j] - hz[i * ny + j - 1]);\n"
    "}\n"
    "__kernel void hz_step(__global float *hz, __global const float *ex,\n"
    "                      __global const float *ey, const int nx, const int ny) {\n"
    "    int j = get_global_id(0), i = get_global_id(1);\n"
    "    if (i >= nx - 1 || j >= ny - 1) return;\n"
    "    hz[i * ny + j] -= 0.7f * (ex[i * ny + j + 1] - ex[i * ny + j] + ey[(i + 1) * ny + j]\n"
    "                              - ey[i * ny + j]);\n"
    "}\n";

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 500;
    int nx = argc > 2 ? atoi(argv[2]) : 512, ny = argc > 3 ? atoi(argv[3]) : 512;
    if (steps < 1 || nx < 2 || ny < 2) {
        fprintf(stderr, "usage: fdtd [STEPS>0 [NX>1 [NY>1]]]\n");
        return 2;
    }
    size_t cells = (size_t)nx * ny, bytes = cells * sizeof(float);
    float *ex = malloc(bytes), *ey = malloc(bytes), *hz = malloc(bytes), *g = malloc(bytes);
    if (!ex || !ey || !hz || !g) {
        fprintf(stderr, "bench: out of memory\n");
        return 2;
    }
    for (size_t c = 0; c < cells; c++) {
        ex[c] = (float)(c % 97) / 97.0f;
        ey[c] = (float)(c % 89) / 89.0f;
        hz[c] = (float)(c % 83) / 83.0f;
    }
    struct bench bn;
    bench_init(&bn, SOURCE);
    int rw = CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR;
    cl_mem dex = bench_buffer(&bn, rw, bytes, ex), dey = bench_buffer(&bn, rw, bytes, ey);
    cl_mem dhz = bench_buffer(&bn, rw, bytes, hz);
    cl_kernel key = bench_kernel(&bn, "ey_step"), kex = bench_kernel(&bn, "ex_step");
    cl_kernel khz = bench_kernel(&bn, "hz_step");
    CHECK(clSetKernelArg(key, 0, sizeof dey, &dey));
    CHECK(clSetKernelArg(key, 1, sizeof dhz, &dhz));
    CHECK(clSetKernelArg(key, 2, sizeof nx, &nx));
    CHECK(clSetKernelArg(key, 3, sizeof ny, &ny));
    CHECK(clSetKernelArg(kex, 0, sizeof dex, &dex));
    CHECK(clSetKernelArg(kex, 1, sizeof dhz, &dhz));
    CHECK(clSetKernelArg(kex, 2, sizeof nx, &nx));
    CHECK(clSetKernelArg(kex, 3, sizeof ny, &ny));
    CHECK(clSetKernelArg(khz, 0, sizeof dhz, &dhz));
    CHECK(clSetKernelArg(khz, 1, sizeof dex, &dex));
    CHECK(clSetKernelArg(khz, 2, sizeof dey, &dey));
    CHECK(clSetKernelArg(khz, 3, sizeof nx, &nx));
    CHECK(clSetKernelArg(khz, 4, sizeof ny, &ny));
    size_t local[2] = {16, 16};
    size_t global[2] = {((size_t)ny + 15) / 16 * 16, ((size_t)nx + 15) / 16 * 16};
    double t0 = now_s();
    for (int t = 0; t < steps; t++) {
        float src = (float)t;
        CHECK(clSetKernelArg(key, 4, sizeof src, &src));
        CHECK(clEnqueueNDRangeKernel(bn.queue, key, 2, NULL, global, local, 0, NULL, NULL));
        CHECK(clEnqueueNDRangeKernel(bn.queue, kex, 2, NULL, global, local, 0, NULL, NULL));
        CHECK(clEnqueueNDRangeKernel(bn.queue, khz, 2, NULL, global, local, 0, NULL, NULL));
    }
    CHECK(clFinish(bn.queue));
    double t1 = now_s();
    CHECK(clEnqueueReadBuffer(bn.queue, dhz, CL_TRUE, 0, bytes, g, 0, NULL, NULL));
    /* BENCH_CHECK=0: no host reference (it would take longer than the device's run). */
    const char *check_env = getenv("BENCH_CHECK");
    if (check_env && strcmp(check_env, "0") == 0) {
        printf("fdtd launches=%d loop_s=%.6f check=skipped\n", 3 * steps, t1 - t0);
        return 0;
    }
    for (int t = 0; t < steps; t++) {
        for (int j = 0; j < ny; j++) ey[j] = (float)t;
        for (int i = 1; i < nx; i++)
            for (int j = 0; j < ny; j++)
                ey[i * ny + j] -= 0.5f * (hz[i * ny + j] - hz[(i - 1) * ny + j]);
        for (int i = 0; i < nx; i++)
            for (int j = 1; j < ny; j++)
                ex[i * ny + j] -= 0.5f * (hz[i * ny + j] - hz[i * ny + j - 1]);
        for (int i = 0; i < nx - 1; i++)
            for (int j = 0; j < ny - 1; j++)
                hz[i * ny + j] -= 0.7f * (ex[i * ny + j + 1] - ex[i * ny + j] +
                                          ey[(i + 1) * ny + j] - ey[i * ny + j]);
    }
    double worst = 0;
    for (size_t c = 0; c < cells; c++) {
        double d = fabs((double)g[c] - hz[c]) / (fabs((double)hz[c]) + 1.0);
        if (!(d <= worst)) worst = d;
    }
    int ok = worst < 1e-2;
    printf("fdtd launches=%d loop_s=%.6f check=%s\n", 3 * steps, t1 - t0, ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
