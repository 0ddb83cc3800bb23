/*
 * Partial update: L (default 100) launches over one 16 MB buffer, each changing one tenth of
 * it (a contiguous 1.6 MB slice, the next slice at each launch) and leaving the rest as it
 * was — a solver sweeping a grid block by block, a particle system updating one cell range.
 * Every word of the slice changes (an LCG step on uint words, so the host can check the
 * result exactly); the buffer starts as incompressible noise. A capture that stores whole
 * versions writes 16 MB per launch; one that shares unchanged parts writes about the 1.6 MB
 * that changed.
 *
 * Prints: "partial-update launches=L loop_s=S changed_bytes=B check=ok"
 *         (S: first enqueue to clFinish; B: bytes the launches changed in all)
 * Usage: partial-update [L]
 */
#include "common.h"

static const char *SOURCE =
    "__kernel void advance(__global uint *x, uint start) {\n"
    "    size_t i = start + get_global_id(0);\n"
    "    x[i] = x[i] * 1664525u + 1013904223u;\n"
    "}\n";

enum { WORDS = 4 << 20, SLICE = WORDS / 10 };

int main(int argc, char **argv) {
    long launches = argc > 1 ? strtol(argv[1], NULL, 10) : 100;
    if (launches <= 0) {
        fprintf(stderr, "usage: partial-update [L>0]\n");
        return 2;
    }
    cl_uint *host = malloc(sizeof(cl_uint) * WORDS), *got = malloc(sizeof(cl_uint) * WORDS);
    if (!host || !got) {
        fprintf(stderr, "bench: out of memory\n");
        return 2;
    }
    cl_uint s = 2463534242u;
    for (size_t i = 0; i < WORDS; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        host[i] = s;
    }
    struct bench b;
    bench_init(&b, SOURCE);
    cl_mem x = bench_buffer(&b, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(cl_uint) * WORDS,
                            host);
    cl_kernel k = bench_kernel(&b, "advance");
    CHECK(clSetKernelArg(k, 0, sizeof x, &x));
    size_t global = SLICE;
    double t0 = now_s();
    for (long j = 0; j < launches; j++) {
        cl_uint start = (cl_uint)((j % 10) * SLICE);
        CHECK(clSetKernelArg(k, 1, sizeof start, &start));
        CHECK(clEnqueueNDRangeKernel(b.queue, k, 1, NULL, &global, NULL, 0, NULL, NULL));
    }
    CHECK(clFinish(b.queue));
    double t1 = now_s();
    for (long j = 0; j < launches; j++)
        for (size_t i = (size_t)(j % 10) * SLICE; i < (size_t)(j % 10 + 1) * SLICE; i++)
            host[i] = host[i] * 1664525u + 1013904223u;
    CHECK(clEnqueueReadBuffer(b.queue, x, CL_TRUE, 0, sizeof(cl_uint) * WORDS, got, 0, NULL,
                              NULL));
    int ok = memcmp(host, got, sizeof(cl_uint) * WORDS) == 0;
    printf("partial-update launches=%ld loop_s=%.6f changed_bytes=%ld check=%s\n", launches,
           t1 - t0, launches * (long)(SLICE * sizeof(cl_uint)), ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
