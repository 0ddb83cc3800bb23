/* Fixture: LAUNCHES launches, each followed by clFinish, then the process says so on stdout
 * and waits to be killed (SIGKILL: no exit handler runs). Under the shim, every launch that
 * a clFinish finished must be in the capture anyway. With an argument "exit" it exits
 * normally instead of waiting. */
#include "common.h"
#include <unistd.h>

enum { N = 64, LAUNCHES = 20 };

static const char *SRC =
    "__kernel void advance(__global int *a, int v) { size_t i = get_global_id(0); a[i] += v; }\n";

int main(int argc, char **argv) {
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    open_queue(&dev, &ctx, &q);
    cl_int err;
    cl_program p = build_source(ctx, dev, SRC, "", "killed.c");
    cl_kernel k = make_kernel(p, "advance");
    int zero[N] = {0};
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero, zero, &err);
    CHECK_ERR(err);
    CHECK(clSetKernelArg(k, 0, sizeof a, &a));
    size_t g = N;
    for (int j = 0; j < LAUNCHES; j++) {
        CHECK(clSetKernelArg(k, 1, sizeof j, &j));
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
    }
    printf("finished %d launches\n", LAUNCHES);
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "exit") == 0)
        return finish("killed");
    sleep(60);
    return 0;
}
