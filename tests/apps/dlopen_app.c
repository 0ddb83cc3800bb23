/* Fixture: an application that never links libOpenCL: it dlopen()s the loader and looks
 * every entry point up by handle (as hashcat and OpenCV do). LD_PRELOAD interposition cannot
 * see these calls; only the ICD loader's layer mechanism can. */
#include "common.h"
#include <dlfcn.h>

enum { N = 128, LAUNCHES = 3 };

#define FN(name) static __typeof__(&name) p_##name
FN(clGetPlatformIDs);
FN(clGetDeviceIDs);
FN(clCreateContext);
FN(clCreateCommandQueue);
FN(clCreateProgramWithSource);
FN(clBuildProgram);
FN(clCreateKernel);
FN(clCreateBuffer);
FN(clSetKernelArg);
FN(clEnqueueNDRangeKernel);
FN(clEnqueueReadBuffer);
FN(clReleaseMemObject);
FN(clReleaseKernel);
FN(clReleaseProgram);
FN(clReleaseCommandQueue);
FN(clReleaseContext);

#define LOOKUP(h, name)                                                    \
    do {                                                                   \
        p_##name = (__typeof__(p_##name))dlsym(h, #name);                  \
        if (!p_##name) {                                                   \
            fprintf(stderr, "dlsym(%s) failed: %s\n", #name, dlerror());   \
            return 2;                                                      \
        }                                                                  \
    } while (0)

int main(void) {
    void *h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen(libOpenCL.so.1) failed: %s\n", dlerror());
        return 2;
    }
    LOOKUP(h, clGetPlatformIDs);
    LOOKUP(h, clGetDeviceIDs);
    LOOKUP(h, clCreateContext);
    LOOKUP(h, clCreateCommandQueue);
    LOOKUP(h, clCreateProgramWithSource);
    LOOKUP(h, clBuildProgram);
    LOOKUP(h, clCreateKernel);
    LOOKUP(h, clCreateBuffer);
    LOOKUP(h, clSetKernelArg);
    LOOKUP(h, clEnqueueNDRangeKernel);
    LOOKUP(h, clEnqueueReadBuffer);
    LOOKUP(h, clReleaseMemObject);
    LOOKUP(h, clReleaseKernel);
    LOOKUP(h, clReleaseProgram);
    LOOKUP(h, clReleaseCommandQueue);
    LOOKUP(h, clReleaseContext);

    cl_platform_id plat;
    cl_device_id dev;
    CHECK(p_clGetPlatformIDs(1, &plat, NULL));
    CHECK(p_clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_int err;
    cl_context ctx = p_clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = p_clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    char *src = read_kernel("vadd.cl");
    cl_program p = p_clCreateProgramWithSource(ctx, 1, (const char **)&src, NULL, &err);
    CHECK_ERR(err);
    CHECK(p_clBuildProgram(p, 1, &dev, "", NULL, NULL));
    cl_kernel k = p_clCreateKernel(p, "vadd", &err);
    CHECK_ERR(err);
    float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = (float)(2 * i) + 0.5f;
    }
    cl_mem ba = p_clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof a, a, &err);
    CHECK_ERR(err);
    cl_mem bb = p_clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof b, b, &err);
    CHECK_ERR(err);
    /* c = a + b, then a = c + b, then c = a + b: each launch's input is the previous output. */
    cl_mem bc = p_clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof c, NULL, &err);
    CHECK_ERR(err);
    size_t g = N;
    for (int l = 0; l < LAUNCHES; l++) {
        cl_mem in = (l % 2 == 0) ? ba : bc, out = (l % 2 == 0) ? bc : ba;
        CHECK(p_clSetKernelArg(k, 0, sizeof in, &in));
        CHECK(p_clSetKernelArg(k, 1, sizeof bb, &bb));
        CHECK(p_clSetKernelArg(k, 2, sizeof out, &out));
        CHECK(p_clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    }
    CHECK(p_clEnqueueReadBuffer(q, bc, CL_TRUE, 0, sizeof c, c, 0, NULL, NULL));
    for (int i = 0; i < N; i++)
        EXPECT(c[i] == a[i] + 3.0f * b[i], "c[%d]=%g want %g", i, c[i], a[i] + 3.0f * b[i]);
    printf("dlopen: %d launches through dlsym'd entry points, c[1]=%g\n", LAUNCHES, c[1]);
    free(src);
    p_clReleaseMemObject(ba);
    p_clReleaseMemObject(bb);
    p_clReleaseMemObject(bc);
    p_clReleaseKernel(k);
    p_clReleaseProgram(p);
    p_clReleaseCommandQueue(q);
    p_clReleaseContext(ctx);
    dlclose(h);
    return finish("dlopen");
}
