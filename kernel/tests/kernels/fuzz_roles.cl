// Argument roles derived from the code (kernel/tests/fuzz_interface.rs).
typedef struct { float w; int k; } Pair;

void put(__global int *dst, int v) { dst[0] = v; }
int get(__global const int *src) { return src[0]; }

__kernel void roles(__global const float *in, __global float *out, __global int *acc,
                    __global int *via_alias, __global int *via_helper, __global int *read_helper,
                    __global float *vec_out, __global int *counter, __constant int *table,
                    __local float *scratch, __global Pair *pairs, Pair p,
                    uchar3 u3, image2d_t img, sampler_t smp) {
    size_t i = get_global_id(0);
    out[i] = in[i] * 2.0f;
    acc[i] += 1;
    __global int *alias = via_alias + 1;
    alias[i] = 3;
    put(via_helper, 4);
    out[0] += get(read_helper) + table[2];
    vstore4((float4)(1.0f), 0, vec_out);
    atomic_inc(counter);
    scratch[0] = 1.0f;
    pairs[i].k = -5;
    if (p.w > 0.5f) out[1] = 1.0f;
}

// darktable's retouch.cl (retouch_clear_alpha): only the alpha lane of each pixel is
// written; the other lanes keep the input's values, so the buffer is read and written.
__kernel void retouch_clear_alpha(global float4 *in, int width, int height) {
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    if (x >= width || y >= height) return;
    const int idx = mad24(y, width, x);
    in[idx].w = 0.f;
}
