/*
 * Read storm: what one small non-blocking read after each launch costs a driver, the way the
 * shim's capture reads (one post-launch read per launch, into host memory, in the launch's
 * in-order queue, at most 1024 launches in flight). Separates the read itself, its event, and
 * pageable versus pinned host memory, so BENCHMARKS.md can say where capture time goes.
 *
 * Prints one line per variant: "read-storm VARIANT launches=N loop_s=S"
 *   kernel           the launches alone (native)
 *   read             + a non-blocking 256-byte read per launch into pageable memory, no event
 *   read+event       + the same read with an event (released once 1024 later launches were
 *                      enqueued, as the capture's writer does)
 *   pinned+event     + the read into pinned memory (a mapped CL_MEM_ALLOC_HOST_PTR buffer)
 *   pinned           the same without events (a clFinish every 1024 launches bounds them)
 *   pinned+event/32  an event on every 32nd read only (in an in-order queue its completion
 *                      answers for the 31 reads before it)
 *   pinned+event+thread  an event per read, asked about and released on a second thread as
 *                      the capture's writer does (status polled, then released), to see what
 *                      a second thread's driver calls cost the launching one
 *   staging-ring     + a device-side copy per launch (clEnqueueCopyBuffer of the 256 bytes into
 *                      slot j % 1024 of a device staging buffer) and one read of the whole
 *                      ring into pinned memory per 1024 launches: the "copy on the device,
 *                      read in batches" design, to see whether a copy enqueue is cheaper than
 *                      a read enqueue on this driver
 * Usage: read-storm [N]
 */
#include "common.h"
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

static const char *SOURCE =
    "__kernel void tiny(__global const float *x, __global float *y, float a) {\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = a * x[i] + 1.0f;\n"
    "}\n";

enum { SIZE = 64, INFLIGHT = 1024 };

/* The second thread of pinned+event+thread: takes events in order from a ring, polls each
 * until complete (sleeping 20 us between polls), releases it. */
