/* Fixture: index-space shapes — 1-D with an offset and NULL local size (and a global size
 * that is no multiple of anything), 2-D with an offset and a local size, 3-D with an offset
 * and NULL local size, clEnqueueTask, a non-uniform work-group size (OpenCL 2.0 programs:
 * global 37, local 8), and a kernel that printf()s to the application's stdout. */
#include "common.h"

int main(void) {
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    cl_program p = build_program(ctx, dev, "ndrange.cl", "");

    /* 1-D: 37 work-items starting at 5, local size left to the runtime. */
    {
        size_t off = 5, gsz = 37;
        cl_mem b = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(int) * gsz, NULL, &err);
        CHECK_ERR(err);
        cl_kernel k = make_kernel(p, "ids_1d");
        CHECK(clSetKernelArg(k, 0, sizeof b, &b));
        CHECK(clEnqueueNDRangeKernel(q, k, 1, &off, &gsz, NULL, 0, NULL, NULL));
        int got[37];
        CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
        for (size_t i = 0; i < gsz; i++)
            EXPECT(got[i] == (int)((i + off) * 10), "1d[%zu]=%d", i, got[i]);
        printf("1d: global 37 offset 5 local NULL: first %d last %d\n", got[0], got[36]);
        clReleaseKernel(k);
        clReleaseMemObject(b);
    }

    /* 2-D: 16x8 starting at (3,2), local 4x4. */
    {
        size_t off[2] = {3, 2}, gsz[2] = {16, 8}, lsz[2] = {4, 4};
        size_t n = gsz[0] * gsz[1];
        cl_mem b = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(int) * n, NULL, &err);
        CHECK_ERR(err);
        cl_mem bg = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(int) * n, NULL, &err);
        CHECK_ERR(err);
        cl_kernel k = make_kernel(p, "ids_2d");
        CHECK(clSetKernelArg(k, 0, sizeof b, &b));
        CHECK(clSetKernelArg(k, 1, sizeof bg, &bg));
        CHECK(clEnqueueNDRangeKernel(q, k, 2, off, gsz, lsz, 0, NULL, NULL));
        int got[128], grp[128];
        CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
        CHECK(clEnqueueReadBuffer(q, bg, CL_TRUE, 0, sizeof grp, grp, 0, NULL, NULL));
        for (size_t y = 0; y < gsz[1]; y++)
            for (size_t x = 0; x < gsz[0]; x++) {
                size_t s = y * gsz[0] + x;
                EXPECT(got[s] == (int)((x + off[0]) + 1000 * (y + off[1])), "2d[%zu]=%d", s, got[s]);
                int want_g = (int)(x / 4 + 100 * (y / 4) + 10000 * (x % 4) + 1000000 * (y % 4));
                EXPECT(grp[s] == want_g, "2d groups[%zu]=%d want %d", s, grp[s], want_g);
            }
        printf("2d: global 16x8 offset (3,2) local 4x4: last %d\n", got[127]);
        clReleaseKernel(k);
        clReleaseMemObject(b);
        clReleaseMemObject(bg);
    }

    /* 3-D: 4x3x5 starting at (1,2,3), local size NULL. */
    {
        size_t off[3] = {1, 2, 3}, gsz[3] = {4, 3, 5};
        size_t n = gsz[0] * gsz[1] * gsz[2];
        cl_mem b = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(int) * n, NULL, &err);
        CHECK_ERR(err);
        cl_kernel k = make_kernel(p, "ids_3d");
        CHECK(clSetKernelArg(k, 0, sizeof b, &b));
        CHECK(clEnqueueNDRangeKernel(q, k, 3, off, gsz, NULL, 0, NULL, NULL));
        int got[60];
        CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
        for (size_t z = 0; z < gsz[2]; z++)
            for (size_t y = 0; y < gsz[1]; y++)
                for (size_t x = 0; x < gsz[0]; x++) {
                    size_t s = (z * gsz[1] + y) * gsz[0] + x;
                    int want = (int)((x + 1) + 100 * (y + 2) + 10000 * (z + 3));
                    EXPECT(got[s] == want, "3d[%zu]=%d want %d", s, got[s], want);
                }
        printf("3d: global 4x3x5 offset (1,2,3) local NULL: last %d\n", got[59]);
        clReleaseKernel(k);
        clReleaseMemObject(b);
    }

    /* clEnqueueTask: one work-item. */
    {
        int in[10];
        for (int i = 0; i < 10; i++) in[i] = i - 3;
        cl_mem bin = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof in, in, &err);
        CHECK_ERR(err);
        cl_mem bout = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(int), NULL, &err);
        CHECK_ERR(err);
        cl_kernel k = make_kernel(p, "task_sum");
        int n = 10;
        CHECK(clSetKernelArg(k, 0, sizeof bin, &bin));
        CHECK(clSetKernelArg(k, 1, sizeof bout, &bout));
        CHECK(clSetKernelArg(k, 2, sizeof n, &n));
        CHECK(clEnqueueTask(q, k, 0, NULL, NULL));
        int got = 0, want = 0;
        for (int i = 0; i < 10; i++) want += in[i] * (i + 1);
        CHECK(clEnqueueReadBuffer(q, bout, CL_TRUE, 0, sizeof got, &got, 0, NULL, NULL));
        EXPECT(got == want, "task %d want %d", got, want);
        printf("task: sum %d\n", got);
        clReleaseKernel(k);
        clReleaseMemObject(bin);
        clReleaseMemObject(bout);
    }

    /* Non-uniform work-groups: 37 work-items in groups of 8 (the last group has 5). */
    {
        cl_program p2 = NULL;
        char *src = read_kernel("ndrange.cl");
        p2 = clCreateProgramWithSource(ctx, 1, (const char **)&src, NULL, &err);
        CHECK_ERR(err);
        free(src);
        cl_int berr = clBuildProgram(p2, 1, &dev, "-cl-std=CL2.0", NULL, NULL);
        if (berr != CL_SUCCESS) {
            printf("non-uniform: OpenCL C 2.0 not supported (%d)\n", berr);
        } else {
            size_t off = 2, gsz = 37, lsz = 8;
            cl_mem b = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(int) * gsz, NULL, &err);
            CHECK_ERR(err);
            cl_kernel k = make_kernel(p2, "ids_1d");
            CHECK(clSetKernelArg(k, 0, sizeof b, &b));
            err = clEnqueueNDRangeKernel(q, k, 1, &off, &gsz, &lsz, 0, NULL, NULL);
            if (err == CL_INVALID_WORK_GROUP_SIZE) {
                printf("non-uniform: work-groups not supported by this device\n");
            } else {
                CHECK_ERR(err);
                int got[37];
                CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
                for (size_t i = 0; i < gsz; i++)
                    EXPECT(got[i] == (int)((i + off) * 10), "non-uniform[%zu]=%d", i, got[i]);
                printf("non-uniform: global 37 local 8 offset 2: last %d\n", got[36]);
            }
            clReleaseKernel(k);
            clReleaseMemObject(b);
        }
        clReleaseProgram(p2);
    }

    /* printf inside a kernel. */
    {
        cl_kernel k = make_kernel(p, "say");
        int x = 42;
        float y = 2.5f;
        CHECK(clSetKernelArg(k, 0, sizeof x, &x));
        CHECK(clSetKernelArg(k, 1, sizeof y, &y));
        fflush(stdout);
        CHECK(clEnqueueTask(q, k, 0, NULL, NULL));
        CHECK(clFinish(q));
        clReleaseKernel(k);
    }

    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return finish("ndrange");
}
