// What the solver models beyond plain arithmetic: true/false, vector
// arguments and element access, casts through typedefs, convert_* / as_*, math built-ins.
typedef float real;
typedef int idx_t;
typedef float4 vec_t;
#define SCALE 2.5f

__kernel void vectors(__global vec_t *v, __global float *out, float4 w) {
    int i = get_global_id(0);
    bool on = true;
    float4 a = v[i];
    if (a.x > w.s0 && on)
        out[i] = 1.0f;
    float4 m = fmax(a, w);
    if (m.y > 8.0f && a.s3 < -1.0f)
        out[i] = 2.0f;
    if (any(a.zw > (float2)(4.0f)))
        out[i] = 3.0f;
}

__kernel void casts(__global float *out, real s, idx_t k) {
    int i = get_global_id(0);
    if ((idx_t)(s * SCALE) == 7)
        out[i] = 1.0f;
    if (convert_int_sat(s) == 2147483647 && s < 1e12f)
        out[i] = 2.0f;
}

__kernel void casts2(__global float *out, real s, idx_t k) {
    int i = get_global_id(0);
    if (convert_uchar_sat(k) == 255 && k < 1000)
        out[i] = 3.0f;
    if (convert_int_rtn(s) == -3)
        out[i] = 4.0f;
    if (as_uint(s) == 0x40490fdbu)
        out[i] = 5.0f;
    if ((uint)k > 4000000000u)
        out[i] = 6.0f;
}

__kernel void exact_math(__global float *out, float s, int k, float4 w) {
    int i = get_global_id(0);
    if (fabs(s) < 1.0f && s != 0.0f)
        out[i] = 1.0f;
    if (fmin(s, w.y) > 3.0f)
        out[i] = 2.0f;
    if (max(k, 4) == 9)
        out[i] = 3.0f;
    if (clamp(k, 0, 10) == 10 && k > 20)
        out[i] = 4.0f;
    if (mad(s, 2.0f, 1.0f) == 5.0f)
        out[i] = 5.0f;
}

__kernel void exact_math2(__global float *out, float s, int k, float4 w) {
    int i = get_global_id(0);
    if (min(abs(k), 7u) == 7u && k < 0)
        out[i] = 7.0f;
}

// sqrt is modelled exactly (fp.sqrt), but z3 4.8.12 often gives up on it within a query's
// time limit: not asserted by the tests.
__kernel void roots(__global float *out, float s) {
    int i = get_global_id(0);
    if (sqrt(s) > 3.0f)
        out[i] = 1.0f;
}

__kernel void transcendental(__global float *out, float s, float t) {
    int i = get_global_id(0);
    if (log(s) > 2.0f)
        out[i] = 1.0f;
    if (exp(t) < 0.5f)
        out[i] = 2.0f;
    if (pow(s, t) > 100.0f)
        out[i] = 3.0f;
}

// darktable's demosaic_markesteijn.cl: pixels read with vload4 from a float buffer at a
// computed index, stored with vstore4 (the corpus benchmark's first unsupported built-in).
__kernel void vector_memory(__global const float *rgb, __global float *out, int idx) {
    int i = get_global_id(0);
    const float4 pixel = (idx >= 0 && idx < 3) ? vload4(idx, rgb) : (float4)0.0f;
    vstore4(pixel, i, out);
    if (pixel.y > 2.0f && pixel.w < -1.0f)
        out[i] = 7.0f;
    if (vload2(2, rgb).x == 4.0f)
        out[i] = 1.0f;
}
