/* Fixture: a 2-D image read through a sampler created on the host and passed as a kernel
 * argument, written to a second image; the host checks every pixel. */
#include "common.h"

enum { W = 8, H = 6 };

int main(void) {
    cl_platform_id plat;
    cl_device_id dev;
    pick_device(&plat, &dev);
    cl_bool has_images = CL_FALSE;
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_IMAGE_SUPPORT, sizeof has_images, &has_images, NULL));
    if (!has_images) {
        printf("images: not supported by this device\n");
        return 0;
    }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK_ERR(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK_ERR(err);
    cl_program p = build_program(ctx, dev, "images.cl", "");
    cl_kernel k = make_kernel(p, "brighten");

    cl_image_format fmt = {CL_RGBA, CL_FLOAT};
    cl_image_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    desc.image_width = W;
    desc.image_height = H;
    float src[W * H * 4];
    for (int i = 0; i < W * H * 4; i++) src[i] = (float)(i % 17) * 0.25f;
    cl_mem in = clCreateImage(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, &fmt, &desc, src, &err);
    CHECK_ERR(err);
    cl_mem out = clCreateImage(ctx, CL_MEM_WRITE_ONLY, &fmt, &desc, NULL, &err);
    CHECK_ERR(err);
    cl_sampler s = clCreateSampler(ctx, CL_FALSE, CL_ADDRESS_CLAMP_TO_EDGE, CL_FILTER_NEAREST, &err);
    CHECK_ERR(err);
    float gain = 2.0f;
    CHECK(clSetKernelArg(k, 0, sizeof in, &in));
    CHECK(clSetKernelArg(k, 1, sizeof out, &out));
    CHECK(clSetKernelArg(k, 2, sizeof s, &s));
    CHECK(clSetKernelArg(k, 3, sizeof gain, &gain));
    size_t g[2] = {W, H};
    CHECK(clEnqueueNDRangeKernel(q, k, 2, NULL, g, NULL, 0, NULL, NULL));
    float got[W * H * 4];
    size_t origin[3] = {0, 0, 0}, region[3] = {W, H, 1};
    CHECK(clEnqueueReadImage(q, out, CL_TRUE, origin, region, 0, 0, got, 0, NULL, NULL));
    double total = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 4; c++) {
                int lx = x > 0 ? x - 1 : 0;
                float want = src[(y * W + x) * 4 + c] * gain + src[(y * W + lx) * 4 + c];
                float v = got[(y * W + x) * 4 + c];
                EXPECT(v == want, "pixel (%d,%d).%d = %g want %g", x, y, c, v, want);
                total += v;
            }
    printf("images: %dx%d RGBA float, sampler clamp-to-edge nearest, sum %g\n", W, H, total);
    clReleaseSampler(s);
    clReleaseMemObject(in);
    clReleaseMemObject(out);
    clReleaseKernel(k);
    clReleaseProgram(p);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return finish("images");
}
