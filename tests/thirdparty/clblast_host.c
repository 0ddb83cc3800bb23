/* Third-party matrix: CLBlast (Debian libclblast) run as a library by a small host. Its
 * kernels are CLBlast's own (saxpy, snrm2, sgemv, sgemm with its pad/transpose helpers),
 * built from source at the first call. The host checks every result against a plain C
 * computation and prints one deterministic line. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <clblast_c.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define M 48
#define N 40
#define K 36

static int fail(const char *what, int code) {
    fprintf(stderr, "clblast_host: %s failed (%d)\n", what, code);
    return 2;
}

int main(void) {
    cl_platform_id plat;
    cl_device_id dev;
    cl_int err = clGetPlatformIDs(1, &plat, NULL);
    if (err) return fail("clGetPlatformIDs", err);
    err = clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL);
    if (err) return fail("clGetDeviceIDs", err);
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (err) return fail("clCreateContext", err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    if (err) return fail("clCreateCommandQueue", err);

    static float a[M * K], b[K * N], c[M * N], x[N], y[M], want_c[M * N], want_y[M];
    for (int i = 0; i < M * K; i++) a[i] = (float)((i * 7) % 13) * 0.25f - 1.0f;
    for (int i = 0; i < K * N; i++) b[i] = (float)((i * 5) % 11) * 0.5f - 2.0f;
    for (int i = 0; i < M * N; i++) c[i] = (float)(i % 3);
    for (int i = 0; i < N; i++) x[i] = (float)(i % 5) - 2.0f;
    for (int i = 0; i < M; i++) y[i] = 1.0f;

    cl_mem da = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof a, a, &err);
    cl_mem db = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof b, b, &err);
    cl_mem dc = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof c, c, &err);
    cl_mem dx = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof x, x, &err);
    cl_mem dy = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof y, y, &err);
    cl_mem dn = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(float), NULL, &err);
    if (err) return fail("clCreateBuffer", err);

    /* y = 0.5 * A x[:K] + 2 y (row-major, lda = K) */
    CLBlastStatusCode s = CLBlastSgemv(CLBlastLayoutRowMajor, CLBlastTransposeNo, M, K, 0.5f, da, 0, K,
                                       dx, 0, 1, 2.0f, dy, 0, 1, &q, NULL);
    if (s) return fail("CLBlastSgemv", s);
    /* C = 1.5 * A B - 1 C */
    s = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, M, N, K, 1.5f,
                     da, 0, K, db, 0, N, -1.0f, dc, 0, N, &q, NULL);
    if (s) return fail("CLBlastSgemm", s);
    /* x = 3 * x + x (saxpy over N) then nrm2(x) */
    s = CLBlastSaxpy(N, 3.0f, dx, 0, 1, dx, 0, 1, &q, NULL);
    if (s) return fail("CLBlastSaxpy", s);
    s = CLBlastSnrm2(N, dn, 0, dx, 0, 1, &q, NULL);
    if (s) return fail("CLBlastSnrm2", s);
    clFinish(q);

    float gc[M * N], gy[M], gn;
    clEnqueueReadBuffer(q, dc, CL_TRUE, 0, sizeof gc, gc, 0, NULL, NULL);
    clEnqueueReadBuffer(q, dy, CL_TRUE, 0, sizeof gy, gy, 0, NULL, NULL);
    clEnqueueReadBuffer(q, dn, CL_TRUE, 0, sizeof gn, &gn, 0, NULL, NULL);

    int bad = 0;
    for (int i = 0; i < M; i++) {
        double acc = 0;
        for (int j = 0; j < K; j++) acc += a[i * K + j] * x[j];
        want_y[i] = (float)(0.5 * acc + 2.0 * y[i]);
        if (fabsf(gy[i] - want_y[i]) > 1e-3f) bad++;
        for (int j = 0; j < N; j++) {
            double t = 0;
            for (int k = 0; k < K; k++) t += a[i * K + k] * b[k * N + j];
            want_c[i * N + j] = (float)(1.5 * t - c[i * N + j]);
            if (fabsf(gc[i * N + j] - want_c[i * N + j]) > 1e-2f) bad++;
        }
    }
    double nn = 0;
    for (int j = 0; j < N; j++) nn += (4.0 * x[j]) * (4.0 * x[j]);
    if (fabs(gn - sqrt(nn)) > 1e-3) bad++;
    printf("clblast_host: sgemv, sgemm, saxpy, snrm2 %s\n", bad ? "WRONG" : "ok");
    return bad ? 1 : 0;
}
