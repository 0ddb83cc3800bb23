/* Fixture: errors provoked on purpose must reach the application unchanged. Prints each
 * error code (and the build log's first error line), so a run under the shim can be
 * compared with a native run byte for byte. Exits 0 only when each call failed as the
 * specification says it must. */
#include "common.h"

/* The first line of the build log that names an error, without the temporary file name
 * the driver invents (it differs from run to run). */
static void print_first_error_line(const char *log) {
    const char *e = strstr(log, "error:");
    if (!e) {
        printf("build log: (no error line)\n");
        return;
    }
    const char *end = strchr(e, '\n');
    int n = end ? (int)(end - e) : (int)strlen(e);
    const char *ext = strstr(e, ".cl:");
    if (ext && ext < e + n) {
        n -= (int)(ext + 3 - e);
        e = ext + 3;
    }
    printf("build log: error at%.*s\n", n, e);
}

int main(void) {
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_int err;

    /* No accelerator on this platform: CL_DEVICE_NOT_FOUND. */
    cl_device_id acc;
    cl_uint n = 99;
    err = clGetDeviceIDs(plat, CL_DEVICE_TYPE_ACCELERATOR, 1, &acc, &n);
    printf("clGetDeviceIDs(ACCELERATOR) = %d\n", err);
    EXPECT(err == CL_DEVICE_NOT_FOUND, "got %d", err);

    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);

    /* A kernel with a syntax error: CL_BUILD_PROGRAM_FAILURE and a build log that says why. */
    char *bad = read_kernel("broken.cl");
    cl_program pb = clCreateProgramWithSource(ctx, 1, (const char **)&bad, NULL, &err);
    CHECK_ERR(err);
    err = clBuildProgram(pb, 1, &dev, "", NULL, NULL);
    printf("clBuildProgram(broken.cl) = %d\n", err);
    EXPECT(err == CL_BUILD_PROGRAM_FAILURE, "got %d", err);
    cl_build_status bs = CL_BUILD_SUCCESS;
    CHECK(clGetProgramBuildInfo(pb, dev, CL_PROGRAM_BUILD_STATUS, sizeof bs, &bs, NULL));
    printf("build status = %d\n", bs);
    EXPECT(bs == CL_BUILD_ERROR, "status %d", bs);
    size_t logn = 0;
    CHECK(clGetProgramBuildInfo(pb, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &logn));
    char *log = calloc(logn + 1, 1);
    CHECK(clGetProgramBuildInfo(pb, dev, CL_PROGRAM_BUILD_LOG, logn, log, NULL));
    EXPECT(strstr(log, "undeclared_variable") != NULL, "build log lacks the culprit: %s", log);
    print_first_error_line(log);
    free(log);
    free(bad);

    /* A kernel name that does not exist: CL_INVALID_KERNEL_NAME. */
    cl_program p = build_program(ctx, dev, "vadd.cl", "");
    cl_kernel nok = clCreateKernel(p, "no_such_kernel", &err);
    printf("clCreateKernel(no_such_kernel) = %d\n", err);
    EXPECT(err == CL_INVALID_KERNEL_NAME && nok == NULL, "got %d", err);

    /* Argument info of a program built without -cl-kernel-arg-info: whatever the driver
     * answers natively (PoCL: CL_KERNEL_ARG_INFO_NOT_AVAILABLE) must not change because a
     * capture tool wanted the information for itself. */
    cl_kernel kinfo = make_kernel(p, "vadd");
    char tname[64] = {0};
    err = clGetKernelArgInfo(kinfo, 0, CL_KERNEL_ARG_TYPE_NAME, sizeof tname, tname, NULL);
    printf("clGetKernelArgInfo(built without -cl-kernel-arg-info) = %d\n", err);
    clReleaseKernel(kinfo);

    /* Argument index out of range: CL_INVALID_ARG_INDEX. */
    cl_kernel k = make_kernel(p, "vadd");
    float zeros[64] = {0};
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zeros, zeros, &err);
    CHECK_ERR(err);
    err = clSetKernelArg(k, 7, sizeof b, &b);
    printf("clSetKernelArg(index 7 of 3) = %d\n", err);
    EXPECT(err == CL_INVALID_ARG_INDEX, "got %d", err);

    /* Wrong size for a buffer argument: CL_INVALID_ARG_SIZE. */
    int small = 0;
    err = clSetKernelArg(k, 0, 1, &small);
    printf("clSetKernelArg(buffer, size 1) = %d\n", err);
    EXPECT(err == CL_INVALID_ARG_SIZE || err == CL_INVALID_MEM_OBJECT, "got %d", err);

    /* Launch with arguments never set: CL_INVALID_KERNEL_ARGS, and nothing runs. */
    CHECK(clSetKernelArg(k, 0, sizeof b, &b));
    size_t g = 64;
    err = clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
    printf("clEnqueueNDRangeKernel(args unset) = %d\n", err);
    EXPECT(err == CL_INVALID_KERNEL_ARGS, "got %d", err);

    /* An invalid work dimension: CL_INVALID_WORK_DIMENSION. */
    CHECK(clSetKernelArg(k, 1, sizeof b, &b));
    CHECK(clSetKernelArg(k, 2, sizeof b, &b));
    err = clEnqueueNDRangeKernel(q, k, 0, NULL, &g, NULL, 0, NULL, NULL);
    printf("clEnqueueNDRangeKernel(work_dim 0) = %d\n", err);
    EXPECT(err == CL_INVALID_WORK_DIMENSION, "got %d", err);

    /* A valid launch afterwards still works. */
    err = clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
    printf("clEnqueueNDRangeKernel(valid) = %d\n", err);
    EXPECT(err == CL_SUCCESS, "got %d", err);
    CHECK(clFinish(q));

    clReleaseMemObject(b);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseProgram(pb);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return finish("errors");
}
