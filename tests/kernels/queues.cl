// Small kernels chained through events on in-order, out-of-order and profiling queues.

__kernel void fill_seq(__global int *out, int base) {
    size_t g = get_global_id(0);
    out[g] = base + (int)g;
}

__kernel void add_arrays(__global const int *a, __global const int *b, __global int *out) {
    size_t g = get_global_id(0);
    out[g] = a[g] + b[g];
}

__kernel void negate(__global int *data) {
    size_t g = get_global_id(0);
    data[g] = -data[g];
}
