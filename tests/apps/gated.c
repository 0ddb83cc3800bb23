/* Fixture: launches that cannot start when they are enqueued. A kernel waits on a user
 * event that the host completes only after the enqueue returned (and after a second,
 * independent launch was enqueued and finished). A capture tool that waits for a launch
 * inside clEnqueueNDRangeKernel deadlocks here; an alarm turns that hang into a failure. */
#include "common.h"
#include <unistd.h>

enum { N = 64 };

int main(void) {
    alarm(60);
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    cl_command_queue q2 = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    cl_program p = build_program(ctx, dev, "queues.cl", "");
    cl_kernel kfill = make_kernel(p, "fill_seq");
    cl_kernel kneg = make_kernel(p, "negate");
    cl_kernel kfill2 = make_kernel(p, "fill_seq");
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(int) * N, NULL, &err);
    CHECK_ERR(err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(int) * N, NULL, &err);
    CHECK_ERR(err);
    size_t g = N;
    int base = 40, base2 = -7;
    CHECK(clSetKernelArg(kfill, 0, sizeof a, &a));
    CHECK(clSetKernelArg(kfill, 1, sizeof base, &base));
    CHECK(clSetKernelArg(kneg, 0, sizeof a, &a));
    CHECK(clSetKernelArg(kfill2, 0, sizeof b, &b));
    CHECK(clSetKernelArg(kfill2, 1, sizeof base2, &base2));

    cl_event gate = clCreateUserEvent(ctx, &err);
    CHECK_ERR(err);
    cl_event filled, negated;
    /* Both of these wait for the gate; the enqueues themselves must return at once. */
    CHECK(clEnqueueNDRangeKernel(q, kfill, 1, NULL, &g, NULL, 1, &gate, &filled));
    CHECK(clEnqueueNDRangeKernel(q, kneg, 1, NULL, &g, NULL, 1, &filled, &negated));
    CHECK(clFlush(q));
    cl_int st = 0;
    CHECK(clGetEventInfo(negated, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
    EXPECT(st != CL_COMPLETE, "the gated launch completed before its gate opened (%d)", st);
    printf("gated launches enqueued; gate still closed\n");

    /* Meanwhile an independent launch on another queue runs to completion. */
    CHECK(clEnqueueNDRangeKernel(q2, kfill2, 1, NULL, &g, NULL, 0, NULL, NULL));
    int gotb[N];
    CHECK(clEnqueueReadBuffer(q2, b, CL_TRUE, 0, sizeof gotb, gotb, 0, NULL, NULL));
    for (int i = 0; i < N; i++) EXPECT(gotb[i] == -7 + i, "b[%d]=%d", i, gotb[i]);
    printf("independent launch done while the gate was closed\n");

    CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
    int got[N];
    CHECK(clEnqueueReadBuffer(q, a, CL_TRUE, 0, sizeof got, got, 1, &negated, NULL));
    for (int i = 0; i < N; i++) EXPECT(got[i] == -(40 + i), "a[%d]=%d", i, got[i]);
    printf("gate opened: a[0]=%d a[63]=%d\n", got[0], got[N - 1]);

    clReleaseEvent(gate);
    clReleaseEvent(filled);
    clReleaseEvent(negated);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseKernel(kfill);
    clReleaseKernel(kneg);
    clReleaseKernel(kfill2);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseCommandQueue(q2);
    clReleaseContext(ctx);
    return finish("gated");
}
