/* Fixture: one buffer of MB MiB (a ramp of words), three launches of `bump` enqueued without
 * waiting, a clFinish, a pause of PAUSE seconds, a fourth launch, then a read-back that checks
 * every word went up by four. Under `--buffers full` with a paced `auto` derive threshold
 * (`--derive-pace`) the first launch stores its two versions (2 x MB), the next two pass the
 * threshold and derive, and the fourth, after the pause, finds the threshold grown past what
 * is stored and stores everything again.
 * Usage: paced [MB] [PAUSE]   (default 192 MiB, 3 s) */
#include "common.h"
#include <unistd.h>

int main(int argc, char **argv) {
    size_t mb = argc > 1 ? (size_t)atoi(argv[1]) : 192;
    unsigned pause = argc > 2 ? (unsigned)atoi(argv[2]) : 3;
    size_t words = mb << 18;
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    open_queue(&dev, &ctx, &q);
    cl_int err;
    cl_program p = build_program(ctx, dev, "paced.cl", "");
    cl_kernel bump = make_kernel(p, "bump");
    cl_uint *host = malloc(sizeof(cl_uint) * words);
    EXPECT(host != NULL, "no memory for %zu MiB", mb);
    for (size_t i = 0; i < words; i++)
        host[i] = (cl_uint)i;
    cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              sizeof(cl_uint) * words, host, &err);
    CHECK_ERR(err);
    CHECK(clSetKernelArg(bump, 0, sizeof x, &x));
    size_t global = words;
    for (int i = 0; i < 3; i++)
        CHECK(clEnqueueNDRangeKernel(q, bump, 1, NULL, &global, NULL, 0, NULL, NULL));
    CHECK(clFinish(q));
    sleep(pause);
    CHECK(clEnqueueNDRangeKernel(q, bump, 1, NULL, &global, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, x, CL_TRUE, 0, sizeof(cl_uint) * words, host, 0, NULL, NULL));
    size_t bad = 0;
    for (size_t i = 0; i < words; i++)
        bad += host[i] != (cl_uint)i + 4u;
    EXPECT(bad == 0, "%zu wrong words", bad);
    printf("paced: 4 launches over %zu MiB, %s\n", mb, bad ? "wrong" : "ok");
    return bad != 0;
}
