/* Fixture: ROUNDS launches of `band` over a buffer of MIB MiB of incompressible words, each
 * rewriting one 64 KiB slice (at a different place every round; clFinish after each), as a
 * solver that updates a band of its grid per step; checks the whole buffer against the host's
 * model at the end. Usage: slices [ROUNDS] [MIB]   (defaults 24 and 4) */
#include "common.h"

enum { SLICE = 1 << 14 };

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 24;
    long mib = argc > 2 ? atol(argv[2]) : 4;
    if (rounds <= 0 || mib < 1 || mib > 4096) {
        fprintf(stderr, "usage: slices [ROUNDS>0] [MIB 1..4096]\n");
        return 2;
    }
    const cl_uint WORDS = (cl_uint)(mib << 18);
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    open_queue(&dev, &ctx, &q);
    cl_int err;
    cl_program p = build_program(ctx, dev, "slices.cl", "");
    cl_kernel band = make_kernel(p, "band");
    cl_uint *host = malloc(sizeof(cl_uint) * WORDS);
    cl_uint *got = malloc(sizeof(cl_uint) * WORDS);
    if (!host || !got) {
        fprintf(stderr, "out of memory\n");
        return 2;
    }
    for (cl_uint i = 0; i < WORDS; i++) host[i] = mix(i + 1);
    cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              sizeof(cl_uint) * WORDS, host, &err);
    CHECK_ERR(err);
    size_t g = SLICE;
    CHECK(clSetKernelArg(band, 0, sizeof x, &x));
    for (cl_uint r = 0; r < (cl_uint)rounds; r++) {
        cl_uint first = (r * 7u * SLICE) % (WORDS - SLICE);
        CHECK(clSetKernelArg(band, 1, sizeof first, &first));
        CHECK(clSetKernelArg(band, 2, sizeof r, &r));
        CHECK(clEnqueueNDRangeKernel(q, band, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
        for (cl_uint i = first; i < first + SLICE; i++)
            host[i] = mix(host[i] ^ (r * 0x9e3779b9U) ^ i);
    }
    CHECK(clEnqueueReadBuffer(q, x, CL_TRUE, 0, sizeof(cl_uint) * WORDS, got, 0, NULL, NULL));
    int bad = 0;
    for (cl_uint i = 0; i < WORDS && bad < 5; i++)
        if (got[i] != host[i]) {
            EXPECT(0, "x[%u]=%u want %u", i, got[i], host[i]);
            bad++;
        }
    free(host);
    free(got);
    return finish("slices");
}
