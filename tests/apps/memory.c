/* Fixture: memory kinds — two __local arguments, a __constant table, a buffer scaled in place
 * (input and output at once), the same buffer passed to two arguments (read/read and
 * read-write/read aliasing), kernels running on sub-buffers of one parent, a NULL buffer
 * argument, and a CL_MEM_USE_HOST_PTR buffer updated through map/unmap between launches. */
#include "common.h"

enum { N = 64, LOCAL = 16 };

int main(void) {
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    cl_program p = build_program(ctx, dev, "memory.cl", "");

    /* __local: a work-group reduction. */
    int in[N];
    for (int k = 0; k < N; k++) in[k] = k * 3 - 20;
    cl_mem bin = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof in, in, &err);
    CHECK_ERR(err);
    cl_mem bsums = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(int) * (N / LOCAL), NULL, &err);
    CHECK_ERR(err);
    cl_kernel kl = make_kernel(p, "local_sum");
    CHECK(clSetKernelArg(kl, 0, sizeof bin, &bin));
    CHECK(clSetKernelArg(kl, 1, sizeof bsums, &bsums));
    CHECK(clSetKernelArg(kl, 2, sizeof(int) * LOCAL, NULL));
    CHECK(clSetKernelArg(kl, 3, sizeof(float) * LOCAL, NULL));
    size_t g = N, l = LOCAL;
    CHECK(clEnqueueNDRangeKernel(q, kl, 1, NULL, &g, &l, 0, NULL, NULL));
    int sums[N / LOCAL];
    CHECK(clEnqueueReadBuffer(q, bsums, CL_TRUE, 0, sizeof sums, sums, 0, NULL, NULL));
    for (int grp = 0; grp < N / LOCAL; grp++) {
        int want = 0;
        for (int k = 0; k < LOCAL; k++) want += in[grp * LOCAL + k];
        EXPECT(sums[grp] == want * 1000 + LOCAL, "group %d sum %d want %d", grp, sums[grp],
               want * 1000 + LOCAL);
        printf("local_sum[%d] = %d\n", grp, sums[grp]);
    }

    /* __constant table lookup. */
    int table[32], idx[N];
    for (int k = 0; k < 32; k++) table[k] = k * k + 5;
    for (int k = 0; k < N; k++) idx[k] = (k * 7) % 32;
    cl_mem btab = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof table, table, &err);
    CHECK_ERR(err);
    cl_mem bidx = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof idx, idx, &err);
    CHECK_ERR(err);
    cl_mem blook = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(int) * N, NULL, &err);
    CHECK_ERR(err);
    cl_kernel kc = make_kernel(p, "constant_lookup");
    CHECK(clSetKernelArg(kc, 0, sizeof btab, &btab));
    CHECK(clSetKernelArg(kc, 1, sizeof bidx, &bidx));
    CHECK(clSetKernelArg(kc, 2, sizeof blook, &blook));
    CHECK(clEnqueueNDRangeKernel(q, kc, 1, NULL, &g, NULL, 0, NULL, NULL));
    int look[N];
    CHECK(clEnqueueReadBuffer(q, blook, CL_TRUE, 0, sizeof look, look, 0, NULL, NULL));
    long lsum = 0;
    for (int k = 0; k < N; k++) {
        EXPECT(look[k] == table[idx[k]], "lookup %d: %d", k, look[k]);
        lsum += look[k];
    }
    printf("constant_lookup: sum %ld\n", lsum);

    /* In-place: one buffer is input and output; launched twice so the second launch's
     * input is the first one's output. */
    float data[N];
    for (int k = 0; k < N; k++) data[k] = (float)k * 0.5f;
    cl_mem bdata = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof data, data, &err);
    CHECK_ERR(err);
    cl_kernel kscale = make_kernel(p, "scale_in_place");
    float k1 = 2.0f, k2 = -3.0f;
    CHECK(clSetKernelArg(kscale, 0, sizeof bdata, &bdata));
    CHECK(clSetKernelArg(kscale, 1, sizeof k1, &k1));
    CHECK(clEnqueueNDRangeKernel(q, kscale, 1, NULL, &g, NULL, 0, NULL, NULL));
    CHECK(clSetKernelArg(kscale, 1, sizeof k2, &k2));
    CHECK(clEnqueueNDRangeKernel(q, kscale, 1, NULL, &g, NULL, 0, NULL, NULL));
    float got[N];
    CHECK(clEnqueueReadBuffer(q, bdata, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
    for (int k = 0; k < N; k++) {
        float want = ((float)k * 0.5f * 2.0f + 1.0f) * -3.0f + 1.0f;
        EXPECT(got[k] == want, "scale %d: %g want %g", k, got[k], want);
    }
    printf("scale_in_place: data[5]=%g data[63]=%g\n", got[5], got[63]);

    /* Aliasing: the same buffer as both inputs, then as read-write and read-only input. */
    int av[N];
    for (int k = 0; k < N; k++) av[k] = k + 1;
    cl_mem balias = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof av, av, &err);
    CHECK_ERR(err);
    cl_mem bsum = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof av, NULL, &err);
    CHECK_ERR(err);
    cl_kernel kpair = make_kernel(p, "add_pair");
    CHECK(clSetKernelArg(kpair, 0, sizeof balias, &balias));
    CHECK(clSetKernelArg(kpair, 1, sizeof balias, &balias));
    CHECK(clSetKernelArg(kpair, 2, sizeof bsum, &bsum));
    CHECK(clEnqueueNDRangeKernel(q, kpair, 1, NULL, &g, NULL, 0, NULL, NULL));
    cl_kernel kinto = make_kernel(p, "add_into");
    CHECK(clSetKernelArg(kinto, 0, sizeof balias, &balias));
    CHECK(clSetKernelArg(kinto, 1, sizeof balias, &balias));
    CHECK(clEnqueueNDRangeKernel(q, kinto, 1, NULL, &g, NULL, 0, NULL, NULL));
    int gs[N], ga[N];
    CHECK(clEnqueueReadBuffer(q, bsum, CL_TRUE, 0, sizeof gs, gs, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, balias, CL_TRUE, 0, sizeof ga, ga, 0, NULL, NULL));
    for (int k = 0; k < N; k++) {
        EXPECT(gs[k] == 2 * (k + 1), "alias add_pair %d: %d", k, gs[k]);
        EXPECT(ga[k] == 11 * (k + 1), "alias add_into %d: %d", k, ga[k]);
    }
    printf("aliasing: add_pair[9]=%d add_into[9]=%d\n", gs[9], ga[9]);

    /* Sub-buffers: the parent holds 4 regions; kernels touch only the middle two. */
    cl_uint align_bits = 0;
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL));
    size_t region_bytes = align_bits / 8;
    if (region_bytes < N * sizeof(float)) region_bytes = N * sizeof(float);
    size_t total = region_bytes * 4;
    float *parent = calloc(total / sizeof(float), sizeof(float));
    for (size_t k = 0; k < total / sizeof(float); k++) parent[k] = (float)k;
    cl_mem bparent = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, total, parent, &err);
    CHECK_ERR(err);
    cl_buffer_region r1 = {region_bytes, N * sizeof(float)};
    cl_buffer_region r2 = {region_bytes * 2, N * sizeof(float)};
    cl_mem sub1 = clCreateSubBuffer(bparent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r1, &err);
    CHECK_ERR(err);
    cl_mem sub2 = clCreateSubBuffer(bparent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r2, &err);
    CHECK_ERR(err);
    float k3 = 0.25f;
    CHECK(clSetKernelArg(kscale, 0, sizeof sub1, &sub1));
    CHECK(clSetKernelArg(kscale, 1, sizeof k3, &k3));
    CHECK(clEnqueueNDRangeKernel(q, kscale, 1, NULL, &g, NULL, 0, NULL, NULL));
    CHECK(clSetKernelArg(kscale, 0, sizeof sub2, &sub2));
    CHECK(clEnqueueNDRangeKernel(q, kscale, 1, NULL, &g, NULL, 0, NULL, NULL));
    float *pgot = calloc(total / sizeof(float), sizeof(float));
    CHECK(clEnqueueReadBuffer(q, bparent, CL_TRUE, 0, total, pgot, 0, NULL, NULL));
    size_t first = region_bytes / sizeof(float);
    for (size_t k = 0; k < total / sizeof(float); k++) {
        int in_sub = (k >= first && k < first + N) || (k >= 2 * first && k < 2 * first + N);
        float want = in_sub ? parent[k] * 0.25f + 1.0f : parent[k];
        EXPECT(pgot[k] == want, "parent[%zu] %g want %g", k, pgot[k], want);
    }
    printf("sub-buffers: region %zu bytes, parent[%zu]=%g\n", region_bytes, first, pgot[first]);

    /* A sub-buffer and its own parent in one launch: dst = region 1 of the parent, src = the
     * parent itself (its first N ints), so the launch writes part of the object it reads. */
    int *iparent = calloc(total / sizeof(int), sizeof(int));
    for (size_t k = 0; k < total / sizeof(int); k++) iparent[k] = (int)k;
    cl_mem biparent = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, total, iparent, &err);
    CHECK_ERR(err);
    cl_mem isub = clCreateSubBuffer(biparent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r1, &err);
    CHECK_ERR(err);
    CHECK(clSetKernelArg(kinto, 0, sizeof isub, &isub));
    CHECK(clSetKernelArg(kinto, 1, sizeof biparent, &biparent));
    CHECK(clEnqueueNDRangeKernel(q, kinto, 1, NULL, &g, NULL, 0, NULL, NULL));
    int *igot = calloc(total / sizeof(int), sizeof(int));
    CHECK(clEnqueueReadBuffer(q, biparent, CL_TRUE, 0, total, igot, 0, NULL, NULL));
    size_t ifirst = region_bytes / sizeof(int);
    for (size_t k = 0; k < total / sizeof(int); k++) {
        int want = (k >= ifirst && k < ifirst + N) ? iparent[k] + iparent[k - ifirst] * 10 : iparent[k];
        EXPECT(igot[k] == want, "parent+sub [%zu]=%d want %d", k, igot[k], want);
    }
    printf("sub-buffer with its parent: parent[%zu]=%d\n", ifirst + 1, igot[ifirst + 1]);
    clReleaseMemObject(isub);
    clReleaseMemObject(biparent);
    free(iparent);
    free(igot);

    /* A NULL buffer argument, then a host-pointer buffer the host rewrites through a map. */
    int *hostmem = calloc(N, sizeof(int));
    for (int k = 0; k < N; k++) hostmem[k] = k * k;
    cl_mem bhost = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, sizeof(int) * N, hostmem, &err);
    CHECK_ERR(err);
    int acc0[N] = {0};
    cl_mem bacc = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof acc0, acc0, &err);
    CHECK_ERR(err);
    cl_kernel kopt = make_kernel(p, "add_optional");
    CHECK(clSetKernelArg(kopt, 0, sizeof bacc, &bacc));
    CHECK(clSetKernelArg(kopt, 1, sizeof(cl_mem), NULL));
    CHECK(clEnqueueNDRangeKernel(q, kopt, 1, NULL, &g, NULL, 0, NULL, NULL));
    CHECK(clSetKernelArg(kopt, 1, sizeof bhost, &bhost));
    CHECK(clEnqueueNDRangeKernel(q, kopt, 1, NULL, &g, NULL, 0, NULL, NULL));
    int *mapped = clEnqueueMapBuffer(q, bhost, CL_TRUE, CL_MAP_WRITE, 0, sizeof(int) * N, 0, NULL, NULL, &err);
    CHECK_ERR(err);
    for (int k = 0; k < N; k++) mapped[k] = -3 * k;
    CHECK(clEnqueueUnmapMemObject(q, bhost, mapped, 0, NULL, NULL));
    CHECK(clEnqueueNDRangeKernel(q, kopt, 1, NULL, &g, NULL, 0, NULL, NULL));
    int gacc[N];
    CHECK(clEnqueueReadBuffer(q, bacc, CL_TRUE, 0, sizeof gacc, gacc, 0, NULL, NULL));
    for (int k = 0; k < N; k++)
        EXPECT(gacc[k] == 100 + k * k - 3 * k, "add_optional[%d]=%d", k, gacc[k]);
    printf("NULL and host-pointer buffers: acc[10]=%d\n", gacc[10]);
    clReleaseKernel(kopt);
    clReleaseMemObject(bacc);
    clReleaseMemObject(bhost);
    free(hostmem);

    clReleaseMemObject(sub1);
    clReleaseMemObject(sub2);
    clReleaseMemObject(bparent);
    free(parent);
    free(pgot);
    clReleaseMemObject(bin);
    clReleaseMemObject(bsums);
    clReleaseMemObject(btab);
    clReleaseMemObject(bidx);
    clReleaseMemObject(blook);
    clReleaseMemObject(bdata);
    clReleaseMemObject(balias);
    clReleaseMemObject(bsum);
    clReleaseKernel(kl);
    clReleaseKernel(kc);
    clReleaseKernel(kscale);
    clReleaseKernel(kpair);
    clReleaseKernel(kinto);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return finish("memory");
}
