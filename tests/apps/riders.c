/* Fixture: launches whose completion a capture must learn without a clFinish after them.
 * The shim gives most launches on an in-order queue no event of their own ("riders", see
 * shim/src/core/flight.rs): a later event of the same thread, a clFinish, a blocking read or a
 * marker of the capture's own answers for them. Three patterns, every result checked:
 *
 *  1. TAIL launches accumulating into one buffer, then the application waits only for its
 *     own event of the last launch (clWaitForEvents) and stays alive without any clFinish.
 *     Under cltrap (CLTRAP_DIR set) it then watches the capture's launch log for up to 60 s
 *     and says on stderr how many launches it holds: all of them must be recorded while the
 *     application still runs (stdout is the same as natively).
 *  2. Two threads launching into ONE queue at the same time, each with its own kernel object
 *     and output buffer (SHARED launches each, tagged), then one clFinish.
 *  3. EXIT_N launches and no synchronisation at all before the process exits: the capture's
 *     exit drain must still record them.
 */
#include "common.h"
#include <pthread.h>
#include <unistd.h>

enum { N = 64, TAIL = 100, SHARED = 150, EXIT_N = 40 };

static const char *SRC =
    "__kernel void bump(__global int *a, int v) { size_t i = get_global_id(0); a[i] += v; }\n"
    "__kernel void tag(__global int *out, int t, int it) {\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = t * 100000 + it * 100 + (int)i;\n"
    "}\n";

static cl_context g_ctx;
static cl_command_queue g_q;
static cl_program g_prog;

/* Lines of the capture's launch log (one per recorded launch), or -1 without a capture. */
static long log_lines(void) {
    const char *dir = getenv("CLTRAP_DIR");
    if (!dir || !*dir)
        return -1;
    char path[1024];
    snprintf(path, sizeof path, "%s/launches.jsonl", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    long n = 0;
    int c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

struct tagger {
    int t;
    int last;
};

static void *tagging(void *arg) {
    struct tagger *w = arg;
    cl_int err;
    cl_kernel k = make_kernel(g_prog, "tag");
    cl_mem out = clCreateBuffer(g_ctx, CL_MEM_WRITE_ONLY, sizeof(int) * N, NULL, &err);
    CHECK_ERR(err);
    CHECK(clSetKernelArg(k, 0, sizeof out, &out));
    CHECK(clSetKernelArg(k, 1, sizeof w->t, &w->t));
    size_t g = N;
    for (int it = 0; it < SHARED; it++) {
        CHECK(clSetKernelArg(k, 2, sizeof it, &it));
        CHECK(clEnqueueNDRangeKernel(g_q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    }
    int got[N];
    CHECK(clEnqueueReadBuffer(g_q, out, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
    w->last = got[N - 1];
    clReleaseMemObject(out);
    clReleaseKernel(k);
    return NULL;
}

int main(void) {
    cl_device_id dev;
    open_queue(&dev, &g_ctx, &g_q);
    cl_int err;
    g_prog = build_source(g_ctx, dev, SRC, "", "riders.c");
    cl_kernel bump = make_kernel(g_prog, "bump");
    int zero[N] = {0};
    cl_mem acc = clCreateBuffer(g_ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero, zero,
                                &err);
    CHECK_ERR(err);
    CHECK(clSetKernelArg(bump, 0, sizeof acc, &acc));
    size_t g = N;

    /* 1. A tail of launches that only the application's own event waits for. */
    cl_event last = NULL;
    for (int j = 0; j < TAIL; j++) {
        int v = j % 7;
        CHECK(clSetKernelArg(bump, 1, sizeof v, &v));
        CHECK(clEnqueueNDRangeKernel(g_q, bump, 1, NULL, &g, NULL, 0, NULL,
                                     j == TAIL - 1 ? &last : NULL));
    }
    CHECK(clWaitForEvents(1, &last));
    CHECK(clReleaseEvent(last));
    long seen = log_lines();
    for (int waited = 0; seen >= 0 && seen < TAIL && waited < 6000; waited++) {
        usleep(10000);
        seen = log_lines();
    }
    if (seen >= 0)
        fprintf(stderr, "riders: the launch log held %ld line(s) while the application ran\n",
                seen);
    int host[N];
    CHECK(clEnqueueReadBuffer(g_q, acc, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    int want = 0;
    for (int j = 0; j < TAIL; j++)
        want += j % 7;
    EXPECT(host[0] == want && host[N - 1] == want, "accumulated %d, want %d", host[0], want);
    printf("tail: %d launches, sum %d\n", TAIL, host[0]);

    /* 2. Two threads, one queue. */
    struct tagger w[2] = {{1, 0}, {2, 0}};
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        if (pthread_create(&th[t], NULL, tagging, &w[t]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 2;
        }
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    CHECK(clFinish(g_q));
    for (int t = 0; t < 2; t++) {
        int expect = w[t].t * 100000 + (SHARED - 1) * 100 + N - 1;
        EXPECT(w[t].last == expect, "thread %d last %d, want %d", t, w[t].last, expect);
        printf("shared queue: thread %d: %d launches\n", w[t].t, SHARED);
    }

    /* 3. Launches nobody waits for before exit. */
    for (int j = 0; j < EXIT_N; j++) {
        int v = 1;
        CHECK(clSetKernelArg(bump, 1, sizeof v, &v));
        CHECK(clEnqueueNDRangeKernel(g_q, bump, 1, NULL, &g, NULL, 0, NULL, NULL));
    }
    CHECK(clFlush(g_q));
    printf("exit: %d launches left running\n", EXIT_N);
    return finish("riders");
}
