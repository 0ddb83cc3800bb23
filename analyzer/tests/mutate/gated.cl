// 1 where the input is positive and three times it passes the limit. A suite without a
// positive input never evaluates the right operand of `&&`, so its mutants are NO-COVERAGE.
__kernel void gated(__global const int* in, __global int* out, int limit) {
    size_t i = get_global_id(0);
    int v = in[i];
    out[i] = (v > 0 && v * 3 > limit) ? 1 : 0;
}
