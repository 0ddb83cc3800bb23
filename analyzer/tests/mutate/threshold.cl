// 1 where the input is below the threshold, else 0. A suite without an input equal to `t`
// cannot tell `<` from `<=`.
__kernel void threshold(__global const int* in, __global int* out, int t) {
    size_t i = get_global_id(0);
    out[i] = in[i] < t ? 1 : 0;
}
