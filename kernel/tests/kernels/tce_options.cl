// N comes from the build options (`-D N=4`).
__kernel void tce_options(__global int* out) {
    size_t g = get_global_id(0);
    out[g] = (int)g * N;
}
