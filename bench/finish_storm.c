/*
 * Finish storm: the host pattern of many real applications, one launch then clFinish,
 * repeated N times (default 20000). Every clFinish is a synchronisation point where a capture
 * that waits for its writer thread makes the application wait too; this benchmark measures
 * what the capture adds there. ELEMS floats per buffer (default 64: the per-launch cost of
 * the capture; a large size such as 1048576, 4 MB, adds the cost of its reads and digests).
 * The scalar cycles through 4 values, so the outputs repeat and a deduplicating capture
 * stores only a handful of distinct contents.
 *
 * Prints: "finish-storm launches=N elems=E loop_s=S check=ok"   (S: first enqueue to the
 *         last clFinish)
 * Usage: finish-storm [N] [ELEMS]
 */
#include "common.h"

static const char *SOURCE =
    "__kernel void axpy(__global const float *x, __global float *y, float a) {\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = a * x[i] + 1.0f;\n"
    "}\n";

int main(int argc, char **argv) {
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    long elems = argc > 2 ? strtol(argv[2], NULL, 10) : 64;
    if (n <= 0 || elems <= 0) {
        fprintf(stderr, "usage: finish-storm [N>0] [ELEMS>0]\n");
        return 2;
    }
    size_t bytes = (size_t)elems * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes);
    if (!x || !y) {
        fprintf(stderr, "finish-storm: out of memory\n");
        return 2;
    }
    for (long i = 0; i < elems; i++)
        x[i] = (float)(i % 1000);
    struct bench b;
    bench_init(&b, SOURCE);
    cl_mem dx = bench_buffer(&b, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, x);
    cl_mem dy = bench_buffer(&b, CL_MEM_WRITE_ONLY, bytes, NULL);
    cl_kernel k = bench_kernel(&b, "axpy");
    CHECK(clSetKernelArg(k, 0, sizeof dx, &dx));
    CHECK(clSetKernelArg(k, 1, sizeof dy, &dy));
    size_t global = (size_t)elems;

    double t0 = now_s();
    for (long j = 0; j < n; j++) {
        cl_float a = (cl_float)(j % 4);
        CHECK(clSetKernelArg(k, 2, sizeof a, &a));
        CHECK(clEnqueueNDRangeKernel(b.queue, k, 1, NULL, &global, NULL, 0, NULL, NULL));
        CHECK(clFinish(b.queue));
    }
    double t1 = now_s();

    CHECK(clEnqueueReadBuffer(b.queue, dy, CL_TRUE, 0, bytes, y, 0, NULL, NULL));
    float a = (float)((n - 1) % 4);
    int ok = 1;
    for (long i = 0; i < elems; i++)
        ok &= y[i] == a * x[i] + 1.0f;
    printf("finish-storm launches=%ld elems=%ld loop_s=%.6f check=%s\n", n, elems, t1 - t0,
           ok ? "ok" : "WRONG");
    free(x);
    free(y);
    return ok ? 0 : 1;
}
