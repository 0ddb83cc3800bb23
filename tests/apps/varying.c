/* Fixture: launches whose parameters vary in known ways, for parameter generalisation and
 * the GPUVerify export. `scale` runs over buffers of n floats for n = 100, 100, 200, 300, 1000
 * with global = round_up(n, 64), local 64 and k = 2.5 every time; `fill` runs twice with a
 * NULL local size, global 16 and v = 7. Built with "-DOFFSET=1 -cl-mad-enable". */
#include "common.h"

static const unsigned SIZES[] = {100, 100, 200, 300, 1000};

int main(void) {
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    cl_program p = build_program(ctx, dev, "varying.cl", "-DOFFSET=1 -cl-mad-enable");
    cl_kernel kscale = make_kernel(p, "scale");
    cl_kernel kfill = make_kernel(p, "fill");
    float k = 2.5f;
    for (size_t r = 0; r < sizeof SIZES / sizeof SIZES[0]; r++) {
        cl_uint n = SIZES[r];
        float *host = malloc(sizeof(float) * n);
        for (cl_uint i = 0; i < n; i++) host[i] = (float)i;
        cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(float) * n,
                                  host, &err);
        CHECK_ERR(err);
        CHECK(clSetKernelArg(kscale, 0, sizeof a, &a));
        CHECK(clSetKernelArg(kscale, 1, sizeof n, &n));
        CHECK(clSetKernelArg(kscale, 2, sizeof k, &k));
        size_t local = 64, global = (n + local - 1) / local * local;
        CHECK(clEnqueueNDRangeKernel(q, kscale, 1, NULL, &global, &local, 0, NULL, NULL));
        CHECK(clEnqueueReadBuffer(q, a, CL_TRUE, 0, sizeof(float) * n, host, 0, NULL, NULL));
        for (cl_uint i = 0; i < n; i++)
            EXPECT(host[i] == (float)i * 2.5f + 1.0f, "n=%u a[%u]=%g", n, i, (double)host[i]);
        clReleaseMemObject(a);
        free(host);
    }
    int out[16];
    cl_mem o = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof out, NULL, &err);
    CHECK_ERR(err);
    int v = 7;
    CHECK(clSetKernelArg(kfill, 0, sizeof o, &o));
    CHECK(clSetKernelArg(kfill, 1, sizeof v, &v));
    size_t g16 = 16;
    for (int r = 0; r < 2; r++)
        CHECK(clEnqueueNDRangeKernel(q, kfill, 1, NULL, &g16, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, o, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
    for (int i = 0; i < 16; i++) EXPECT(out[i] == 7, "out[%d]=%d", i, out[i]);
    clReleaseMemObject(o);
    clReleaseKernel(kscale);
    clReleaseKernel(kfill);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return finish("varying");
}
