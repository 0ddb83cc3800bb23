/* Fixture: object lifetimes and re-entrancy the OpenCL specification allows but a capture
 * tool can trip over.
 *  1. Kernel, program and buffers released right after the enqueue, before the launch has
 *     run (the runtime keeps them alive until it completes); the result arrives through a
 *     non-blocking read enqueued before the release.
 *  2. A launch enqueued from inside an event callback (on the runtime's thread) while the
 *     main thread waits.
 * An alarm turns a deadlock into a failure. */
#include "common.h"
#include <unistd.h>

enum { N = 128 };

static cl_command_queue g_q;
static cl_kernel g_kneg;
static volatile int g_callback_enqueued = 0;

static void CL_CALLBACK enqueue_from_callback(cl_event e, cl_int status, void *user) {
    (void)e;
    (void)user;
    size_t g = N;
    cl_int err = status == CL_COMPLETE
                     ? clEnqueueNDRangeKernel(g_q, g_kneg, 1, NULL, &g, NULL, 0, NULL, NULL)
                     : status;
    if (err == CL_SUCCESS) err = clFlush(g_q);
    g_callback_enqueued = err == CL_SUCCESS ? 1 : -1;
}

int main(void) {
    alarm(60);
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    g_q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    size_t g = N;

    /* 1. Early release. */
    {
        cl_program p = build_program(ctx, dev, "queues.cl", "");
        cl_kernel k = make_kernel(p, "add_arrays");
        int a[N], b[N], c[N];
        for (int i = 0; i < N; i++) {
            a[i] = i * 5;
            b[i] = 1000 - i;
            c[i] = 0;
        }
        cl_mem ba = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof a, a, &err);
        CHECK_ERR(err);
        cl_mem bb = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof b, b, &err);
        CHECK_ERR(err);
        cl_mem bc = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof c, NULL, &err);
        CHECK_ERR(err);
        CHECK(clSetKernelArg(k, 0, sizeof ba, &ba));
        CHECK(clSetKernelArg(k, 1, sizeof bb, &bb));
        CHECK(clSetKernelArg(k, 2, sizeof bc, &bc));
        CHECK(clEnqueueNDRangeKernel(g_q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK(clEnqueueReadBuffer(g_q, bc, CL_FALSE, 0, sizeof c, c, 0, NULL, NULL));
        CHECK(clReleaseKernel(k));
        CHECK(clReleaseProgram(p));
        CHECK(clReleaseMemObject(ba));
        CHECK(clReleaseMemObject(bb));
        CHECK(clReleaseMemObject(bc));
        CHECK(clFinish(g_q));
        for (int i = 0; i < N; i++) EXPECT(c[i] == 1000 + 4 * i, "c[%d]=%d", i, c[i]);
        printf("early release: c[0]=%d c[127]=%d\n", c[0], c[N - 1]);
    }

    /* 2. Enqueue from a callback. */
    {
        cl_program p = build_program(ctx, dev, "queues.cl", "");
        cl_kernel kfill = make_kernel(p, "fill_seq");
        g_kneg = make_kernel(p, "negate");
        cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(int) * N, NULL, &err);
        CHECK_ERR(err);
        int base = 3;
        CHECK(clSetKernelArg(kfill, 0, sizeof b, &b));
        CHECK(clSetKernelArg(kfill, 1, sizeof base, &base));
        CHECK(clSetKernelArg(g_kneg, 0, sizeof b, &b));
        cl_event filled;
        CHECK(clEnqueueNDRangeKernel(g_q, kfill, 1, NULL, &g, NULL, 0, NULL, &filled));
        CHECK(clSetEventCallback(filled, CL_COMPLETE, enqueue_from_callback, NULL));
        CHECK(clFlush(g_q));
        for (int spin = 0; spin < 20000 && g_callback_enqueued == 0; spin++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        EXPECT(g_callback_enqueued == 1, "callback enqueue state %d", g_callback_enqueued);
        CHECK(clFinish(g_q));
        int got[N];
        CHECK(clEnqueueReadBuffer(g_q, b, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
        for (int i = 0; i < N; i++) EXPECT(got[i] == -(3 + i), "b[%d]=%d", i, got[i]);
        printf("enqueue from a callback: b[0]=%d b[127]=%d\n", got[0], got[N - 1]);
        clReleaseEvent(filled);
        clReleaseMemObject(b);
        clReleaseKernel(kfill);
        clReleaseKernel(g_kneg);
        clReleaseProgram(p);
    }

    clReleaseCommandQueue(g_q);
    clReleaseContext(ctx);
    return finish("lifetimes");
}
