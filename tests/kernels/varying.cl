// Launches that vary in known ways (tests/apps/varying.c): `scale` over buffers of n floats,
// n in {100, 100, 200, 300, 1000}, global = round_up(n, 64), local 64, k always 2.5;
// `fill` with a NULL local size and the same value every time.

__kernel void scale(__global float *a, uint n, float k) {
    size_t g = get_global_id(0);
    if (g < n)
        a[g] = a[g] * k + OFFSET;
}

__kernel void fill(__global int *out, int v) {
    out[get_global_id(0)] = v;
}
