/*
 * Buffer-heavy: L (default 200) launches over several 4-16 MB buffers, measuring what a full
 * capture costs in time and disk. Most contents repeat (the same inputs, outputs that cycle
 * through 5 scale factors), a few are new each time (an accumulator updated in place every
 * 10th launch), so a deduplicating capture must write far fewer bytes than it reads.
 *
 *   launch j % 10 == 9 : accumulate(acc 4 MB, in8 8 MB)     acc += in8   (new content)
 *   otherwise, j even  : scale(in16 16 MB -> out16 16 MB, f = j % 5)     (repeats)
 *   otherwise, j odd   : scale(in8  8 MB  -> out4   4 MB, f = j % 5)     (repeats)
 *
 * Prints: "buffer-heavy launches=L loop_s=S check=ok"   (S: first enqueue to clFinish)
 * Usage: buffer-heavy [L]
 */
#include "common.h"

static const char *SOURCE =
    "__kernel void scale(__global const float *in, __global float *out, float f) {\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = in[i] * f;\n"
    "}\n"
    "__kernel void accumulate(__global float *acc, __global const float *in) {\n"
    "    size_t i = get_global_id(0);\n"
    "    acc[i] += in[i];\n"
    "}\n";

#define MB (1u << 20)

/* A host array of `bytes` bytes: base + (i % 1021), or all zero when base is 0. */
static float *filled(size_t bytes, float base) {
    size_t n = bytes / sizeof(float);
    float *p = calloc(n, sizeof(float));
    if (!p) {
        fprintf(stderr, "bench: out of memory\n");
        exit(2);
    }
    for (size_t i = 0; base != 0.0f && i < n; i++)
        p[i] = base + (float)(i % 1021);
    return p;
}

int main(int argc, char **argv) {
    long launches = argc > 1 ? strtol(argv[1], NULL, 10) : 200;
    if (launches <= 0) {
        fprintf(stderr, "usage: buffer-heavy [L>0]\n");
        return 2;
    }
    struct bench b;
    bench_init(&b, SOURCE);
    float *h16 = filled(16 * MB, 1.0f), *h8 = filled(8 * MB, 2.0f), *zero4 = filled(4 * MB, 0.0f);
    cl_mem in16 = bench_buffer(&b, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 16 * MB, h16);
    cl_mem in8 = bench_buffer(&b, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 8 * MB, h8);
    cl_mem out16 = bench_buffer(&b, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 16 * MB, h16);
    cl_mem out4 = bench_buffer(&b, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 4 * MB, zero4);
    cl_mem acc = bench_buffer(&b, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 4 * MB, zero4);
    cl_kernel scale = bench_kernel(&b, "scale");
    cl_kernel accumulate = bench_kernel(&b, "accumulate");
    CHECK(clSetKernelArg(accumulate, 0, sizeof acc, &acc));
    CHECK(clSetKernelArg(accumulate, 1, sizeof in8, &in8));

    long accumulations = 0;
    double t0 = now_s();
    for (long j = 0; j < launches; j++) {
        if (j % 10 == 9) {
            size_t global = 4 * MB / sizeof(float);
            CHECK(clEnqueueNDRangeKernel(b.queue, accumulate, 1, NULL, &global, NULL, 0, NULL,
                                         NULL));
            accumulations++;
            continue;
        }
        cl_float f = (cl_float)(j % 5);
        int big = j % 2 == 0;
        cl_mem in = big ? in16 : in8, out = big ? out16 : out4;
        size_t global = (big ? 16 * MB : 4 * MB) / sizeof(float);
        CHECK(clSetKernelArg(scale, 0, sizeof in, &in));
        CHECK(clSetKernelArg(scale, 1, sizeof out, &out));
        CHECK(clSetKernelArg(scale, 2, sizeof f, &f));
        CHECK(clEnqueueNDRangeKernel(b.queue, scale, 1, NULL, &global, NULL, 0, NULL, NULL));
    }
    CHECK(clFinish(b.queue));
    double t1 = now_s();

    /* acc = accumulations * in8 (exact: small integers); out4 = in8[:1M] * f of the last
     * odd non-accumulate launch. */
    float *got = filled(4 * MB, 0.0f);
    CHECK(clEnqueueReadBuffer(b.queue, acc, CL_TRUE, 0, 4 * MB, got, 0, NULL, NULL));
    int ok = 1;
    for (size_t i = 0; i < 4 * MB / sizeof(float); i++)
        ok &= got[i] == (float)accumulations * h8[i];
    long last_odd = -1;
    for (long j = 0; j < launches; j++)
        if (j % 10 != 9 && j % 2 == 1)
            last_odd = j;
    if (last_odd >= 0) {
        CHECK(clEnqueueReadBuffer(b.queue, out4, CL_TRUE, 0, 4 * MB, got, 0, NULL, NULL));
        for (size_t i = 0; i < 4 * MB / sizeof(float); i++)
            ok &= got[i] == h8[i] * (float)(last_odd % 5);
    }
    free(got);
    printf("buffer-heavy launches=%ld loop_s=%.6f check=%s\n", launches, t1 - t0,
           ok ? "ok" : "WRONG");
    free(h16);
    free(h8);
    free(zero4);
    return ok ? 0 : 1;
}
