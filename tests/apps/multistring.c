/* Fixture: programs made of several strings, as libraries pass a header and a body.
 * Program A: clCreateProgramWithSource with three strings and NULL lengths (each string ends
 * with NUL). Program B: two strings with explicit lengths and no NUL after the first (a
 * length-delimited slice of a larger buffer). Program C: a unit compiled with two headers
 * through input_headers (clCompileProgram) and linked with a second unit. Every result is
 * checked here; replay must rebuild each program from all its strings. */
#include "common.h"

enum { N = 64 };

static const char *A_TYPES = "typedef float real;\n#define SCALE 3.0f\n";
static const char *A_HELPER = "real twice(real v) { return v * 2.0f; }\n";
static const char *A_KERNEL =
    "__kernel void scale_twice(__global real *x) {\n"
    "    size_t i = get_global_id(0);\n"
    "    x[i] = twice(x[i]) * SCALE;\n"
    "}\n";

/* One buffer holding two strings back to back, with no NUL between them. */
static const char B_TEXT[] =
    "int offset_of(int v) { return v + 5; }\n"
    "__kernel void add_five(__global int *y) { y[get_global_id(0)] = offset_of(y[get_global_id(0)]); }\n";

static const char *H_ONE = "#define ONE_FACTOR 7\n";
static const char *H_TWO = "int two_add(int v) { return v + 11; }\n";
static const char *C_MAIN =
    "#include \"one.h\"\n#include \"two.h\"\n"
    "int lib_neg(int v);\n"
    "__kernel void combine(__global int *z) {\n"
    "    size_t i = get_global_id(0);\n"
    "    z[i] = lib_neg(two_add(z[i] * ONE_FACTOR));\n"
    "}\n";
static const char *C_LIB = "int lib_neg(int v) { return -v; }\n";

static cl_program compile(cl_context ctx, cl_device_id dev, const char *src, cl_uint nh,
                          const cl_program *hs, const char **names) {
    cl_int err;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK_ERR(err);
    CHECK(clCompileProgram(p, 1, &dev, "", nh, hs, names, NULL, NULL));
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
    size_t g = N;

    float xf[N];
    int yi[N], zi[N];
    for (int i = 0; i < N; i++) { xf[i] = (float)i * 0.5f; yi[i] = i; zi[i] = i - 3; }
    cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof xf, xf, &err);
    CHECK_ERR(err);
    cl_mem y = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof yi, yi, &err);
    CHECK_ERR(err);
    cl_mem z = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zi, zi, &err);
    CHECK_ERR(err);

    /* A: three NUL-terminated strings. */
    const char *a_srcs[3] = {A_TYPES, A_HELPER, A_KERNEL};
    cl_program pa = clCreateProgramWithSource(ctx, 3, a_srcs, NULL, &err);
    CHECK_ERR(err);
    CHECK(clBuildProgram(pa, 1, &dev, "", NULL, NULL));
    cl_kernel ka = clCreateKernel(pa, "scale_twice", &err);
    CHECK_ERR(err);
    CHECK(clSetKernelArg(ka, 0, sizeof x, &x));
    CHECK(clEnqueueNDRangeKernel(q, ka, 1, NULL, &g, NULL, 0, NULL, NULL));

    /* B: two length-delimited strings cut from one buffer. */
    const char *cut = strstr(B_TEXT, "__kernel");
    const char *b_srcs[2] = {B_TEXT, cut};
    size_t b_lens[2] = {(size_t)(cut - B_TEXT), strlen(cut)};
    cl_program pb = clCreateProgramWithSource(ctx, 2, b_srcs, b_lens, &err);
    CHECK_ERR(err);
    CHECK(clBuildProgram(pb, 1, &dev, "", NULL, NULL));
    cl_kernel kb = clCreateKernel(pb, "add_five", &err);
    CHECK_ERR(err);
    CHECK(clSetKernelArg(kb, 0, sizeof y, &y));
    CHECK(clEnqueueNDRangeKernel(q, kb, 1, NULL, &g, NULL, 0, NULL, NULL));

    /* C: compiled with two headers, linked with a second unit. */
    cl_program h1 = clCreateProgramWithSource(ctx, 1, &H_ONE, NULL, &err);
    CHECK_ERR(err);
    cl_program h2 = clCreateProgramWithSource(ctx, 1, &H_TWO, NULL, &err);
    CHECK_ERR(err);
    cl_program hs[2] = {h1, h2};
    const char *hnames[2] = {"one.h", "two.h"};
    cl_program units[2] = {compile(ctx, dev, C_MAIN, 2, hs, hnames),
                           compile(ctx, dev, C_LIB, 0, NULL, NULL)};
    cl_program pc = clLinkProgram(ctx, 1, &dev, "", 2, units, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_kernel kc = clCreateKernel(pc, linked_kernel_name(pc, "combine"), &err);
    CHECK_ERR(err);
    CHECK(clSetKernelArg(kc, 0, sizeof z, &z));
    CHECK(clEnqueueNDRangeKernel(q, kc, 1, NULL, &g, NULL, 0, NULL, NULL));

    float gx[N];
    int gy[N], gz[N];
    CHECK(clEnqueueReadBuffer(q, x, CL_TRUE, 0, sizeof gx, gx, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, y, CL_TRUE, 0, sizeof gy, gy, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, z, CL_TRUE, 0, sizeof gz, gz, 0, NULL, NULL));
    long sum = 0;
    for (int i = 0; i < N; i++) {
        EXPECT(gx[i] == xf[i] * 2.0f * 3.0f, "x[%d]=%g", i, gx[i]);
        EXPECT(gy[i] == i + 5, "y[%d]=%d", i, gy[i]);
        EXPECT(gz[i] == -((i - 3) * 7 + 11), "z[%d]=%d", i, gz[i]);
        sum += gy[i] + gz[i];
    }
    printf("multistring: 3 programs from 3, 2 and 1+2 headers+1 strings, sum %ld\n", sum);
    clReleaseKernel(ka); clReleaseKernel(kb); clReleaseKernel(kc);
    clReleaseProgram(pa); clReleaseProgram(pb); clReleaseProgram(pc);
    clReleaseProgram(units[0]); clReleaseProgram(units[1]); clReleaseProgram(h1); clReleaseProgram(h2);
    clReleaseMemObject(x); clReleaseMemObject(y); clReleaseMemObject(z);
    clReleaseCommandQueue(q); clReleaseContext(ctx);
    return g_failures ? 1 : 0;
}
