/* Fixture: queue kinds — an in-order chain, an out-of-order queue whose kernels are ordered
 * only by events, a profiling queue whose events must still report sane profiling times,
 * and an event callback that must still fire. */
#include "common.h"

enum { N = 256 };

static volatile int g_callback_status = 1;

static void CL_CALLBACK on_complete(cl_event e, cl_int status, void *user) {
    (void)e;
    *(volatile int *)user = status;
}

int main(void) {
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_program p = build_program(ctx, dev, "queues.cl", "");
    cl_kernel kfill_a = make_kernel(p, "fill_seq");
    cl_kernel kfill_b = make_kernel(p, "fill_seq");
    cl_kernel kadd = make_kernel(p, "add_arrays");
    cl_kernel kneg = make_kernel(p, "negate");
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(int) * N, NULL, &err);
    CHECK_ERR(err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(int) * N, NULL, &err);
    CHECK_ERR(err);
    cl_mem c = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(int) * N, NULL, &err);
    CHECK_ERR(err);
    size_t g = N;
    int base_a = 100, base_b = -1000;
    CHECK(clSetKernelArg(kfill_a, 0, sizeof a, &a));
    CHECK(clSetKernelArg(kfill_a, 1, sizeof base_a, &base_a));
    CHECK(clSetKernelArg(kfill_b, 0, sizeof b, &b));
    CHECK(clSetKernelArg(kfill_b, 1, sizeof base_b, &base_b));
    CHECK(clSetKernelArg(kadd, 0, sizeof a, &a));
    CHECK(clSetKernelArg(kadd, 1, sizeof b, &b));
    CHECK(clSetKernelArg(kadd, 2, sizeof c, &c));
    CHECK(clSetKernelArg(kneg, 0, sizeof c, &c));
    int got[N];

    /* In-order: fill, fill, add, negate; the queue alone orders them. */
    {
        cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
        CHECK_ERR(err);
        CHECK(clEnqueueNDRangeKernel(q, kfill_a, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK(clEnqueueNDRangeKernel(q, kfill_b, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK(clEnqueueNDRangeKernel(q, kadd, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK(clEnqueueNDRangeKernel(q, kneg, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK(clEnqueueReadBuffer(q, c, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
        for (int i = 0; i < N; i++)
            EXPECT(got[i] == -((100 + i) + (-1000 + i)), "in-order[%d]=%d", i, got[i]);
        printf("in-order: c[0]=%d c[255]=%d\n", got[0], got[N - 1]);
        clReleaseCommandQueue(q);
    }

    /* Out-of-order: a fill and a non-blocking write may run in any order; add waits for both,
     * negate for add, and the read for negate. A callback on the last kernel's event must
     * fire. */
    {
        cl_command_queue q = clCreateCommandQueue(ctx, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
        if (err == CL_INVALID_QUEUE_PROPERTIES) {
            printf("out-of-order: not supported by this device\n");
        } else {
            CHECK_ERR(err);
            base_a = 7;
            CHECK(clSetKernelArg(kfill_a, 1, sizeof base_a, &base_a));
            cl_event fills[2], added, negated;
            CHECK(clEnqueueNDRangeKernel(q, kfill_a, 1, NULL, &g, NULL, 0, NULL, &fills[0]));
            /* b comes from a non-blocking write this time: the kernel that reads it may
             * only start once the write's event completes. */
            static int host_b[N];
            for (int i = 0; i < N; i++) host_b[i] = -1000 + i;
            CHECK(clEnqueueWriteBuffer(q, b, CL_FALSE, 0, sizeof host_b, host_b, 0, NULL, &fills[1]));
            CHECK(clEnqueueNDRangeKernel(q, kadd, 1, NULL, &g, NULL, 2, fills, &added));
            CHECK(clEnqueueNDRangeKernel(q, kneg, 1, NULL, &g, NULL, 1, &added, &negated));
            CHECK(clSetEventCallback(negated, CL_COMPLETE, on_complete, (void *)&g_callback_status));
            CHECK(clEnqueueReadBuffer(q, c, CL_TRUE, 0, sizeof got, got, 1, &negated, NULL));
            CHECK(clFinish(q));
            for (int i = 0; i < N; i++)
                EXPECT(got[i] == -((7 + i) + (-1000 + i)), "out-of-order[%d]=%d", i, got[i]);
            cl_int st = 1;
            CHECK(clGetEventInfo(negated, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
            EXPECT(st == CL_COMPLETE, "event status %d", st);
            /* The callback runs on a runtime thread; give it a moment after completion. */
            for (int spin = 0; spin < 2000 && g_callback_status != CL_COMPLETE; spin++) {
                struct timespec ts = {0, 1000000};
                nanosleep(&ts, NULL);
            }
            EXPECT(g_callback_status == CL_COMPLETE, "callback status %d", g_callback_status);
            printf("out-of-order: c[0]=%d c[255]=%d, event complete, callback fired\n", got[0], got[N - 1]);
            clReleaseEvent(fills[0]);
            clReleaseEvent(fills[1]);
            clReleaseEvent(added);
            clReleaseEvent(negated);
            clReleaseCommandQueue(q);
        }
    }

    /* Profiling: the kernel's event reports queued <= submit <= start <= end. */
    {
        cl_command_queue q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
        CHECK_ERR(err);
        cl_event ev;
        CHECK(clEnqueueNDRangeKernel(q, kneg, 1, NULL, &g, NULL, 0, NULL, &ev));
        CHECK(clWaitForEvents(1, &ev));
        cl_ulong t[4];
        cl_profiling_info what[4] = {CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
                                     CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END};
        for (int i = 0; i < 4; i++)
            CHECK(clGetEventProfilingInfo(ev, what[i], sizeof t[i], &t[i], NULL));
        EXPECT(t[0] > 0 && t[0] <= t[1] && t[1] <= t[2] && t[2] <= t[3],
               "profiling times %llu %llu %llu %llu", (unsigned long long)t[0],
               (unsigned long long)t[1], (unsigned long long)t[2], (unsigned long long)t[3]);
        CHECK(clEnqueueReadBuffer(q, c, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
        for (int i = 0; i < N; i++)
            EXPECT(got[i] == (7 + i) + (-1000 + i), "profiling[%d]=%d", i, got[i]);
        printf("profiling: times ordered, c[0]=%d\n", got[0]);
        clReleaseEvent(ev);
        clReleaseCommandQueue(q);
    }

    clReleaseKernel(kfill_a);
    clReleaseKernel(kfill_b);
    clReleaseKernel(kadd);
    clReleaseKernel(kneg);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseMemObject(c);
    clReleaseProgram(p);
    clReleaseContext(ctx);
    return finish("queues");
}
