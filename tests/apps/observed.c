/* Fixture: what an application can observe of its own OpenCL objects, printed so a run under
 * the shim can be compared with a native run byte for byte: the build options a program
 * reports after a failed build, the reference counts of its queue, context, program, kernel
 * and buffers after launches and clFinish (where the capture may still be writing the
 * launches, holding their events and the queue) and around references of its own, and the
 * answer to an enqueue whose buffer argument was already released. The queue's count is
 * printed on lines of its own (`... queue references N`). */
#include "common.h"

static const char *good_src =
    "__kernel void twice(__global int *a) { size_t i = get_global_id(0); a[i] = 2 * a[i]; }\n";
static const char *bad_src = "__kernel void broken(__global int *a) { a[0] = undeclared; }\n";

/* CL_PROGRAM_BUILD_OPTIONS of a program whose build with `options` failed. */
static void options_after_failed_build(cl_context ctx, cl_device_id dev, const char *options) {
    cl_int err;
    cl_program p = clCreateProgramWithSource(ctx, 1, &bad_src, NULL, &err);
    CHECK_ERR(err);
    err = clBuildProgram(p, 1, &dev, options, NULL, NULL);
    printf("failed build with [%s] = %d\n", options ? options : "(null)", err);
    EXPECT(err == CL_BUILD_PROGRAM_FAILURE, "got %d", err);
    char text[1024] = {0};
    size_t n = 0;
    CHECK(clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_OPTIONS, sizeof text, text, &n));
    printf("  its build options = [%s] (%zu bytes)\n", text, n);
    CHECK(clReleaseProgram(p));
}

/* The objects whose reference counts are read. */
enum counted { QUEUE, CONTEXT, PROGRAM, KERNEL, MEM };

static cl_uint count_now(enum counted kind, void *o) {
    cl_uint refs = 0;
    switch (kind) {
    case QUEUE:
        CHECK(clGetCommandQueueInfo(o, CL_QUEUE_REFERENCE_COUNT, sizeof refs, &refs, NULL));
        break;
    case CONTEXT:
        CHECK(clGetContextInfo(o, CL_CONTEXT_REFERENCE_COUNT, sizeof refs, &refs, NULL));
        break;
    case PROGRAM:
        CHECK(clGetProgramInfo(o, CL_PROGRAM_REFERENCE_COUNT, sizeof refs, &refs, NULL));
        break;
    case KERNEL:
        CHECK(clGetKernelInfo(o, CL_KERNEL_REFERENCE_COUNT, sizeof refs, &refs, NULL));
        break;
    case MEM:
        CHECK(clGetMemObjectInfo(o, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, NULL));
        break;
    }
    return refs;
}

/* A reference count once the driver's own bookkeeping settled: PoCL releases what a finished
 * command held on its worker thread, just after clFinish returned, so a count read at once is
 * now and then one higher natively. Read until four reads 5 ms apart agree. */
static cl_uint count(enum counted kind, void *o) {
    cl_uint last = count_now(kind, o);
    int same = 0;
    for (int i = 0; i < 2000 && same < 3; i++) {
        struct timespec pause = {0, 5 * 1000 * 1000};
        nanosleep(&pause, NULL);
        cl_uint now = count_now(kind, o);
        same = now == last ? same + 1 : 0;
        last = now;
    }
    return last;
}

static cl_uint queue_refs(cl_command_queue q) { return count(QUEUE, q); }

/* Every reference count the application can read of the objects of a launch: the queue's on
 * a line of its own, the others on the next. */
static void print_refs(const char *when, cl_command_queue q, cl_context ctx, cl_program p,
                       cl_kernel k, cl_mem a, cl_mem b) {
    printf("%s: queue references %u\n", when, queue_refs(q));
    cl_uint cr = count(CONTEXT, ctx), pr = count(PROGRAM, p), kr = count(KERNEL, k);
    cl_uint ar = count(MEM, a), br = count(MEM, b);
    printf("%s: context %u program %u kernel %u buffers %u %u\n", when, cr, pr, kr, ar, br);
}

