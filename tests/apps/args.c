/* Fixture: by-value kernel arguments — int, uint, long, float, char, uchar, short, ulong,
 * double (where the device has fp64), float4, int2, uchar16, float3 (16 bytes) and a struct. */
#include "common.h"

typedef struct {
    cl_int a;
    cl_float b;
    cl_long c;
    cl_char d;
} params_t;

enum { N = 4 };

int main(void) {
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    cl_program p = build_program(ctx, dev, "args.cl", "");

    /* Scalars. */
    cl_kernel ks = make_kernel(p, "scalars");
    cl_mem outl = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(cl_long) * 8 * N, NULL, &err);
    CHECK_ERR(err);
    cl_int i = -123456;
    cl_uint u = 4000000000u;
    cl_long l = -9000000000123LL;
    cl_float f = 2.5f;
    cl_char c = -7;
    cl_uchar uc = 250;
    cl_short s = -32000;
    cl_ulong ul = 18000000000000000000ULL;
    CHECK(clSetKernelArg(ks, 0, sizeof outl, &outl));
    CHECK(clSetKernelArg(ks, 1, sizeof i, &i));
    CHECK(clSetKernelArg(ks, 2, sizeof u, &u));
    CHECK(clSetKernelArg(ks, 3, sizeof l, &l));
    CHECK(clSetKernelArg(ks, 4, sizeof f, &f));
    CHECK(clSetKernelArg(ks, 5, sizeof c, &c));
    CHECK(clSetKernelArg(ks, 6, sizeof uc, &uc));
    CHECK(clSetKernelArg(ks, 7, sizeof s, &s));
    CHECK(clSetKernelArg(ks, 8, sizeof ul, &ul));
    size_t gsz = N;
    CHECK(clEnqueueNDRangeKernel(q, ks, 1, NULL, &gsz, NULL, 0, NULL, NULL));
    cl_long gotl[8 * N];
    CHECK(clEnqueueReadBuffer(q, outl, CL_TRUE, 0, sizeof gotl, gotl, 0, NULL, NULL));
    for (int g = 0; g < N; g++) {
        cl_long *o = gotl + g * 8;
        EXPECT(o[0] == i, "int %lld", (long long)o[0]);
        EXPECT(o[1] == (cl_long)u, "uint %lld", (long long)o[1]);
        EXPECT(o[2] == l, "long %lld", (long long)o[2]);
        EXPECT(o[3] == 2500, "float %lld", (long long)o[3]);
        EXPECT(o[4] == c, "char %lld", (long long)o[4]);
        EXPECT(o[5] == uc, "uchar %lld", (long long)o[5]);
        EXPECT(o[6] == s, "short %lld", (long long)o[6]);
        EXPECT(o[7] == (cl_long)(ul >> 1), "ulong %lld", (long long)o[7]);
    }
    printf("scalars: int=%d uint=%u long=%lld float=%g char=%d uchar=%u short=%d ulong=%llu\n",
           i, u, (long long)l, f, c, uc, s, (unsigned long long)ul);

    /* Vectors. */
    cl_kernel kv = make_kernel(p, "vectors");
    cl_mem outv = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(cl_float) * 25 * N, NULL, &err);
    CHECK_ERR(err);
    cl_float4 f4 = {{1.5f, -2.25f, 3.0f, 1e-3f}};
    cl_int2 i2 = {{-5, 77}};
    cl_uchar16 u16;
    for (int k = 0; k < 16; k++) u16.s[k] = (cl_uchar)(k * 16 + 3);
    CHECK(clSetKernelArg(kv, 0, sizeof outv, &outv));
    CHECK(clSetKernelArg(kv, 1, sizeof f4, &f4));
    CHECK(clSetKernelArg(kv, 2, sizeof i2, &i2));
    CHECK(clSetKernelArg(kv, 3, sizeof u16, &u16));
    cl_float3 f3 = {{-1.0f, 0.5f, 7.25f}};
    CHECK(clSetKernelArg(kv, 4, sizeof f3, &f3));
    CHECK(clEnqueueNDRangeKernel(q, kv, 1, NULL, &gsz, NULL, 0, NULL, NULL));
    cl_float gotv[25 * N];
    CHECK(clEnqueueReadBuffer(q, outv, CL_TRUE, 0, sizeof gotv, gotv, 0, NULL, NULL));
    for (int g = 0; g < N; g++) {
        cl_float *o = gotv + g * 25;
        for (int k = 0; k < 4; k++) EXPECT(o[k] == f4.s[k], "float4[%d] %g", k, o[k]);
        EXPECT(o[4] == -5.0f && o[5] == 77.0f, "int2 %g %g", o[4], o[5]);
        for (int k = 0; k < 16; k++)
            EXPECT(o[6 + k] == (float)u16.s[k], "uchar16[%d] %g", k, o[6 + k]);
        for (int k = 0; k < 3; k++) EXPECT(o[22 + k] == f3.s[k], "float3[%d] %g", k, o[22 + k]);
    }
    printf("vectors: float4=(%g,%g,%g,%g) int2=(%d,%d) uchar16[15]=%u float3=(%g,%g,%g)\n",
           f4.s[0], f4.s[1], f4.s[2], f4.s[3], i2.s[0], i2.s[1], u16.s[15], f3.s[0], f3.s[1],
           f3.s[2]);

    /* A struct by value. */
    cl_kernel kst = make_kernel(p, "by_struct");
    cl_mem outs = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(cl_float) * 4 * N, NULL, &err);
    CHECK_ERR(err);
    params_t prm;
    memset(&prm, 0, sizeof prm);
    prm.a = 42;
    prm.b = -0.5f;
    prm.c = 1LL << 20;
    prm.d = 'z';
    CHECK(clSetKernelArg(kst, 0, sizeof outs, &outs));
    CHECK(clSetKernelArg(kst, 1, sizeof prm, &prm));
    CHECK(clEnqueueNDRangeKernel(q, kst, 1, NULL, &gsz, NULL, 0, NULL, NULL));
    cl_float gots[4 * N];
    CHECK(clEnqueueReadBuffer(q, outs, CL_TRUE, 0, sizeof gots, gots, 0, NULL, NULL));
    for (int g = 0; g < N; g++) {
        EXPECT(gots[g * 4 + 0] == 42.0f, "struct.a %g", gots[g * 4]);
        EXPECT(gots[g * 4 + 1] == -0.5f, "struct.b %g", gots[g * 4 + 1]);
        EXPECT(gots[g * 4 + 2] == (float)(1 << 20), "struct.c %g", gots[g * 4 + 2]);
        EXPECT(gots[g * 4 + 3] == (float)'z', "struct.d %g", gots[g * 4 + 3]);
    }
    printf("struct: a=%d b=%g c=%lld d=%c (%zu bytes)\n", prm.a, prm.b, (long long)prm.c, prm.d,
           sizeof prm);

    /* Doubles, where supported. */
    cl_device_fp_config fp64 = 0;
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL));
    if (fp64) {
        cl_program pd = build_program(ctx, dev, "args_fp64.cl", "");
        cl_kernel kd = make_kernel(pd, "doubles");
        cl_mem outd =
            clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(cl_double) * 3 * N, NULL, &err);
        CHECK_ERR(err);
        cl_double d = 3.0000000001;
        cl_double2 d2 = {{-1e300, 0.125}};
        CHECK(clSetKernelArg(kd, 0, sizeof outd, &outd));
        CHECK(clSetKernelArg(kd, 1, sizeof d, &d));
        CHECK(clSetKernelArg(kd, 2, sizeof d2, &d2));
        CHECK(clEnqueueNDRangeKernel(q, kd, 1, NULL, &gsz, NULL, 0, NULL, NULL));
        cl_double gotd[3 * N];
        CHECK(clEnqueueReadBuffer(q, outd, CL_TRUE, 0, sizeof gotd, gotd, 0, NULL, NULL));
        for (int g = 0; g < N; g++) {
            EXPECT(gotd[g * 3] == d * 2.0, "double %.17g", gotd[g * 3]);
            EXPECT(gotd[g * 3 + 1] == -1e300, "double2.x %.17g", gotd[g * 3 + 1]);
            EXPECT(gotd[g * 3 + 2] == 0.125 + g, "double2.y %.17g", gotd[g * 3 + 2]);
        }
        printf("double: d=%.17g double2=(%g,%g)\n", d, d2.s[0], d2.s[1]);
        clReleaseMemObject(outd);
        clReleaseKernel(kd);
        clReleaseProgram(pd);
    } else {
        printf("double: not supported by this device\n");
    }

    clReleaseMemObject(outl);
    clReleaseMemObject(outv);
    clReleaseMemObject(outs);
    clReleaseKernel(ks);
    clReleaseKernel(kv);
    clReleaseKernel(kst);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return finish("args");
}
