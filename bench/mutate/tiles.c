/*
 * tiles: the larger kernels of the mutation-testing benchmark (bench/mutate.sh), an ordinary
 * OpenCL 1.2 host program captured like the demo. Two kernels written the way real ones are,
 * with many mutants each:
 *
 *   matmul_tiled  2-D, 8x8 tiles through __local memory, barriers inside the tile loop,
 *                 bounds checks for sizes that are not multiples of the tile (2 launches)
 *   histogram     1-D, per-group __local bins with atomics, grid-stride loops (2 launches)
 *
 * Every result is checked on the host; exit status 1 if any is wrong.
 *
 * Build: cc -O2 -o tiles tiles.c -lOpenCL
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>

static const char *SOURCE =
    "#define TS 8\n"
    "__kernel void matmul_tiled(__global const float *A, __global const float *B,\n"
    "                           __global float *C, int M, int N, int K) {\n"
    "    __local float As[TS][TS];\n"
    "    __local float Bs[TS][TS];\n"
    "    int row = get_local_id(1);\n"
    "    int col = get_local_id(0);\n"
    "    int grow = get_group_id(1) * TS + row;\n"
    "    int gcol = get_group_id(0) * TS + col;\n"
    "    float acc = 0.0f;\n"
    "    int tiles = (K + TS - 1) / TS;\n"
    "    for (int t = 0; t < tiles; t++) {\n"
    "        int ak = t * TS + col;\n"
    "        int bk = t * TS + row;\n"
    "        As[row][col] = (grow < M && ak < K) ? A[grow * K + ak] : 0.0f;\n"
    "        Bs[row][col] = (bk < K && gcol < N) ? B[bk * N + gcol] : 0.0f;\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "        for (int k = 0; k < TS; k++)\n"
    "            acc += As[row][k] * Bs[k][col];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (grow < M && gcol < N)\n"
    "        C[grow * N + gcol] = acc;\n"
    "}\n"
    "\n"
    "__kernel void histogram(__global const uchar *data, int n, __global uint *bins) {\n"
    "    __local uint local_bins[64];\n"
    "    int lid = get_local_id(0);\n"
    "    int lsize = get_local_size(0);\n"
    "    for (int i = lid; i < 64; i += lsize)\n"
    "        local_bins[i] = 0;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (int i = get_global_id(0); i < n; i += get_global_size(0)) {\n"
    "        uchar v = data[i];\n"
    "        if (v != 255)\n"
    "            atomic_inc(&local_bins[(v >> 2) & 63]);\n"
    "    }\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (int i = lid; i < 64; i += lsize)\n"
    "        if (local_bins[i] > 0)\n"
    "            atomic_add(&bins[i], local_bins[i]);\n"
    "}\n";

#define CHECK(call)                                                                    \
    do {                                                                               \
        cl_int err_ = (call);                                                          \
        if (err_ != CL_SUCCESS) {                                                      \
            fprintf(stderr, "tiles: %s failed with %d (line %d)\n", #call, err_, __LINE__); \
            exit(2);                                                                   \
        }                                                                              \
    } while (0)

static cl_context context;
static cl_command_queue queue;
static cl_program program;

static cl_mem buffer(cl_mem_flags flags, size_t size, void *host) {
    cl_int err;
    cl_mem m = clCreateBuffer(context, flags, size, host, &err);
    CHECK(err);
    return m;
}

/* C = A x B for M x K and K x N matrices of small integers (exact in float). */
static int run_matmul(int M, int N, int K) {
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
    float *c = malloc(sizeof(float) * M * N);
    for (int i = 0; i < M * K; i++)
        a[i] = (float)((i * 7) % 11 - 5);
    for (int i = 0; i < K * N; i++)
        b[i] = (float)((i * 5) % 9 - 4);
    cl_mem da = buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(float) * M * K, a);
    cl_mem db = buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(float) * K * N, b);
    cl_mem dc = buffer(CL_MEM_WRITE_ONLY, sizeof(float) * M * N, NULL);
    cl_int err;
    cl_kernel k = clCreateKernel(program, "matmul_tiled", &err);
    CHECK(err);
    CHECK(clSetKernelArg(k, 0, sizeof da, &da));
    CHECK(clSetKernelArg(k, 1, sizeof db, &db));
    CHECK(clSetKernelArg(k, 2, sizeof dc, &dc));
    CHECK(clSetKernelArg(k, 3, sizeof M, &M));
    CHECK(clSetKernelArg(k, 4, sizeof N, &N));
    CHECK(clSetKernelArg(k, 5, sizeof K, &K));
    size_t local[2] = {8, 8};
    size_t global[2] = {(size_t)(N + 7) / 8 * 8, (size_t)(M + 7) / 8 * 8};
    CHECK(clEnqueueNDRangeKernel(queue, k, 2, NULL, global, local, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(queue, dc, CL_TRUE, 0, sizeof(float) * M * N, c, 0, NULL, NULL));
    int bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float s = 0.0f;
            for (int x = 0; x < K; x++)
                s += a[i * K + x] * b[x * N + j];
            bad += c[i * N + j] != s;
        }
    printf("matmul_tiled %dx%dx%d  %s\n", M, N, K, bad ? "WRONG" : "ok");
    clReleaseKernel(k);
    clReleaseMemObject(da);
    clReleaseMemObject(db);
    clReleaseMemObject(dc);
    free(a);
    free(b);
    free(c);
    return bad != 0;
}

/* 64 bins of v >> 2 over n bytes, 255 skipped; a grid smaller than n (grid-stride loop). */
static int run_histogram(int n, size_t global, unsigned seed) {
    unsigned char *data = malloc(n);
    unsigned bins[64] = {0}, expect[64] = {0};
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        data[i] = (unsigned char)(seed >> 16);
        if (data[i] != 255)
            expect[data[i] >> 2]++;
    }
    cl_mem dd = buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n, data);
    cl_mem db = buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof bins, bins);
    cl_int err;
    cl_kernel k = clCreateKernel(program, "histogram", &err);
    CHECK(err);
    CHECK(clSetKernelArg(k, 0, sizeof dd, &dd));
    CHECK(clSetKernelArg(k, 1, sizeof n, &n));
    CHECK(clSetKernelArg(k, 2, sizeof db, &db));
    size_t local = 32;
    CHECK(clEnqueueNDRangeKernel(queue, k, 1, NULL, &global, &local, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(queue, db, CL_TRUE, 0, sizeof bins, bins, 0, NULL, NULL));
    int bad = 0;
    for (int i = 0; i < 64; i++)
        bad += bins[i] != expect[i];
    printf("histogram    n=%d  %s\n", n, bad ? "WRONG" : "ok");
    clReleaseKernel(k);
    clReleaseMemObject(dd);
    clReleaseMemObject(db);
    free(data);
    return bad != 0;
}

int main(void) {
    cl_platform_id platform;
    cl_device_id device;
    CHECK(clGetPlatformIDs(1, &platform, NULL));
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
    cl_int err;
    context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    queue = clCreateCommandQueue(context, device, 0, &err);
    CHECK(err);
    program = clCreateProgramWithSource(context, 1, &SOURCE, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(program, 1, &device, "", NULL, NULL));
    int bad = run_matmul(24, 20, 28) | run_matmul(16, 40, 13);
    bad |= run_histogram(3000, 256, 1) | run_histogram(777, 64, 7);
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    return bad;
}
