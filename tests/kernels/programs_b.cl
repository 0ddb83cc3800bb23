// Second program: its result depends on a build option (-DSCALE=...), which capture must keep.
#ifndef SCALE
#error "SCALE must be defined by the build options"
#endif

__kernel void square_scaled(__global const int *in, __global int *out) {
    size_t g = get_global_id(0);
    out[g] = in[g] * in[g] * SCALE;
}
