/*
 * Two large launches as real applications make them, for `bench/fuzz.sh`'s reduced-execution
 * comparison and the reduced-fuzzing tests:
 *
 *  - `edges`: an image filter (gradient magnitude with clamp-to-edge borders and a noise
 *    threshold) over a 1920x1080 RGBA8 frame held in buffers, launched with a NULL local
 *    size as image applications usually do: 2 073 600 work-items, 8 MB in and 8 MB out;
 *  - `dense`: a neural-network layer (fully connected, bias, leaky ReLU) of 1024 outputs
 *    over a batch of 1024 inputs of 128 features, local size 64x4: 1 048 576 work-items.
 *
 * Each kernel is launched once; the program checks both results against the host.
 * Prints: "fuzz-apps edges=ok dense=ok"
 * Usage: fuzz_apps
 */
#include "common.h"
#include <math.h>

static const char *SOURCE =
    "__kernel void edges(__global const uchar4 *src, __global uchar4 *dst, int width,\n"
    "                    int height, float gain, uchar threshold) {\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    if (x >= width || y >= height)\n"
    "        return;\n"
    "    int xl = x > 0 ? x - 1 : 0, xr = x < width - 1 ? x + 1 : width - 1;\n"
    "    int yu = y > 0 ? y - 1 : 0, yd = y < height - 1 ? y + 1 : height - 1;\n"
    "    float4 gx = convert_float4(src[y * width + xr]) - convert_float4(src[y * width + xl]);\n"
    "    float4 gy = convert_float4(src[yd * width + x]) - convert_float4(src[yu * width + x]);\n"
    "    float m = gain * sqrt(gx.x * gx.x + gy.x * gy.x + gx.y * gx.y + gy.y * gy.y +\n"
    "                          gx.z * gx.z + gy.z * gy.z) / 3.0f;\n"
    "    uchar v;\n"
    "    if (m > 255.0f)\n"
    "        v = 255;\n"
    "    else if (m < (float)threshold)\n"
    "        v = 0;\n"
    "    else\n"
    "        v = (uchar)m;\n"
    "    dst[y * width + x] = (uchar4)(v, v, v, src[y * width + x].w);\n"
    "}\n"
    "__kernel void dense(__global const float *in, __global const float *w,\n"
    "                    __global const float *bias, __global float *out, int inputs,\n"
    "                    int outputs, float slope) {\n"
    "    int o = get_global_id(0), b = get_global_id(1);\n"
    "    if (o >= outputs)\n"
    "        return;\n"
    "    float acc = bias[o];\n"
    "    for (int k = 0; k < inputs; k++)\n"
    "        acc += in[b * inputs + k] * w[o * inputs + k];\n"
    "    out[b * outputs + o] = acc > 0.0f ? acc : slope * acc;\n"
    "}\n";

enum { W = 1920, H = 1080, IN = 128, OUT = 1024, BATCH = 1024 };

static int check_edges(const unsigned char *src, const unsigned char *dst, float gain,
                       unsigned char threshold) {
    for (int y = 0; y < H; y += 7)
        for (int x = 0; x < W; x += 5) {
            int xl = x > 0 ? x - 1 : 0, xr = x < W - 1 ? x + 1 : W - 1;
            int yu = y > 0 ? y - 1 : 0, yd = y < H - 1 ? y + 1 : H - 1;
            float s = 0;
            for (int c = 0; c < 3; c++) {
                float gx = (float)src[4 * (y * W + xr) + c] - (float)src[4 * (y * W + xl) + c];
                float gy = (float)src[4 * (yd * W + x) + c] - (float)src[4 * (yu * W + x) + c];
                s += gx * gx + gy * gy;
            }
            float m = gain * sqrtf(s) / 3.0f;
            int v = m > 255.0f ? 255 : m < (float)threshold ? 0 : (int)m;
            if (abs((int)dst[4 * (y * W + x)] - v) > 1)
                return 0;
        }
    return 1;
}

