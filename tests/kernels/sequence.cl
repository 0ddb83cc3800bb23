// Three kernels launched in a fixed repeating order, to test the capture filters
// (--kernels, --launches, --per-kernel) and buffer modes against known sequence numbers.

__kernel void fill(__global int *out, int v) {
    size_t g = get_global_id(0);
    out[g] = v + (int)g;
}

__kernel void accumulate(__global int *acc, __global const int *in) {
    size_t g = get_global_id(0);
    acc[g] += in[g];
}

__kernel void scale(__global int *acc, int k) {
    size_t g = get_global_id(0);
    acc[g] *= k;
}