int main(int argc, char **argv) {
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    open_queue(&dev, &ctx, &q);
    cl_int err;

    options_after_failed_build(ctx, dev, "-DAPP_OPTION=1");
    options_after_failed_build(ctx, dev, "");
    options_after_failed_build(ctx, dev, NULL);

    printf("queue references before any launch = %u\n", queue_refs(q));
    cl_program p = build_source(ctx, dev, good_src, "-DAPP_OPTION=2", "twice");
    cl_kernel k = make_kernel(p, "twice");
    int host[64];
    for (int i = 0; i < 64; i++) host[i] = i;
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host,
                                host, &err);
    CHECK_ERR(err);
    CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
    size_t global = 64;
    for (int round = 0; round < 3; round++) {
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
        printf("queue references after launch %d and clFinish = %u\n", round, queue_refs(q));
    }
    cl_uint refs = 0;
    refs = count(CONTEXT, ctx);
    printf("context references = %u\n", refs);
    refs = count(PROGRAM, p);
    printf("program references = %u\n", refs);
    refs = count(KERNEL, k);
    printf("kernel references = %u\n", refs);
    refs = count(MEM, buf);
    printf("buffer references = %u\n", refs);
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    EXPECT(host[5] == 40, "host[5] = %d", host[5]);
    char opts[256] = {0};
    CHECK(clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_OPTIONS, sizeof opts, opts, NULL));
    printf("built program's options = [%s]\n", opts);

    /* A small launch over a large buffer: the capture takes a while to write each launch (it
     * reads back and stores the whole buffer), so a count read right after clFinish meets it
     * still writing (under --at-finish hand). */
    {
        size_t n = (size_t)8 << 20;
        int *big = malloc(n * sizeof *big);
        EXPECT(big != NULL, "no memory");
        if (!big) exit(2);
        for (size_t i = 0; i < n; i++) big[i] = (int)(i * 2654435761u);
        cl_mem large = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                      n * sizeof *big, big, &err);
        CHECK_ERR(err);
        CHECK(clSetKernelArg(k, 0, sizeof large, &large));
        for (int round = 0; round < 3; round++) {
            CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
            CHECK(clFinish(q));
            refs = count(MEM, large);
            printf("large launch %d and clFinish: queue references %u\n", round, queue_refs(q));
            printf("large launch %d and clFinish: buffer references %u\n", round, refs);
        }
        CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
        CHECK(clReleaseMemObject(large));
        free(big);
    }

    /* A two-buffer kernel: counts after each launch and clFinish, after references of the
     * application's own taken and given back, and after its objects went. */
    static const char *sum_src =
        "__kernel void add(__global int *a, __global const int *b) {\n"
        "    size_t i = get_global_id(0); a[i] += b[i]; }\n";
    cl_program p2 = build_source(ctx, dev, sum_src, "", "add");
    cl_kernel k2 = make_kernel(p2, "add");
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host,
                              &err);
    CHECK_ERR(err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof host, host,
                              &err);
    CHECK_ERR(err);
    print_refs("add created", q, ctx, p2, k2, a, b);
    CHECK(clSetKernelArg(k2, 0, sizeof a, &a));
    CHECK(clSetKernelArg(k2, 1, sizeof b, &b));
    for (int round = 0; round < 3; round++) {
        CHECK(clEnqueueNDRangeKernel(q, k2, 1, NULL, &global, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
        char when[64];
        snprintf(when, sizeof when, "add launch %d and clFinish", round);
        print_refs(when, q, ctx, p2, k2, a, b);
    }
    CHECK(clRetainCommandQueue(q));
    CHECK(clRetainContext(ctx));
    CHECK(clRetainProgram(p2));
    CHECK(clRetainKernel(k2));
    CHECK(clRetainMemObject(a));
    print_refs("add objects retained", q, ctx, p2, k2, a, b);
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    CHECK(clReleaseProgram(p2));
    CHECK(clReleaseKernel(k2));
    CHECK(clReleaseMemObject(a));
    CHECK(clEnqueueReadBuffer(q, a, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    EXPECT(host[5] == 40 * 4, "a[5] = %d", host[5]);
    CHECK(clReleaseMemObject(a));
    CHECK(clReleaseMemObject(b));
    CHECK(clReleaseKernel(k2));
    CHECK(clReleaseProgram(p2));
    printf("add objects released: queue references %u\n", queue_refs(q));
    refs = count(CONTEXT, ctx);
    printf("add objects released: context %u\n", refs);

    /* With argument `released`: the buffer is released while the kernel still names it. What
     * the enqueue does is the driver's to say (PoCL accepts it, and may fail later); the shim
     * must not touch the released object on the way. */
    CHECK(clReleaseMemObject(buf));
    if (argc < 2 || strcmp(argv[1], "released") != 0) goto end;
    fflush(stdout);
    err = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
    printf("enqueue with a released buffer = %d\n", err);
    fflush(stdout);
    clFinish(q);

end:
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseProgram(p));
    printf("queue references at the end = %u\n", queue_refs(q));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    return g_failures ? 1 : 0;
}
