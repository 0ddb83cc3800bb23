// Mutants that only an optimising compiler shows equivalent (tests/tce.rs names them by line).
__kernel void tce_equivalent(__global const int* in, __global int* out) {
    size_t g = get_global_id(0);
    int a = in[2 * g];
    int b = in[2 * g + 1];
    int hi = a > b ? a : b;
    int mag = a < 0 ? -a : a;
    int scratch = a * b;
    int sum = 0;
    for (int k = 0; k < 4; k++)
        sum += hi;
    out[g] = sum + mag;
}
