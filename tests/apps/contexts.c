/* Fixture: an application that creates, uses and releases whole contexts in a loop (the
 * shim's own objects must not outlive the application's context).
 *
 * argv[1]: cycles (default 40). Each cycle creates a context with a destructor callback
 * (clSetContextDestructorCallback, OpenCL 3.0) that counts destroyed contexts, a queue, a
 * built program, a kernel and a 64 KiB buffer; writes the buffer, launches once, reads the
 * result back (blocking) and checks it; then releases everything, in one of three orders
 * (the context first while its queue, buffer, kernel and program still live; the context
 * last; the queue, then the context, then the rest). A context is destroyed only when the
 * last object holding it is gone, so every destructor must have fired at the end: natively
 * each fires inside the release that drops the last reference. Under a capture the last
 * launch's records may still be written off the application's thread, so the fixture waits
 * up to 60 s for the count before it prints
 *   "contexts cycles=N destroyed=N sum=S"
 * With argv[2] = "rss" it also prints the resident memory (VmRSS) after WARM cycles and at
 * the end ("rss_start_kb=A rss_end_kb=B"), which a native run cannot reproduce byte for
 * byte: the transparency test runs without it. With argv[2] = "finish" the buffer is 1 MiB,
 * read back without blocking and released before a clFinish (the capture then lands the
 * launch on the application's thread after the buffer is gone, reading its contents into
 * memory of its own in the context: that memory must not keep the context alive either). */
#include "common.h"
#include <stdatomic.h>
#include <unistd.h>

enum { N = 16384, LARGE = 1 << 18, WARM = 20 };

static const char *SRC =
    "__kernel void twice(__global float *a, float k) {\n"
    "  size_t i = get_global_id(0); a[i] = 2.0f * a[i] + k; }\n";

static atomic_long destroyed;

static void CL_CALLBACK on_destroyed(cl_context ctx, void *user) {
    (void)ctx;
    (void)user;
    atomic_fetch_add(&destroyed, 1);
}

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1) break;
    if (f) fclose(f);
    return kb;
}

int main(int argc, char **argv) {
    long cycles = argc > 1 ? atol(argv[1]) : 40;
    int rss = argc > 2 && strcmp(argv[2], "rss") == 0;
    int fin = argc > 2 && strcmp(argv[2], "finish") == 0;
    int n = fin ? LARGE : N;
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    static float host[LARGE];
    double sum = 0;
    long rss_start = rss_kb();
    for (long c = 0; c < cycles; c++) {
        if (c == WARM) rss_start = rss_kb();
        cl_int err;
        cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
        CHECK_ERR(err);
        CHECK(clSetContextDestructorCallback(ctx, on_destroyed, NULL));
        cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
        CHECK_ERR(err);
        cl_program p = build_source(ctx, dev, SRC, "", "contexts.c");
        cl_kernel k = make_kernel(p, "twice");
        for (int i = 0; i < n; i++) host[i] = (float)(i % 97);
        cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                  n * sizeof host[0], host, &err);
        CHECK_ERR(err);
        float kf = (float)(c % 5);
        CHECK(clSetKernelArg(k, 0, sizeof b, &b));
        CHECK(clSetKernelArg(k, 1, sizeof kf, &kf));
        size_t g = n;
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
        if (fin) {
            CHECK(clEnqueueReadBuffer(q, b, CL_FALSE, 0, n * sizeof host[0], host, 0, NULL, NULL));
            if (b) CHECK(clReleaseMemObject(b));
            b = NULL;
            CHECK(clFinish(q));
        } else {
            CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, n * sizeof host[0], host, 0, NULL, NULL));
        }
        for (int i = 0; i < n; i++) {
            float want = 2.0f * (float)(i % 97) + kf;
            if (host[i] != want) {
                fprintf(stderr, "cycle %ld: a[%d] = %g, expected %g\n", c, i, host[i], want);
                return 1;
            }
        }
        sum += host[n - 1];
        switch (c % 3) {
        case 0: /* The context first: its objects keep it alive. */
            CHECK(clReleaseContext(ctx));
            CHECK(clReleaseKernel(k));
            CHECK(clReleaseProgram(p));
            if (b) CHECK(clReleaseMemObject(b));
            CHECK(clReleaseCommandQueue(q));
            break;
        case 1: /* The context last. */
            if (b) CHECK(clReleaseMemObject(b));
            CHECK(clReleaseKernel(k));
            CHECK(clReleaseProgram(p));
            CHECK(clReleaseCommandQueue(q));
            CHECK(clReleaseContext(ctx));
            break;
        default: /* The queue, the context, then the rest. */
            CHECK(clReleaseCommandQueue(q));
            CHECK(clReleaseContext(ctx));
            if (b) CHECK(clReleaseMemObject(b));
            CHECK(clReleaseKernel(k));
            CHECK(clReleaseProgram(p));
            break;
        }
    }
    for (int waited = 0; atomic_load(&destroyed) < cycles && waited < 6000; waited++)
        usleep(10000);
    printf("contexts cycles=%ld destroyed=%ld sum=%.1f\n", cycles, atomic_load(&destroyed), sum);
    if (rss) printf("rss_start_kb=%ld rss_end_kb=%ld\n", rss_start, rss_kb());
    return atomic_load(&destroyed) == cycles ? 0 : 1;
}
