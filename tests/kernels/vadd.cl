// Plain vector addition: the smallest useful kernel.

__kernel void vadd(__global const float *a, __global const float *b, __global float *c) {
    size_t g = get_global_id(0);
    c[g] = a[g] + b[g];
}
