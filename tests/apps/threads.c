/* Fixture: 4 threads launch concurrently, each on its own queue with its own kernel object,
 * sharing one context and program. Every launch carries (thread, iteration) as scalar
 * arguments, so a capture can be checked for each launch appearing exactly once. */
#include "common.h"
#include <pthread.h>

enum { THREADS = 4, ITERS = 25, N = 64 };

static cl_context g_ctx;
static cl_device_id g_dev;
static cl_program g_prog;
static int g_thread_failures[THREADS];

static void *worker(void *arg) {
    int t = (int)(size_t)arg;
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(g_ctx, g_dev, 0, &err);
    CHECK_ERR(err);
    cl_kernel k = make_kernel(g_prog, "tagged");
    cl_mem out = clCreateBuffer(g_ctx, CL_MEM_WRITE_ONLY, sizeof(int) * N, NULL, &err);
    CHECK_ERR(err);
    CHECK(clSetKernelArg(k, 0, sizeof out, &out));
    CHECK(clSetKernelArg(k, 1, sizeof t, &t));
    size_t g = N;
    int got[N];
    for (int it = 0; it < ITERS; it++) {
        CHECK(clSetKernelArg(k, 2, sizeof it, &it));
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
        for (int i = 0; i < N; i++)
            if (got[i] != t * 100000 + it * 100 + i) g_thread_failures[t]++;
    }
    clReleaseMemObject(out);
    clReleaseKernel(k);
    clReleaseCommandQueue(q);
    return NULL;
}

int main(void) {
    cl_platform_id plat;
    pick_device(&plat, &g_dev);
    cl_int err;
    g_ctx = clCreateContext(NULL, 1, &g_dev, NULL, NULL, &err);
    CHECK_ERR(err);
    g_prog = build_program(g_ctx, g_dev, "tagged.cl", "");
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)(size_t)t) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 2;
        }
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < THREADS; t++) {
        EXPECT(g_thread_failures[t] == 0, "thread %d saw %d wrong values", t, g_thread_failures[t]);
        printf("thread %d: %d launches checked\n", t, ITERS);
    }
    clReleaseProgram(g_prog);
    clReleaseContext(g_ctx);
    return finish("threads");
}
