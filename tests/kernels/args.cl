// By-value arguments of every common kind: scalars, vectors and a struct.
// Each work-item writes what it received, so the host can check every byte arrived intact.

typedef struct {
    int a;
    float b;
    long c;
    char d;
} params_t;

__kernel void scalars(__global long *out, int i, uint u, long l, float f, char c, uchar uc,
                      short s, ulong ul) {
    size_t g = get_global_id(0);
    __global long *o = out + g * 8;
    o[0] = i;
    o[1] = u;
    o[2] = l;
    o[3] = (long)(f * 1000.0f);
    o[4] = c;
    o[5] = uc;
    o[6] = s;
    o[7] = (long)(ul >> 1);
}

__kernel void vectors(__global float *out, float4 f4, int2 i2, uchar16 u16, float3 f3) {
    size_t g = get_global_id(0);
    __global float *o = out + g * 25;
    vstore4(f4, 0, o);
    o[4] = (float)i2.x;
    o[5] = (float)i2.y;
    uchar u[16];
    vstore16(u16, 0, u);
    for (int k = 0; k < 16; k++)
        o[6 + k] = (float)u[k];
    vstore3(f3, 0, o + 22);
}

__kernel void by_struct(__global float *out, params_t p) {
    size_t g = get_global_id(0);
    out[g * 4 + 0] = (float)p.a;
    out[g * 4 + 1] = p.b;
    out[g * 4 + 2] = (float)p.c;
    out[g * 4 + 3] = (float)p.d;
}
