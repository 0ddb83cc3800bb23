/*
 * A dynamic-programming wavefront as Needleman-Wunsch style applications run it: an
 * (N+1) x (N+1) int score matrix (default N = 2047: 16 MB) filled one anti-diagonal per
 * launch, each launch reading the two diagonals before it and writing its own. The whole
 * matrix is an argument of every launch, so a capture reads back 16 MB per launch while each
 * launch changes only one diagonal: the pattern a `full` capture slowed 6x.
 *
 * BENCH_CHECK=0 skips the host reference and prints check=skipped.
 * Prints: "wavefront launches=L loop_s=S check=ok"   (the matrix compared with the host)
 * Usage: wavefront [N [DIAGS]]   (DIAGS: diagonals filled, default all 2N - 1)
 */
#include "common.h"

static const char *SOURCE =
    "__kernel void diag(__global int *m, __global const int *a, __global const int *b,\n"
    "                   const int n, const int d) {\n"
    "    int k = get_global_id(0);\n"
    "    int i = (d < n ? d : n - 1) - k + 1, j = d - i + 2;\n"
    "    if (i < 1 || j < 1 || i > n || j > n) return;\n"
    "    int w = n + 1;\n"
    "    int s = m[(i - 1) * w + j - 1] + (a[i - 1] == b[j - 1] ? 2 : -1);\n"
    "    int u = m[(i - 1) * w + j] - 1, l = m[i * w + j - 1] - 1;\n"
    "    m[i * w + j] = max(s, max(u, l));\n"
    "}\n";

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2047;
    int diags = argc > 2 ? atoi(argv[2]) : 2 * n - 1;
    if (n < 2 || diags < 1 || diags > 2 * n - 1) {
        fprintf(stderr, "usage: wavefront [N>1 [DIAGS in 1..2N-1]]\n");
        return 2;
    }
    int w = n + 1;
    size_t cells = (size_t)w * w;
    int *m = calloc(cells, sizeof(int)), *g = malloc(cells * sizeof(int));
    int *a = malloc((size_t)n * sizeof(int)), *b = malloc((size_t)n * sizeof(int));
    if (!m || !g || !a || !b) {
        fprintf(stderr, "bench: out of memory\n");
        return 2;
    }
    for (int i = 0; i < n; i++) {
        a[i] = (i * 31 + 7) % 4;
        b[i] = (i * 17 + 3) % 4;
    }
    for (int i = 0; i < w; i++) {
        m[i * w] = -i;
        m[i] = -i;
    }
    struct bench bn;
    bench_init(&bn, SOURCE);
    cl_mem dm = bench_buffer(&bn, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, cells * sizeof(int), m);
    cl_mem da = bench_buffer(&bn, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)n * sizeof(int), a);
    cl_mem db = bench_buffer(&bn, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)n * sizeof(int), b);
    cl_kernel k = bench_kernel(&bn, "diag");
    CHECK(clSetKernelArg(k, 0, sizeof dm, &dm));
    CHECK(clSetKernelArg(k, 1, sizeof da, &da));
    CHECK(clSetKernelArg(k, 2, sizeof db, &db));
    CHECK(clSetKernelArg(k, 3, sizeof n, &n));
    double t0 = now_s();
    for (int d = 0; d < diags; d++) {
        int len = d < n ? d + 1 : 2 * n - 1 - d;
        size_t local = 64, global = ((size_t)len + 63) / 64 * 64;
        CHECK(clSetKernelArg(k, 4, sizeof d, &d));
        CHECK(clEnqueueNDRangeKernel(bn.queue, k, 1, NULL, &global, &local, 0, NULL, NULL));
    }
    CHECK(clFinish(bn.queue));
    double t1 = now_s();
    CHECK(clEnqueueReadBuffer(bn.queue, dm, CL_TRUE, 0, cells * sizeof(int), g, 0, NULL, NULL));
    /* BENCH_CHECK=0: no host reference (it would take longer than the device's run). */
    const char *check_env = getenv("BENCH_CHECK");
    if (check_env && strcmp(check_env, "0") == 0) {
        printf("wavefront launches=%d loop_s=%.6f check=skipped\n", diags, t1 - t0);
        return 0;
    }
    for (int d = 0; d < diags; d++)
        for (int i = 1; i <= n; i++) {
            int j = d - i + 2;
            if (j < 1 || j > n) continue;
            int s = m[(i - 1) * w + j - 1] + (a[i - 1] == b[j - 1] ? 2 : -1);
            int u = m[(i - 1) * w + j] - 1, l = m[i * w + j - 1] - 1;
            m[i * w + j] = s > u ? (s > l ? s : l) : (u > l ? u : l);
        }
    int ok = memcmp(m, g, cells * sizeof(int)) == 0;
    printf("wavefront launches=%d loop_s=%.6f check=%s\n", diags, t1 - t0, ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
