/* Fixture: the first launch of a context is enqueued from inside an event callback (a
 * pipeline that chains work from completion callbacks), then more launches follow on the main
 * thread. The specification leaves undefined building a program or creating a queue inside a
 * callback, so a capture with device-side digests must not build its digest engine there.
 * Prints the results, which it checks:
 *   "callback launch: a[0]=A a[N-1]=B, then 3 launches on the main thread: a[0]=C" */
#include "common.h"
#include <stdatomic.h>
#include <unistd.h>

enum { N = 16384 };

static const char *SRC =
    "__kernel void inc(__global int *a, int v) { size_t i = get_global_id(0); a[i] += v; }\n";

struct chain {
    cl_command_queue q;
    cl_kernel k;
    atomic_int done;
    cl_int err;
};

static void CL_CALLBACK after_write(cl_event ev, cl_int status, void *user) {
    (void)ev;
    struct chain *c = user;
    size_t g = N;
    c->err = status == CL_COMPLETE
                 ? clEnqueueNDRangeKernel(c->q, c->k, 1, NULL, &g, NULL, 0, NULL, NULL)
                 : status;
    if (c->err == CL_SUCCESS) c->err = clFlush(c->q);
    atomic_store(&c->done, 1);
}

int main(void) {
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    open_queue(&dev, &ctx, &q);
    cl_int err;
    cl_program p = build_source(ctx, dev, SRC, "", "callback_launch.c");
    cl_kernel k = make_kernel(p, "inc");
    static int host[N];
    for (int i = 0; i < N; i++) host[i] = i;
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof host, NULL, &err);
    CHECK_ERR(err);
    int v = 5;
    CHECK(clSetKernelArg(k, 0, sizeof b, &b));
    CHECK(clSetKernelArg(k, 1, sizeof v, &v));
    struct chain c = {q, k, 0, CL_SUCCESS};
    cl_event written;
    CHECK(clEnqueueWriteBuffer(q, b, CL_FALSE, 0, sizeof host, host, 0, NULL, &written));
    CHECK(clSetEventCallback(written, CL_COMPLETE, after_write, &c));
    CHECK(clFlush(q));
    for (int waited = 0; !atomic_load(&c.done) && waited < 30000; waited++) usleep(1000);
    EXPECT(atomic_load(&c.done), "the callback ran");
    CHECK(c.err);
    CHECK(clFinish(q));
    CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    EXPECT(host[0] == 5 && host[N - 1] == N - 1 + 5, "a[0]=%d a[N-1]=%d", host[0], host[N - 1]);
    printf("callback launch: a[0]=%d a[N-1]=%d", host[0], host[N - 1]);
    size_t g = N;
    for (int i = 0; i < 3; i++) {
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
    }
    CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    EXPECT(host[0] == 20, "a[0]=%d", host[0]);
    printf(", then 3 launches on the main thread: a[0]=%d\n", host[0]);
    clReleaseEvent(written);
    clReleaseMemObject(b);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return g_failures ? 1 : 0;
}
