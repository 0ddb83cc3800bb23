/* Fixture: several programs and kernels in one application — a program with two kernels, a
 * program whose result depends on its build options, a program made by clCompileProgram
 * (with a header passed through input_headers) and clLinkProgram with a second unit, a kernel
 * made by clCloneKernel (which inherits its arguments), a program recreated from its own
 * binary (clCreateProgramWithBinary), and a second context. */
#include "common.h"

enum { N = 32 };

static cl_program compile_unit(cl_context ctx, cl_device_id dev, const char *file,
                               cl_uint nheaders, const cl_program *headers,
                               const char **header_names) {
    char *src = read_kernel(file);
    cl_int err;
    cl_program p = clCreateProgramWithSource(ctx, 1, (const char **)&src, NULL, &err);
    CHECK_ERR(err);
    err = clCompileProgram(p, 1, &dev, "-DUNUSED_FLAG=1", nheaders, headers, header_names, NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[8192];
        size_t n = 0;
        clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, &n);
        log[n < sizeof log ? n : sizeof log - 1] = 0;
        fprintf(stderr, "compile of %s failed (%d):\n%s\n", file, (int)err, log);
        exit(2);
    }
    free(src);
    return p;
}

int main(void) {
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);

    int host[N];
    for (int i = 0; i < N; i++) host[i] = i - 10;
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host, &err);
    CHECK_ERR(err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof host, NULL, &err);
    CHECK_ERR(err);
    size_t g = N;

    /* Program A: two kernels. */
    cl_program pa = build_program(ctx, dev, "programs_a.cl", "");
    cl_kernel k1 = make_kernel(pa, "add_one");
    cl_kernel k2 = make_kernel(pa, "times_two");
    CHECK(clSetKernelArg(k1, 0, sizeof a, &a));
    CHECK(clSetKernelArg(k2, 0, sizeof a, &a));
    CHECK(clEnqueueNDRangeKernel(q, k1, 1, NULL, &g, NULL, 0, NULL, NULL));
    CHECK(clEnqueueNDRangeKernel(q, k2, 1, NULL, &g, NULL, 0, NULL, NULL));

    /* Program B: build options matter. */
    cl_program pb = build_program(ctx, dev, "programs_b.cl", "-DSCALE=3 -cl-std=CL1.2");
    /* What the program says it was built with must be what the application passed. */
    char opts[256] = {0};
    CHECK(clGetProgramBuildInfo(pb, dev, CL_PROGRAM_BUILD_OPTIONS, sizeof opts - 1, opts, NULL));
    printf("build options of program B: \"%s\"\n", opts);
    EXPECT(strcmp(opts, "-DSCALE=3 -cl-std=CL1.2") == 0, "options %s", opts);
    cl_kernel k3 = make_kernel(pb, "square_scaled");
    CHECK(clSetKernelArg(k3, 0, sizeof a, &a));
    CHECK(clSetKernelArg(k3, 1, sizeof b, &b));
    CHECK(clEnqueueNDRangeKernel(q, k3, 1, NULL, &g, NULL, 0, NULL, NULL));

    /* Program C: compiled in two units with an embedded header, then linked. */
    char *hsrc = read_kernel("mix_helper.h");
    cl_program header = clCreateProgramWithSource(ctx, 1, (const char **)&hsrc, NULL, &err);
    CHECK_ERR(err);
    const char *hname = "mix_helper.h";
    cl_program unit_main = compile_unit(ctx, dev, "linked_main.cl", 1, &header, &hname);
    cl_program unit_lib = compile_unit(ctx, dev, "linked_lib.cl", 0, NULL, NULL);
    cl_program units[2] = {unit_main, unit_lib};
    cl_program pc = clLinkProgram(ctx, 1, &dev, "", 2, units, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_kernel k4 = make_kernel(pc, linked_kernel_name(pc, "mix"));
    CHECK(clSetKernelArg(k4, 0, sizeof b, &b));
    CHECK(clSetKernelArg(k4, 1, sizeof a, &a));
    CHECK(clEnqueueNDRangeKernel(q, k4, 1, NULL, &g, NULL, 0, NULL, NULL));

    /* clCloneKernel: the clone inherits the arguments set on the original (a -> a + 1). */
    cl_kernel k5 = clCloneKernel(k1, &err);
    CHECK_ERR(err);
    CHECK(clEnqueueNDRangeKernel(q, k5, 1, NULL, &g, NULL, 0, NULL, NULL));

    int ga[N], gb[N];
    CHECK(clEnqueueReadBuffer(q, a, CL_TRUE, 0, sizeof ga, ga, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof gb, gb, 0, NULL, NULL));
    long total = 0;
    for (int i = 0; i < N; i++) {
        int step1 = (host[i] + 1) * 2;
        int step2 = step1 * step1 * 3;
        int step3 = step2 * 3 - 1 + 7 + 1;
        EXPECT(gb[i] == step2, "square_scaled[%d]=%d want %d", i, gb[i], step2);
        EXPECT(ga[i] == step3, "mix[%d]=%d want %d", i, ga[i], step3);
        total += ga[i];
    }
    printf("programs: 3 programs, 4 kernels and a clone, result sum %ld\n", total);

    /* Program A again, from the binary the driver made of it. */
    size_t bin_size = 0;
    CHECK(clGetProgramInfo(pa, CL_PROGRAM_BINARY_SIZES, sizeof bin_size, &bin_size, NULL));
    unsigned char *bin = malloc(bin_size);
    unsigned char *bins[1] = {bin};
    CHECK(clGetProgramInfo(pa, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL));
    cl_int bin_status = 0;
    cl_program pbin = clCreateProgramWithBinary(ctx, 1, &dev, &bin_size,
                                                (const unsigned char **)bins, &bin_status, &err);
    CHECK_ERR(err);
    CHECK_ERR(bin_status);
    CHECK(clBuildProgram(pbin, 1, &dev, "", NULL, NULL));
    cl_kernel kbin = make_kernel(pbin, "times_two");
    CHECK(clSetKernelArg(kbin, 0, sizeof b, &b));
    CHECK(clEnqueueNDRangeKernel(q, kbin, 1, NULL, &g, NULL, 0, NULL, NULL));
    int gbin[N];
    CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, sizeof gbin, gbin, 0, NULL, NULL));
    for (int i = 0; i < N; i++) EXPECT(gbin[i] == gb[i] * 2, "from binary [%d]=%d", i, gbin[i]);
    printf("program from binary: b[31]=%d\n", gbin[N - 1]);
    clReleaseKernel(kbin);
    clReleaseProgram(pbin);
    free(bin);

    /* A second context with its own queue, program and buffer. */
    cl_context ctx2 = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q2 = clCreateCommandQueue(ctx2, dev, 0, &err);
    CHECK_ERR(err);
    cl_program pa2 = build_program(ctx2, dev, "programs_a.cl", "");
    cl_kernel k6 = make_kernel(pa2, "times_two");
    cl_mem c2 = clCreateBuffer(ctx2, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host, &err);
    CHECK_ERR(err);
    CHECK(clSetKernelArg(k6, 0, sizeof c2, &c2));
    CHECK(clEnqueueNDRangeKernel(q2, k6, 1, NULL, &g, NULL, 0, NULL, NULL));
    int gc[N];
    CHECK(clEnqueueReadBuffer(q2, c2, CL_TRUE, 0, sizeof gc, gc, 0, NULL, NULL));
    for (int i = 0; i < N; i++) EXPECT(gc[i] == host[i] * 2, "second context [%d]=%d", i, gc[i]);
    printf("second context: c[31]=%d\n", gc[N - 1]);
    clReleaseMemObject(c2);
    clReleaseKernel(k6);
    clReleaseProgram(pa2);
    clReleaseCommandQueue(q2);
    clReleaseContext(ctx2);

    free(hsrc);
    clReleaseKernel(k1);
    clReleaseKernel(k2);
    clReleaseKernel(k3);
    clReleaseKernel(k4);
    clReleaseKernel(k5);
    clReleaseProgram(pa);
    clReleaseProgram(pb);
    clReleaseProgram(pc);
    clReleaseProgram(unit_main);
    clReleaseProgram(unit_lib);
    clReleaseProgram(header);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return finish("programs");
}
