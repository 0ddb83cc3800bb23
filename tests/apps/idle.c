/* Fixture: a capture with device-side digests whose digest engine goes idle. Three rounds of
 * a launch over a 1 MiB buffer (and a small one), each followed by a pause of 4 s during which
 * the shim releases its idle engine and builds it again at the next launch; a second thread
 * launches meanwhile on its own queue. Every result is checked. */
#include "common.h"
#include <pthread.h>
#include <unistd.h>

enum { N = 1 << 18, SMALL = 64, ROUNDS = 3 };

static const char *SRC =
    "__kernel void bump(__global int *a, int v) { size_t i = get_global_id(0); a[i] += v; }\n";

struct side {
    cl_context ctx;
    cl_device_id dev;
    cl_program p;
    int ok;
};

static void *other_thread(void *arg) {
    struct side *s = arg;
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(s->ctx, s->dev, 0, &err);
    CHECK_ERR(err);
    cl_kernel k = clCreateKernel(s->p, "bump", &err);
    CHECK_ERR(err);
    int host[SMALL] = {0};
    cl_mem b = clCreateBuffer(s->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host, &err);
    CHECK_ERR(err);
    size_t g = SMALL;
    for (int i = 0; i < 50; i++) {
        int v = 1;
        CHECK(clSetKernelArg(k, 0, sizeof b, &b));
        CHECK(clSetKernelArg(k, 1, sizeof v, &v));
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
        usleep(20000);
    }
    CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    s->ok = host[0] == 50 && host[SMALL - 1] == 50;
    clReleaseMemObject(b);
    clReleaseKernel(k);
    clReleaseCommandQueue(q);
    return NULL;
}

int main(void) {
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    cl_program p = build_source(ctx, dev, SRC, "", "idle.c");
    cl_kernel k = make_kernel(p, "bump");
    int *host = calloc(N, sizeof(int));
    cl_mem big = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(int) * N, host, &err);
    CHECK_ERR(err);
    struct side s = {ctx, dev, p, 0};
    pthread_t t;
    pthread_create(&t, NULL, other_thread, &s);
    size_t g = N;
    for (int r = 0; r < ROUNDS; r++) {
        int v = r + 1;
        CHECK(clSetKernelArg(k, 0, sizeof big, &big));
        CHECK(clSetKernelArg(k, 1, sizeof v, &v));
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
        sleep(4);
    }
    pthread_join(t, NULL);
    CHECK(clEnqueueReadBuffer(q, big, CL_TRUE, 0, sizeof(int) * N, host, 0, NULL, NULL));
    EXPECT(host[0] == 6 && host[N - 1] == 6, "big[0]=%d big[N-1]=%d, want 6", host[0], host[N - 1]);
    EXPECT(s.ok, "the other thread's results are wrong");
    printf("idle: %d rounds with pauses, results %s\n", ROUNDS, host[0] == 6 && s.ok ? "ok" : "WRONG");
    free(host);
    clReleaseMemObject(big);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return finish("idle");
}
