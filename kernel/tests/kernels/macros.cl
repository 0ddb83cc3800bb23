// Every kind of macro and typedef use cltrap's passes must see through.
typedef float DATA_TYPE;
typedef float4 VEC;
typedef uint COUNT;
#define ALPHA 0.5f
#define LIMIT 0x10
#define IMUL(a, b) ((a) * (b))
#define TWICE(x) IMUL(x, 2)
#define IS_BIG(v) ((v) > LIMIT)
#define KERNEL __kernel
#define GID get_global_id(0)

// Object-like literals, function-like operator macros, nested macros, typedef'd scalars and
// buffers, a kernel keyword and an id written by macros.
KERNEL void scale(__global DATA_TYPE *out, __global const DATA_TYPE *in, DATA_TYPE gain,
                  COUNT n) {
    COUNT i = GID;
    if (i >= n)
        return;
    DATA_TYPE v = in[i] + gain;
    if (v > ALPHA)
        out[i] = v;
    else
        out[i] = -v;
    if (IS_BIG(TWICE(n)))
        out[i] += 1.0f;
    if (IMUL(gain, 2.0f) < ALPHA)
        out[i] = 0.0f;
}

// `true` from OpenCL C itself, and a constant bound by a macro.
KERNEL void flags(__global int *out, int n) {
    bool on = true;
    if (n > LIMIT && on)
        out[0] = 1;
}

// A histogram prescan's reduction step: an `if` and a barrier inside a multi-line macro.
#define SUM(stride)                                                                        \
    if (lid < stride) {                                                                    \
        l[lid] += l[lid + stride];                                                         \
    }                                                                                      \
    barrier(CLK_LOCAL_MEM_FENCE);

// A loop inside a macro.
#define ACCUMULATE(n)                                                                      \
    for (uint j = 0; j < (n); j++) {                                                       \
        acc += in[j];                                                                      \
    }

__kernel void prescan(__global uint *out, __global const uint *in, __local uint *l, uint m) {
    uint lid = get_local_id(0);
    l[lid] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    SUM(2)
    SUM(1)
    uint acc = 0;
    ACCUMULATE(m)
    if (lid == 0)
        out[get_group_id(0)] = l[0] + acc;
}

// A macro undefined after its last use (darktable's basic.cl does this): copies of
// `prescan` for barrier mutants, placed at the end of the schema, could not expand it.
#undef ACCUMULATE

// Vector arguments through a typedef, element access, and a do-while loop.
__kernel void vec(__global VEC *v, __global float *out, VEC w) {
    int i = get_global_id(0);
    VEC x = v[i];
    VEC base = (VEC)(0.0f); // a vector splat: libclang's range ends before its `)`
    out[i] = base.x;
    if (x.x > w.s1 && x.w < ALPHA)
        out[i] = 1.0f;
    int k = 0;
    do {
        k++;
    } while (k < 3 && out[i] > 0.0f);
}
