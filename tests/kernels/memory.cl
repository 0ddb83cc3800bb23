// Memory kinds: __local scratch, a __constant table, buffers read and written in place,
// the same buffer bound to two arguments, and sub-buffers.

__kernel void local_sum(__global const int *in, __global int *out, __local int *scratch,
                        __local float *spare) {
    size_t l = get_local_id(0);
    size_t n = get_local_size(0);
    scratch[l] = in[get_global_id(0)];
    spare[l] = 1.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = n / 2; s > 0; s /= 2) {
        if (l < s) {
            scratch[l] += scratch[l + s];
            spare[l] += spare[l + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        out[get_group_id(0)] = scratch[0] * 1000 + (int)spare[0];
}

__kernel void constant_lookup(__constant int *table, __global const int *idx,
                              __global int *out) {
    size_t g = get_global_id(0);
    out[g] = table[idx[g]];
}

__kernel void scale_in_place(__global float *data, float k) {
    size_t g = get_global_id(0);
    data[g] = data[g] * k + 1.0f;
}

__kernel void add_pair(__global const int *a, __global const int *b, __global int *out) {
    size_t g = get_global_id(0);
    out[g] = a[g] + b[g];
}

__kernel void add_into(__global int *dst, __global const int *src) {
    size_t g = get_global_id(0);
    dst[g] = dst[g] + src[g] * 10;
}

__kernel void add_optional(__global int *data, __global const int *extra) {
    size_t g = get_global_id(0);
    data[g] += extra ? extra[g] : 100;
}
