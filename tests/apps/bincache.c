/* Fixture: an application with its own on-disk cache of compiled kernels, as many libraries
 * have. With no cache file (argv[1]) it builds from source and saves the program's binary
 * there; with one, it creates the program from that binary, and falls back to source when the
 * driver refuses the binary (CL_INVALID_BINARY) or it does not build. Says on stderr which
 * way it went; stdout holds only the (checked) results, the same either way. */
#include "common.h"

static const char *src =
    "__kernel void cached_scale(__global float *a, float f) {\n"
    "    size_t i = get_global_id(0);\n"
    "    a[i] = a[i] * f;\n"
    "}\n";

static cl_program from_source(cl_context ctx, cl_device_id dev, const char *cache) {
    cl_program p = build_source(ctx, dev, src, "", "cached_scale");
    size_t size = 0;
    CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL));
    unsigned char *bin = malloc(size);
    CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL));
    FILE *f = fopen(cache, "wb");
    if (!f || fwrite(bin, 1, size, f) != size) {
        fprintf(stderr, "cannot write the cache %s\n", cache);
        exit(2);
    }
    fclose(f);
    free(bin);
    return p;
}

static cl_program from_cache(cl_context ctx, cl_device_id dev, const char *cache) {
    FILE *f = fopen(cache, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *bin = malloc((size_t)n);
    if (fread(bin, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cannot read the cache %s\n", cache);
        exit(2);
    }
    fclose(f);
    size_t len = (size_t)n;
    cl_int status = CL_SUCCESS, err;
    const unsigned char *bins[1] = {bin};
    cl_program p = clCreateProgramWithBinary(ctx, 1, &dev, &len, bins, &status, &err);
    free(bin);
    if (err == CL_INVALID_BINARY || status == CL_INVALID_BINARY) {
        fprintf(stderr, "bincache: the cached binary was refused (%d, %d); building from source\n",
                err, status);
        return NULL;
    }
    CHECK_ERR(err);
    if (clBuildProgram(p, 1, &dev, "", NULL, NULL) != CL_SUCCESS) {
        fprintf(stderr, "bincache: the cached binary does not build; building from source\n");
        clReleaseProgram(p);
        return NULL;
    }
    fprintf(stderr, "bincache: kernels from the cache\n");
    return p;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: bincache CACHE-FILE\n");
        return 2;
    }
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    open_queue(&dev, &ctx, &q);
    cl_program p = from_cache(ctx, dev, argv[1]);
    if (!p) p = from_source(ctx, dev, argv[1]);
    cl_kernel k = make_kernel(p, "cached_scale");
    float host[256];
    for (int i = 0; i < 256; i++) host[i] = (float)i;
    cl_int err;
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host,
                                host, &err);
    CHECK_ERR(err);
    float factor = 1.5f;
    CHECK(clSetKernelArg(k, 0, sizeof buf, &buf));
    CHECK(clSetKernelArg(k, 1, sizeof factor, &factor));
    size_t global = 256;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL));
    CHECK(clFinish(q));
    for (int i = 0; i < 256; i++) EXPECT(host[i] == 1.5f * (float)i, "host[%d] = %f", i, host[i]);
    printf("scaled 256 values, last = %.1f\n", host[255]);
    clReleaseMemObject(buf);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return g_failures ? 1 : 0;
}