static cl_event ring_evs[INFLIGHT];
static atomic_long ring_head, ring_tail; /* head: next to fill, tail: next to release */
static atomic_int ring_stop;
static void *releaser(void *arg) {
    (void)arg;
    for (;;) {
        long t = atomic_load(&ring_tail);
        if (t == atomic_load(&ring_head)) {
            if (atomic_load(&ring_stop))
                return NULL;
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
            continue;
        }
        cl_event ev = ring_evs[t % INFLIGHT];
        cl_int st = CL_QUEUED;
        for (;;) {
            CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
            if (st <= CL_COMPLETE)
                break;
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
        CHECK(clReleaseEvent(ev));
        atomic_store(&ring_tail, t + 1);
    }
}

/* event: 0 none, 1 every read, 32 every 32nd read, -1 every read released by a second thread */
static double run(struct bench *b, cl_kernel k, cl_mem dy, long n, int read, int event,
                  float *land) {
    static cl_event evs[INFLIGHT];
    memset(evs, 0, sizeof evs);
    pthread_t th;
    if (event < 0) {
        atomic_store(&ring_head, 0);
        atomic_store(&ring_tail, 0);
        atomic_store(&ring_stop, 0);
        pthread_create(&th, NULL, releaser, NULL);
    }
    size_t global = SIZE;
    double t0 = now_s();
    for (long j = 0; j < n; j++) {
        cl_float a = (cl_float)(j % 4);
        CHECK(clSetKernelArg(k, 2, sizeof a, &a));
        CHECK(clEnqueueNDRangeKernel(b->queue, k, 1, NULL, &global, NULL, 0, NULL, NULL));
        if (read && event < 0) {
            while (j - atomic_load(&ring_tail) >= INFLIGHT)
                ;
            cl_event ev;
            CHECK(clEnqueueReadBuffer(b->queue, dy, CL_FALSE, 0, SIZE * sizeof(float),
                                      land + (size_t)(j % INFLIGHT) * SIZE, 0, NULL, &ev));
            ring_evs[j % INFLIGHT] = ev;
            atomic_store(&ring_head, j + 1);
            if (j % 64 == 63)
                CHECK(clFlush(b->queue));
        } else if (read) {
            int slot = (int)(j % INFLIGHT);
            int want = event == 1 || (event > 1 && j % event == event - 1);
            if (evs[slot]) {
                CHECK(clWaitForEvents(1, &evs[slot]));
                CHECK(clReleaseEvent(evs[slot]));
                evs[slot] = NULL;
            } else if (!event && slot == 0 && j > 0) {
                CHECK(clFinish(b->queue));
            }
            CHECK(clEnqueueReadBuffer(b->queue, dy, CL_FALSE, 0, SIZE * sizeof(float),
                                      land + (size_t)slot * SIZE, 0, NULL,
                                      want ? &evs[slot] : NULL));
            if (j % 64 == 63)
                CHECK(clFlush(b->queue));
        }
    }
    CHECK(clFinish(b->queue));
    if (event < 0) {
        atomic_store(&ring_stop, 1);
        pthread_join(th, NULL);
    }
    double t1 = now_s();
    for (int s = 0; s < INFLIGHT; s++)
        if (evs[s])
            CHECK(clReleaseEvent(evs[s]));
    return t1 - t0;
}

/* The staging-ring variant: a device-to-device copy per launch, one batched read per ring. */
static double run_ring(struct bench *b, cl_kernel k, cl_mem dy, cl_mem ring, long n, float *land) {
    size_t global = SIZE;
    size_t slot_bytes = SIZE * sizeof(float);
    cl_event batch = NULL;
    double t0 = now_s();
    for (long j = 0; j < n; j++) {
        cl_float a = (cl_float)(j % 4);
        CHECK(clSetKernelArg(k, 2, sizeof a, &a));
        CHECK(clEnqueueNDRangeKernel(b->queue, k, 1, NULL, &global, NULL, 0, NULL, NULL));
        int slot = (int)(j % INFLIGHT);
        if (slot == 0 && batch) {
            CHECK(clWaitForEvents(1, &batch));
            CHECK(clReleaseEvent(batch));
            batch = NULL;
        }
        CHECK(clEnqueueCopyBuffer(b->queue, dy, ring, 0, (size_t)slot * slot_bytes, slot_bytes, 0,
                                  NULL, NULL));
        if (slot == INFLIGHT - 1)
            CHECK(clEnqueueReadBuffer(b->queue, ring, CL_FALSE, 0, INFLIGHT * slot_bytes, land, 0,
                                      NULL, &batch));
        if (j % 64 == 63)
            CHECK(clFlush(b->queue));
    }
    CHECK(clFinish(b->queue));
    double t1 = now_s();
    if (batch)
        CHECK(clReleaseEvent(batch));
    return t1 - t0;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
    if (n <= 0) {
        fprintf(stderr, "usage: read-storm [N>0]\n");
        return 2;
    }
    float x[SIZE];
    for (int i = 0; i < SIZE; i++)
        x[i] = (float)i;
    struct bench b;
    bench_init(&b, SOURCE);
    cl_mem dx = bench_buffer(&b, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof x, x);
    cl_mem dy = bench_buffer(&b, CL_MEM_WRITE_ONLY, sizeof x, NULL);
    cl_kernel k = bench_kernel(&b, "tiny");
    CHECK(clSetKernelArg(k, 0, sizeof dx, &dx));
    CHECK(clSetKernelArg(k, 1, sizeof dy, &dy));
    size_t land_bytes = (size_t)INFLIGHT * SIZE * sizeof(float);
    float *pageable = malloc(land_bytes);
    cl_int err;
    cl_mem pin = bench_buffer(&b, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, land_bytes, NULL);
    float *pinned = clEnqueueMapBuffer(b.queue, pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                       land_bytes, 0, NULL, NULL, &err);
    CHECK(err);
    cl_mem ring = bench_buffer(&b, CL_MEM_READ_WRITE, land_bytes, NULL);
    run(&b, k, dy, n / 10, 0, 0, pageable); /* warm-up */
    run_ring(&b, k, dy, ring, n / 10, pinned);
    for (int round = 0; round < 2; round++) {
        printf("read-storm kernel launches=%ld loop_s=%.6f\n", n, run(&b, k, dy, n, 0, 0, pageable));
        printf("read-storm read launches=%ld loop_s=%.6f\n", n, run(&b, k, dy, n, 1, 0, pageable));
        printf("read-storm read+event launches=%ld loop_s=%.6f\n", n,
               run(&b, k, dy, n, 1, 1, pageable));
        printf("read-storm pinned+event launches=%ld loop_s=%.6f\n", n,
               run(&b, k, dy, n, 1, 1, pinned));
        printf("read-storm pinned launches=%ld loop_s=%.6f\n", n, run(&b, k, dy, n, 1, 0, pinned));
        printf("read-storm pinned+event/32 launches=%ld loop_s=%.6f\n", n,
               run(&b, k, dy, n, 1, 32, pinned));
        printf("read-storm pinned+event+thread launches=%ld loop_s=%.6f\n", n,
               run(&b, k, dy, n, 1, -1, pinned));
        printf("read-storm staging-ring launches=%ld loop_s=%.6f\n", n,
               run_ring(&b, k, dy, ring, n, pinned));
    }
    fflush(stdout);
    return 0;
}
