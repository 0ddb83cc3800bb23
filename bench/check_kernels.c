/*
 * The launches `bench/check.sh` checks with both engines: a 1-D stencil (radius 2), a
 * reduction through __local memory (tree, barriers) and a histogram with global atomics,
 * each at 1K, 64K and 1M work-items (groups of 256), so the engines run the same launches.
 * Prints, per launch, the kernel's device time (profiling event): the uninstrumented run.
 * Usage: check-kernels [SIZES...]  (default: 1024 65536 1048576)
 */
#include "common.h"

static const char *SOURCE =
    "__kernel void stencil(__global float *out, __global const float *in, uint n) {\n"
    "    uint i = get_global_id(0);\n"
    "    if (i < 2 || i + 2 >= n) { out[i] = in[i]; return; }\n"
    "    out[i] = 0.1f * in[i - 2] + 0.2f * in[i - 1] + 0.4f * in[i] + 0.2f * in[i + 1] + 0.1f * in[i + 2];\n"
    "}\n"
    "__kernel void reduce(__global float *partial, __global const float *in, uint n) {\n"
    "    __local float tile[256];\n"
    "    uint l = get_local_id(0), i = get_global_id(0);\n"
    "    tile[l] = i < n ? in[i] : 0.0f;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {\n"
    "        if (l < s) tile[l] += tile[l + s];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (l == 0) partial[get_group_id(0)] = tile[0];\n"
    "}\n"
    "__kernel void histogram(__global uint *bins, __global const uint *in, uint n) {\n"
    "    uint i = get_global_id(0);\n"
    "    if (i < n) atomic_inc(&bins[in[i] & 255u]);\n"
    "}\n";

static double run(struct bench *b, const char *name, cl_uint n) {
    size_t bytes = (size_t)n * 4;
    float *data = malloc(bytes);
    for (cl_uint i = 0; i < n; i++) ((cl_uint *)data)[i] = (i * 2654435761u) >> 7;
    if (strcmp(name, "histogram"))
        for (cl_uint i = 0; i < n; i++) data[i] = (float)(i % 97) * 0.5f;
    cl_mem in = bench_buffer(b, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, data);
    size_t out_bytes = !strcmp(name, "histogram") ? 256 * 4 : !strcmp(name, "reduce") ? (n / 256) * 4 : bytes;
    memset(data, 0, out_bytes < bytes ? out_bytes : bytes);
    cl_mem out = bench_buffer(b, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, out_bytes, data);
    cl_kernel k = bench_kernel(b, name);
    CHECK(clSetKernelArg(k, 0, sizeof out, &out));
    CHECK(clSetKernelArg(k, 1, sizeof in, &in));
    CHECK(clSetKernelArg(k, 2, sizeof n, &n));
    size_t global = n, local = 256;
    cl_event ev;
    CHECK(clEnqueueNDRangeKernel(b->queue, k, 1, NULL, &global, &local, 0, NULL, &ev));
    CHECK(clFinish(b->queue));
    cl_ulong t0 = 0, t1 = 0;
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
    clReleaseEvent(ev);
    clReleaseKernel(k);
    clReleaseMemObject(in);
    clReleaseMemObject(out);
    free(data);
    return (double)(t1 - t0) * 1e-6;
}

int main(int argc, char **argv) {
    struct bench b;
    bench_init(&b, SOURCE);
    /* A profiling queue, so the app's own launches report device times. */
    cl_int err;
    clReleaseCommandQueue(b.queue);
    b.queue = clCreateCommandQueue(b.context, b.device, CL_QUEUE_PROFILING_ENABLE, &err);
    CHECK(err);
    const char *names[] = {"stencil", "reduce", "histogram"};
    cl_uint sizes[8] = {1024, 65536, 1048576};
    int nsizes = 3;
    if (argc > 1) {
        nsizes = 0;
        for (int i = 1; i < argc && nsizes < 8; i++) sizes[nsizes++] = (cl_uint)strtoul(argv[i], NULL, 10);
    }
    double start = now_s();
    for (int s = 0; s < nsizes; s++)
        for (int k = 0; k < 3; k++)
            printf("%s\t%u\t%.3f ms\n", names[k], sizes[s], run(&b, names[k], sizes[s]));
    printf("total\t%.3f s\n", now_s() - start);
    return 0;
}
