/* Fixture: an application that makes its queue and a 1 MiB buffer, then either launches over
 * it (mode "launch", the default: 4 launches, each followed by clFinish, results checked) or
 * never launches and exits at once without releasing anything (mode "exit": a program that
 * sets up and leaves). Under a capture with device-side digests the shim prepares its digest
 * engine on a thread of its own as soon as the queue and the buffer exist; the application
 * must behave the same either way.
 * Prints "prepared: mode=M a[0]=X a[N-1]=Y". */
#include "common.h"

enum { N = 1 << 18 };

static const char *SRC =
    "__kernel void bump(__global int *a, int v) { size_t i = get_global_id(0); a[i] += v; }\n";

int main(int argc, char **argv) {
    int launch = !(argc > 1 && strcmp(argv[1], "exit") == 0);
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    open_queue(&dev, &ctx, &q);
    cl_int err;
    static int host[N];
    for (int i = 0; i < N; i++) host[i] = i;
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host, &err);
    CHECK_ERR(err);
    if (!launch) {
        printf("prepared: mode=exit a[0]=%d a[N-1]=%d\n", host[0], host[N - 1]);
        return 0;
    }
    cl_program p = build_source(ctx, dev, SRC, "", "prepared.c");
    cl_kernel k = make_kernel(p, "bump");
    size_t g = N;
    for (int v = 1; v <= 4; v++) {
        CHECK(clSetKernelArg(k, 0, sizeof b, &b));
        CHECK(clSetKernelArg(k, 1, sizeof v, &v));
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
    }
    CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    EXPECT(host[0] == 10 && host[N - 1] == N - 1 + 10, "a[0]=%d a[N-1]=%d", host[0], host[N - 1]);
    printf("prepared: mode=launch a[0]=%d a[N-1]=%d\n", host[0], host[N - 1]);
    clReleaseMemObject(b);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return g_failures ? 1 : 0;
}
