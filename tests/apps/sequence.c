/* Fixture: a known, repeating launch sequence — fill, accumulate, scale — four times over
 * (12 launches, enqueue numbers 0..11), for testing the capture filters and buffer modes.
 *
 * With SEQUENCE_RENDEZVOUS=DIR:N in the environment it first waits (up to 30 s) until N
 * processes have checked in to DIR, so that N copies launch at the same moment (processes
 * capturing into one directory at once). */
#include "common.h"
#include <dirent.h>
#include <unistd.h>

static void rendezvous(void) {
    const char *spec = getenv("SEQUENCE_RENDEZVOUS");
    if (!spec) return;
    char dir[4096];
    const char *colon = strrchr(spec, ':');
    if (!colon || (size_t)(colon - spec) >= sizeof dir) return;
    memcpy(dir, spec, colon - spec);
    dir[colon - spec] = 0;
    int want = atoi(colon + 1);
    char mine[4200];
    snprintf(mine, sizeof mine, "%s/%d", dir, (int)getpid());
    FILE *f = fopen(mine, "w");
    if (f) fclose(f);
    for (int waited = 0; waited < 30000; waited++) {
        int n = 0;
        DIR *d = opendir(dir);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL)
                if (e->d_name[0] != '.') n++;
            closedir(d);
        }
        if (n >= want) return;
        usleep(1000);
    }
}

enum { N = 128, ROUNDS = 4 };

int main(void) {
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    cl_program p = build_program(ctx, dev, "sequence.cl", "");
    cl_kernel kfill = make_kernel(p, "fill");
    cl_kernel kacc = make_kernel(p, "accumulate");
    cl_kernel kscale = make_kernel(p, "scale");
    int zeros[N] = {0};
    /* `tmp` is cleared before every `fill` (the common "zeroed output buffer" pattern, which
     * also lets a `--buffers hash` capture replay `fill`: all-zero inputs are restorable from
     * their digest alone). */
    cl_mem tmp = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(int) * N, NULL, &err);
    CHECK_ERR(err);
    cl_mem acc = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zeros, zeros, &err);
    CHECK_ERR(err);
    CHECK(clSetKernelArg(kfill, 0, sizeof tmp, &tmp));
    CHECK(clSetKernelArg(kacc, 0, sizeof acc, &acc));
    CHECK(clSetKernelArg(kacc, 1, sizeof tmp, &tmp));
    CHECK(clSetKernelArg(kscale, 0, sizeof acc, &acc));
    size_t g = N;
    long want[N] = {0};
    rendezvous();
    for (int r = 0; r < ROUNDS; r++) {
        int v = r * 10 + 1, k = (r % 2) ? -1 : 2;
        CHECK(clSetKernelArg(kfill, 1, sizeof v, &v));
        CHECK(clSetKernelArg(kscale, 1, sizeof k, &k));
        const int zero = 0;
        CHECK(clEnqueueFillBuffer(q, tmp, &zero, sizeof zero, 0, sizeof(int) * N, 0, NULL, NULL));
        CHECK(clEnqueueNDRangeKernel(q, kfill, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK(clEnqueueNDRangeKernel(q, kacc, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK(clEnqueueNDRangeKernel(q, kscale, 1, NULL, &g, NULL, 0, NULL, NULL));
        for (int i = 0; i < N; i++) want[i] = (want[i] + v + i) * k;
    }
    int got[N];
    CHECK(clEnqueueReadBuffer(q, acc, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
    for (int i = 0; i < N; i++) EXPECT(got[i] == want[i], "acc[%d]=%d want %ld", i, got[i], want[i]);
    printf("sequence: %d launches, acc[0]=%d acc[127]=%d\n", ROUNDS * 3, got[0], got[N - 1]);
    clReleaseMemObject(tmp);
    clReleaseMemObject(acc);
    clReleaseKernel(kfill);
    clReleaseKernel(kacc);
    clReleaseKernel(kscale);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return finish("sequence");
}