int main(void) {
    struct bench b;
    bench_init(&b, SOURCE);
    cl_int err;

    /* A synthetic frame: smooth gradients, a bright disc and some noise. */
    unsigned char *frame = malloc((size_t)W * H * 4), *edges = malloc((size_t)W * H * 4);
    unsigned seed = 12345;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            seed = seed * 1103515245u + 12345u;
            int disc = (x - 960) * (x - 960) + (y - 540) * (y - 540) < 300 * 300;
            unsigned char *p = frame + 4 * ((size_t)y * W + x);
            p[0] = (unsigned char)(x * 255 / W);
            p[1] = (unsigned char)(y * 255 / H);
            p[2] = (unsigned char)(disc ? 240 : (seed >> 16) & 31);
            p[3] = 255;
        }
    cl_mem src = bench_buffer(&b, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)W * H * 4, frame);
    cl_mem dst = bench_buffer(&b, CL_MEM_WRITE_ONLY, (size_t)W * H * 4, NULL);
    cl_kernel ke = bench_kernel(&b, "edges");
    int width = W, height = H;
    float gain = 1.5f;
    unsigned char threshold = 12;
    CHECK(clSetKernelArg(ke, 0, sizeof src, &src));
    CHECK(clSetKernelArg(ke, 1, sizeof dst, &dst));
    CHECK(clSetKernelArg(ke, 2, sizeof width, &width));
    CHECK(clSetKernelArg(ke, 3, sizeof height, &height));
    CHECK(clSetKernelArg(ke, 4, sizeof gain, &gain));
    CHECK(clSetKernelArg(ke, 5, sizeof threshold, &threshold));
    size_t gimg[2] = {W, H};
    CHECK(clEnqueueNDRangeKernel(b.queue, ke, 2, NULL, gimg, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(b.queue, dst, CL_TRUE, 0, (size_t)W * H * 4, edges, 0, NULL, NULL));

    float *in = malloc(sizeof(float) * BATCH * IN), *w = malloc(sizeof(float) * OUT * IN);
    float *bias = malloc(sizeof(float) * OUT), *out = malloc(sizeof(float) * BATCH * OUT);
    for (int i = 0; i < BATCH * IN; i++)
        in[i] = (float)((int)(((unsigned)i * 7919u) % 201u) - 100) / 100.0f;
    for (int i = 0; i < OUT * IN; i++)
        w[i] = (float)((int)(((unsigned)i * 104729u) % 41u) - 20) / 400.0f;
    for (int i = 0; i < OUT; i++)
        bias[i] = (float)(i % 13 - 6) / 10.0f;
    cl_mem din = bench_buffer(&b, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(float) * BATCH * IN, in);
    cl_mem dw = bench_buffer(&b, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(float) * OUT * IN, w);
    cl_mem db = bench_buffer(&b, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(float) * OUT, bias);
    cl_mem dout = bench_buffer(&b, CL_MEM_WRITE_ONLY, sizeof(float) * BATCH * OUT, NULL);
    cl_kernel kd = bench_kernel(&b, "dense");
    int inputs = IN, outputs = OUT;
    float slope = 0.01f;
    CHECK(clSetKernelArg(kd, 0, sizeof din, &din));
    CHECK(clSetKernelArg(kd, 1, sizeof dw, &dw));
    CHECK(clSetKernelArg(kd, 2, sizeof db, &db));
    CHECK(clSetKernelArg(kd, 3, sizeof dout, &dout));
    CHECK(clSetKernelArg(kd, 4, sizeof inputs, &inputs));
    CHECK(clSetKernelArg(kd, 5, sizeof outputs, &outputs));
    CHECK(clSetKernelArg(kd, 6, sizeof slope, &slope));
    size_t gd[2] = {OUT, BATCH}, ld[2] = {64, 4};
    CHECK(clEnqueueNDRangeKernel(b.queue, kd, 2, NULL, gd, ld, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(b.queue, dout, CL_TRUE, 0, sizeof(float) * BATCH * OUT, out, 0, NULL, NULL));
    int dense_ok = 1;
    for (int bi = 0; bi < BATCH && dense_ok; bi += 31)
        for (int o = 0; o < OUT; o += 17) {
            float acc = bias[o];
            for (int k = 0; k < IN; k++)
                acc += in[bi * IN + k] * w[o * IN + k];
            float want = acc > 0 ? acc : slope * acc;
            if (fabsf(out[bi * OUT + o] - want) > 1e-3f * (1 + fabsf(want))) {
                dense_ok = 0;
                break;
            }
        }
    (void)err;
    (void)now_s;
    printf("fuzz-apps edges=%s dense=%s\n", check_edges(frame, edges, gain, threshold) ? "ok" : "BAD",
           dense_ok ? "ok" : "BAD");
    return 0;
}
