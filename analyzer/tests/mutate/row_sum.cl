// Sums each row of an n-column matrix; its loop condition replaced by true never ends.
__kernel void row_sum(__global const int* m, __global int* out, int n) {
    size_t r = get_global_id(0);
    int acc = 0;
    for (int j = 0; j < n; j++)
        acc += m[r * n + j];
    out[r] = acc;
}
