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

static cl_uint queue_refs(cl_command_queue q) {
    cl_uint refs = 0;
    CHECK(clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof refs, &refs, NULL));
    return refs;
}

/* Every reference count the application can read of the objects of a launch: the queue's on
 * a line of its own, the others on the next. */
static void print_refs(const char *when, cl_command_queue q, cl_context ctx, cl_program p,
                       cl_kernel k, cl_mem a, cl_mem b) {
    cl_uint cr = 0, pr = 0, kr = 0, ar = 0, br = 0;
    printf("%s: queue references %u\n", when, queue_refs(q));
    CHECK(clGetContextInfo(ctx, CL_CONTEXT_REFERENCE_COUNT, sizeof cr, &cr, NULL));
    CHECK(clGetProgramInfo(p, CL_PROGRAM_REFERENCE_COUNT, sizeof pr, &pr, NULL));
    CHECK(clGetKernelInfo(k, CL_KERNEL_REFERENCE_COUNT, sizeof kr, &kr, NULL));
    CHECK(clGetMemObjectInfo(a, CL_MEM_REFERENCE_COUNT, sizeof ar, &ar, NULL));
    CHECK(clGetMemObjectInfo(b, CL_MEM_REFERENCE_COUNT, sizeof br, &br, NULL));
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
    CHECK(clGetContextInfo(ctx, CL_CONTEXT_REFERENCE_COUNT, sizeof refs, &refs, NULL));
    printf("context references = %u\n", refs);
    CHECK(clGetProgramInfo(p, CL_PROGRAM_REFERENCE_COUNT, sizeof refs, &refs, NULL));
    printf("program references = %u\n", refs);
    CHECK(clGetKernelInfo(k, CL_KERNEL_REFERENCE_COUNT, sizeof refs, &refs, NULL));
    printf("kernel references = %u\n", refs);
    CHECK(clGetMemObjectInfo(buf, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, NULL));
    printf("buffer references = %u\n", refs);
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    EXPECT(host[5] == 40, "host[5] = %d", host[5]);
    char opts[256] = {0};
    CHECK(clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_OPTIONS, sizeof opts, opts, NULL));
    printf("built program's options = [%s]\n", opts);

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
    CHECK(clGetContextInfo(ctx, CL_CONTEXT_REFERENCE_COUNT, sizeof refs, &refs, NULL));
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
